"""A user's own hooks: a chained ``pre-commit.legacy`` runs on gitvault's own commits
too, and a ``core.hooksPath`` folder is never written into (SPEC §6)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.conftest import Runner, snapshot


def test_gitvault_s_own_commits_still_run_a_chained_legacy_hook(
        gv: Runner, tmp_path: Path) -> None:
    root = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True, env=gv.env)
    hooks = root / ".git" / "hooks"
    hooks.mkdir(exist_ok=True)
    marker = tmp_path / "ran"
    (hooks / "pre-commit").write_text(f"#!/bin/sh\necho ran >> {marker}\n")
    (hooks / "pre-commit").chmod(0o755)
    gv.ok("init", str(root))  # keeps the user's hook as pre-commit.legacy
    assert (hooks / "pre-commit.legacy").exists()
    runs = marker.read_text().count("ran") if marker.exists() else 0
    gv.ok("skill", "create", "chained", "--description", "Chained.", cwd=root)
    assert marker.read_text().count("ran") == runs + 1  # the skill commit ran it
    # and a refusal of the user's hook is respected: nothing is committed
    (hooks / "pre-commit.legacy").write_text("#!/bin/sh\necho 'no commits today' >&2\nexit 1\n")
    before = snapshot(root)
    refused = gv("skill", "patch", "chained", "--content", "new body", cwd=root)
    assert refused.code != 0
    assert "no commits today" in refused.err
    assert snapshot(root) == before


def test_hooks_install_refuses_a_core_hooks_path_folder(gv: Runner, vault: Path) -> None:
    shared = vault.parent / "shared-hooks"
    shared.mkdir()
    gv.git("config", "core.hooksPath", str(shared))
    result = gv("hooks", "install")
    assert result.code == 2
    assert result.err_lines == [
        f"gitvault: error: core.hooksPath is set ({shared}), so git runs the hooks of that "
        "folder, which gitvault leaves alone: either run 'git config --unset-all "
        "core.hooksPath' and then 'gitvault hooks install', or have your hook manager call "
        "'gitvault hooks run pre-commit' (and post-merge, post-checkout)"]
    assert list(shared.iterdir()) == []
    # commands that write still work, and say why the hooks are missing
    created = gv.ok("skill", "create", "x", "--description", "X.")
    assert "core.hooksPath is set" in created.err
    assert list(shared.iterdir()) == []


def test_init_with_core_hooks_path_completes_and_says_why(gv: Runner, tmp_path: Path) -> None:
    root = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True, env=gv.env)
    shared = tmp_path / "shared-hooks"
    shared.mkdir()
    subprocess.run(["git", "config", "core.hooksPath", str(shared)], cwd=root, check=True,
                   env=gv.env)
    result = gv.ok("init", str(root), "--json")
    assert "first commit" in result.json()["created"]
    assert any("not installed: core.hooksPath is set" in line
               for line in result.json()["created"])
    assert list(shared.iterdir()) == []
