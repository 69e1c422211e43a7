"""``gitvault init``: a complete vault from nothing, idempotent, inside existing repos."""

from __future__ import annotations

from pathlib import Path

import yaml

from gitvault.core import config
from tests.conftest import Runner, snapshot


def test_init_creates_repo_config_layout_and_first_commit(gv: Runner, tmp_path: Path) -> None:
    root = tmp_path / "fresh"
    result = gv.ok("init", str(root), "--json").json()
    assert result["vault"] == str(root)
    assert result["created"] == ["git repository", "gitvault.yaml", ".gitattributes", "skills/",
                                 "logs/", "first commit", "hooks: installed pre-commit",
                                 "hooks: installed post-merge", "hooks: installed post-checkout"]
    for hook in ("pre-commit", "post-merge", "post-checkout"):
        assert "gitvault-hook-shim" in (root / ".git" / "hooks" / hook).read_text()
    assert (root / ".git").is_dir()
    written = yaml.safe_load((root / "gitvault.yaml").read_text())
    assert written == config.defaults().as_dict()
    text = (root / "gitvault.yaml").read_text()
    assert text.count("#") > len(config.SCHEMA)  # every default commented
    assert (root / ".gitattributes").read_text().splitlines() == [
        "logs/**/*.jsonl merge=union", "skills/**/SKILL.md text eol=lf"]
    assert (root / "skills").is_dir() and (root / "logs").is_dir()
    assert gv.git("log", "--format=%s", cwd=root).splitlines() == ["gitvault: init vault"]
    assert gv.git("status", "--porcelain", cwd=root) == ""
    assert "Gitvault-Op: init" in gv.git("log", "-1", "--format=%B", cwd=root)


def test_init_twice_changes_nothing(gv: Runner, tmp_path: Path) -> None:
    root = tmp_path / "again"
    gv.ok("init", str(root))
    before = snapshot(root)
    result = gv.ok("init", str(root))
    assert "nothing changed" in result.out
    assert gv.ok("init", str(root), "--json").json()["created"] == []
    assert snapshot(root) == before


def test_init_in_current_folder_and_inside_an_existing_repo(gv: Runner, tmp_path: Path) -> None:
    repo = tmp_path / "project"
    repo.mkdir()
    gv.git("init", "-q", "-b", "main", cwd=repo)
    (repo / "code.py").write_text("print('mine')\n")
    gv.git("add", "code.py", cwd=repo)
    sub = repo / "memory"
    sub.mkdir()
    result = gv.ok("init", "--json", cwd=sub).json()
    assert "git repository" not in result["created"]
    assert not (sub / ".git").exists()
    # the user's staged file is not swept into gitvault's commit
    assert gv.git("show", "--stat", "--format=", "HEAD", cwd=repo).count("code.py") == 0
    assert gv.git("status", "--porcelain", cwd=repo).strip() == "A  code.py"
    gv.ok("skill", "create", "sub-skill", "--description", "d", cwd=sub)
    assert (sub / "skills/sub-skill/SKILL.md").is_file()
    log = gv.ok("skill", "log", "sub-skill", "--json", cwd=repo / "memory" / "skills").json()
    assert [v["version"] for v in log["versions"]] == [1]


def test_init_refuses_a_file_and_an_invalid_existing_config(gv: Runner, tmp_path: Path) -> None:
    target = tmp_path / "afile"
    target.write_text("x")
    result = gv("init", str(target))
    assert result.code == 2 and len(result.err_lines) == 1
    root = tmp_path / "badcfg"
    gv.ok("init", str(root))
    (root / "gitvault.yaml").write_text("health:\n  flag_below: high\n")
    result = gv("init", str(root))
    assert result.code == 2 and "health.flag_below" in result.err


def test_remote_is_added(gv: Runner, tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    gv.git("init", "-q", "--bare", str(remote))
    root = tmp_path / "withremote"
    gv.ok("init", str(root), "--remote", str(remote))
    assert gv.git("remote", "get-url", "origin", cwd=root).strip() == str(remote)
    assert gv.ok("init", str(root), "--remote", str(remote), "--json").json()["created"] == []


def test_init_in_a_folder_the_enclosing_repo_ignores(gv: Runner, tmp_path: Path) -> None:
    repo = tmp_path / "project"
    repo.mkdir()
    gv.git("init", "-q", "-b", "main", cwd=repo)
    (repo / ".gitignore").write_text("scratch/\n")
    result = gv.ok("init", str(repo / "scratch" / "vault"), "--json").json()
    assert "git repository" in result["created"]
    assert (repo / "scratch" / "vault" / ".git").is_dir()


def test_a_fresh_clone_gets_the_hooks_on_its_first_write(gv: Runner, tmp_path: Path) -> None:
    root = tmp_path / "origin"
    gv.ok("init", str(root))
    clone = tmp_path / "clone"
    gv.git("clone", "-q", str(root), str(clone))
    assert not (clone / ".git" / "hooks" / "pre-commit").exists()
    listed = gv.ok("skill", "list", cwd=clone)  # reading installs nothing
    assert "installed" not in listed.err
    created = gv.ok("skill", "create", "first", "--description", "d", cwd=clone)
    assert "gitvault: installed the gitvault git hooks" in created.err
    assert "gitvault-hook-shim" in (clone / ".git" / "hooks" / "pre-commit").read_text()
    again = gv.ok("skill", "create", "second", "--description", "d", cwd=clone)
    assert "installed" not in again.err
