"""A vault may be a subfolder of a larger repository (SPEC §1): the hooks find every
vault of the repository and never refuse a commit that touches none of them."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.conftest import Runner

IDENTITY = ["-c", "user.name=t", "-c", "user.email=t@t"]


def git(gv: Runner, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *IDENTITY, *args], cwd=cwd, env=gv.env, capture_output=True,
                          text=True)


def mono(gv: Runner, tmp_path: Path, *vaults: str) -> Path:
    top = tmp_path / "mono"
    subprocess.run(["git", "init", "-q", "-b", "main", str(top)], check=True, env=gv.env)
    for sub in vaults:
        gv.ok("init", str(top / sub))
    return top


def test_a_commit_outside_the_vault_goes_through(gv: Runner, tmp_path: Path) -> None:
    top = mono(gv, tmp_path, "sub")
    (top / "README.md").write_text("hello\n")
    git(gv, top, "add", "README.md")
    done = git(gv, top, "commit", "-q", "-m", "readme")
    assert done.returncode == 0, done.stderr
    assert "README.md" in git(gv, top, "show", "--name-only", "--format=").stdout
    switched = git(gv, top, "checkout", "-q", "-b", "topic")  # post-checkout runs too
    assert switched.returncode == 0, switched.stderr


def test_every_vault_of_the_repository_is_checked(gv: Runner, tmp_path: Path) -> None:
    top = mono(gv, tmp_path, "one", "deep/two")
    for sub in ("one", "deep/two"):
        gv.ok("skill", "create", "fine", "--description", "A fine skill.", cwd=top / sub)
    bad = top / "deep" / "two" / "skills" / "bad"
    bad.mkdir()
    (bad / "SKILL.md").write_text("---\nname: other\ndescription: x\n---\nbody\n")
    (top / "notes.txt").write_text("n\n")
    git(gv, top, "add", "-A")
    refused = git(gv, top, "commit", "-q", "-m", "all")
    assert refused.returncode == 1
    assert "gitvault: error: pre-commit: deep/two/skills/bad/SKILL.md: name 'other' does " \
           "not match its folder 'bad'" in refused.stderr
    git(gv, top, "reset", "-q", "--", "deep/two/skills/bad")
    done = git(gv, top, "commit", "-q", "-m", "notes")
    assert done.returncode == 0, done.stderr


def test_a_log_edit_in_a_subfolder_vault_is_refused(gv: Runner, tmp_path: Path) -> None:
    top = mono(gv, tmp_path, "sub")
    gv.ok("record-run", "--skill", "s1", cwd=top / "sub")
    gv.ok("commit", cwd=top / "sub")
    log = next((top / "sub" / "logs" / "runs").rglob("*.jsonl"))
    log.write_text(log.read_text().replace('"success"', '"fail"'))
    git(gv, top, "add", "-A")
    refused = git(gv, top, "commit", "-q", "-m", "edit")
    assert refused.returncode == 1
    assert "edits or deletes a committed line" in refused.stderr


def test_a_subfolder_vault_in_a_linked_worktree(gv: Runner, tmp_path: Path) -> None:
    top = mono(gv, tmp_path)
    git(gv, top, "commit", "-q", "--allow-empty", "-m", "start")
    linked = tmp_path / "linked"
    assert git(gv, top, "worktree", "add", "-q", str(linked), "-b", "side").returncode == 0
    gv.ok("init", str(linked / "sub"))
    status = gv.ok("status", "--json", cwd=linked / "sub").json()
    assert status["changes"] == []
    gv.ok("skill", "create", "fine", "--description", "Fine.", cwd=linked / "sub")
    assert "sub/skills/fine/SKILL.md" in git(gv, linked, "show", "--name-only",
                                             "--format=").stdout
    bad = linked / "sub" / "skills" / "bad"
    bad.mkdir()
    (bad / "SKILL.md").write_text("---\nname: other\ndescription: x\n---\nbody\n")
    git(gv, linked, "add", "-A")
    refused = git(gv, linked, "commit", "-q", "-m", "bad")
    assert refused.returncode == 1
    assert "sub/skills/bad/SKILL.md: name 'other' does not match its folder 'bad'" \
        in refused.stderr
