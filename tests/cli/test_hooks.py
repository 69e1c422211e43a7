"""Hooks through real ``git commit``: shims, legacy hooks, the pre-commit checks."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from tests.cli.test_code_skills import create
from tests.conftest import REPO, Runner

ID = ["-c", "user.name=t", "-c", "user.email=t@example.com"]


def commit(gv: Runner, vault: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    subprocess.run(["git", "add", "-A"], cwd=vault, env=gv.env, check=True)
    return subprocess.run(["git", *ID, "commit", "-qm", "change"], cwd=vault, text=True,
                          capture_output=True, env={**gv.env, **(env or {})})


def bump(path: Path, to: int) -> None:
    text = path.read_text()
    path.write_text(text.replace(f"version: '{to - 1}'", f"version: '{to}'"))


def test_install_keeps_a_users_hook_chains_it_and_uninstall_restores(gv: Runner, vault: Path) -> None:
    hooks = vault / ".git" / "hooks"
    mine = "#!/bin/sh\necho mine ran >> \"$(git rev-parse --git-dir)/mine.log\"\n"
    (hooks / "pre-commit").write_text(mine)
    (hooks / "pre-commit").chmod(0o755)
    assert "kept your pre-commit hook" in gv.ok("hooks", "install").out
    assert (hooks / "pre-commit.legacy").read_text() == mine
    assert "gitvault-hook-shim" in (hooks / "pre-commit").read_text()
    assert gv.ok("hooks", "install").out.strip() == "hooks already installed; nothing changed"
    (vault / "notes.txt").write_text("x")
    assert commit(gv, vault).returncode == 0
    assert (vault / ".git" / "mine.log").read_text() == "mine ran\n"
    gv.ok("hooks", "uninstall")
    assert (hooks / "pre-commit").read_text() == mine
    assert not (hooks / "post-merge").exists()


def test_a_good_code_skill_commits_and_a_bad_one_is_refused(gv: Runner, vault: Path,
                                                            tmp_path: Path) -> None:
    gv.ok("hooks", "install")
    assert create(gv, tmp_path, "slugify").code == 0  # gitvault's own commit passes the hook
    folder = vault / "skills" / "slugify"
    (folder / "skill.py").write_text("def slugify(text):\n    return text\n")
    bump(folder / "SKILL.md", 2)
    refused = commit(gv, vault)
    assert refused.returncode == 1
    assert "running the gate" in refused.stderr
    assert ("pre-commit: skills/slugify: code skill 'slugify' v2 fails the verification gate: "
            "tests: test_skill.py:3: a test failed: AssertionError") in refused.stderr
    (folder / "skill.py").write_text("def slugify(text):\n    return 'hello-world'\n")
    passed = commit(gv, vault)
    assert passed.returncode == 0, passed.stderr


def test_unverified_banned_code_is_refused_by_commit(gv: Runner, vault: Path) -> None:
    gv.ok("hooks", "install")
    folder = vault / "skills" / "evil"
    folder.mkdir()
    (folder / "SKILL.md").write_text("---\nname: evil\ndescription: e\nmetadata:\n  kind: code\n---\n")
    (folder / "skill.py").write_text("import subprocess\n\n\ndef f():\n    return 1\n")
    (folder / "test_skill.py").write_text("from skill import *\nassert f() == 1\n")
    (folder / "example.py").write_text("from skill import *\nf()\n")
    refused = commit(gv, vault)
    assert refused.returncode == 1
    assert "banned: skill.py:1: imports 'subprocess'" in refused.stderr
    assert subprocess.run(["git", "log", "--format=%s"], cwd=vault, capture_output=True,
                          text=True).stdout.count("\n") == 1


def test_evidence_is_reused_until_it_is_too_old(gv: Runner, vault: Path, tmp_path: Path) -> None:
    gv.ok("hooks", "install")
    assert create(gv, tmp_path, "slugify").code == 0
    bump(vault / "skills" / "slugify" / "SKILL.md", 2)
    fresh = commit(gv, vault)
    assert fresh.returncode == 0 and "running the gate" not in fresh.stderr
    bump(vault / "skills" / "slugify" / "SKILL.md", 3)
    later = commit(gv, vault, {"GITVAULT_NOW": "2099-01-01T00:00:00Z"})
    assert later.returncode == 0 and "running the gate" in later.stderr


def test_skill_files_are_checked(gv: Runner, vault: Path) -> None:
    gv.ok("hooks", "install")
    gv.ok("skill", "create", "alpha", "--description", "first", "--content", "one")
    path = vault / "skills" / "alpha" / "SKILL.md"
    path.write_text(path.read_text().replace("one", "two"))
    refused = commit(gv, vault)
    assert refused.returncode == 1
    assert "skills/alpha/SKILL.md: the skill changed but metadata.version is still 1 " \
           "(committed: 1); bump it to 2" in refused.stderr
    bump(path, 2)
    assert commit(gv, vault).returncode == 0
    other = vault / "skills" / "beta"
    other.mkdir()
    (other / "SKILL.md").write_text("---\nname: gamma\ndescription: g\n---\n")
    wrong = commit(gv, vault)
    assert "name 'gamma' does not match its folder 'beta'" in wrong.stderr
    (other / "SKILL.md").write_text("no front matter\n")
    assert "skills/beta/SKILL.md: invalid skill file" in commit(gv, vault).stderr
    shutil.rmtree(other)
    shutil.rmtree(vault / "skills" / "alpha")
    assert "deletes skill 'alpha'" in commit(gv, vault).stderr


def test_logs_are_append_only(gv: Runner, vault: Path) -> None:
    gv.ok("hooks", "install")
    gv.ok("record-run", "--agent", "a", "--skill", "s", "--task", "t", "--result", "success",
          "--score", "1")
    gv.ok("commit")
    [log] = list((vault / "logs" / "runs").rglob("*.jsonl"))
    committed = log.read_text()
    log.write_text(committed + '{"ts": "2026-01-01T00:00:00Z", "skill": "s"}\n')
    assert commit(gv, vault).returncode == 0  # appending is fine
    log.write_text(committed.replace('"s"', '"x"', 1) + '{"skill": "s"}\n')
    edited = commit(gv, vault)
    assert edited.returncode == 1 and ":1: edits or deletes a committed line" in edited.stderr
    log.write_text(committed + '{"ts": "2026-01-01T00:00:00Z", "skill": "s"}\nnot json\n')
    assert "not a JSON record" in commit(gv, vault).stderr
    log.unlink()
    assert "deletes committed records" in commit(gv, vault).stderr


def test_fails_closed_without_gitvault(gv: Runner, vault: Path) -> None:
    gv.ok("hooks", "install")
    hook = vault / ".git" / "hooks" / "pre-commit"
    lines = [("INSTALL_PYTHON=/nonexistent/python" if line.startswith("INSTALL_PYTHON=") else line)
             for line in hook.read_text().splitlines()]
    hook.write_text("\n".join(lines) + "\n")  # the environment that installed it is gone
    (vault / "notes.txt").write_text("x")
    refused = commit(gv, vault, {"PATH": "/usr/bin:/bin"})
    assert refused.returncode == 1
    assert "the pre-commit hook needs gitvault, which is not installed here" in refused.stderr


def test_pre_commit_framework_runs_the_same_checks(gv: Runner, vault: Path, tmp_path: Path) -> None:
    manifest = REPO / ".pre-commit-hooks.yaml"
    bindir = Path(sys.executable).parent
    valid = subprocess.run([str(bindir / "pre-commit"), "validate-manifest", str(manifest)],
                           capture_output=True, text=True)
    assert valid.returncode == 0, valid.stdout + valid.stderr
    [hook] = yaml.safe_load(manifest.read_text())
    assert hook["entry"] == "gitvault hooks run pre-commit"
    # The manifest's hook, run by the real framework from a local repo (language system:
    # the gitvault under test instead of a fresh virtualenv built from PyPI).
    local = {**hook, "language": "system"}
    (vault / ".pre-commit-config.yaml").write_text(yaml.safe_dump(
        {"repos": [{"repo": "local", "hooks": [local]}]}))
    env = {**gv.env, "PATH": f"{bindir}{os.pathsep}{gv.env['PATH']}",
           "PRE_COMMIT_HOME": str(tmp_path / "pc")}
    subprocess.run(["git", "add", "-A"], cwd=vault, env=env, check=True)
    ok = subprocess.run([str(bindir / "pre-commit"), "run"], cwd=vault, env=env,
                        capture_output=True, text=True)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    gv.ok("skill", "create", "alpha", "--description", "first", "--content", "one")
    path = vault / "skills" / "alpha" / "SKILL.md"
    path.write_text(path.read_text().replace("one", "two"))
    subprocess.run(["git", "add", "-A"], cwd=vault, env=env, check=True)
    bad = subprocess.run([str(bindir / "pre-commit"), "run"], cwd=vault, env=env,
                         capture_output=True, text=True)
    assert bad.returncode == 1
    assert "metadata.version is still 1" in bad.stdout + bad.stderr
