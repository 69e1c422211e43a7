"""The pre-commit checks through the library, on a vault in a subfolder of a real
repository: skill folders, the archive, the quarantine and the logs as git names them."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from gitvault.core.paths import VaultLayout
from gitvault.hooks.checks import pre_commit
from tests.conftest import isolated_env

SKILL = "---\nname: {name}\ndescription: d\nmetadata:\n  version: '{version}'\n---\nbody {body}\n"


@pytest.fixture
def top(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for key, value in isolated_env(tmp_path).items():
        monkeypatch.setenv(key, value)
    root = tmp_path / "repo"
    git(tmp_path, "init", "-q", "-b", "main", str(root))
    return root


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd,
                   check=True, capture_output=True)


def put(top: Path, rel: str, text: str) -> None:
    path = top / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def check(top: Path) -> list[str]:
    git(top, "add", "-A")

    def no_gate(*_: Any) -> Any:
        raise AssertionError("no code skill here")
    return pre_commit(top, "sub", no_gate, lambda _sha: False)


def test_paths_as_git_names_them() -> None:
    assert VaultLayout.git_path("", "skills") == "skills"
    assert VaultLayout.git_path(".", "logs", "runs") == "logs/runs"
    assert VaultLayout.skill_git_dir("sub", "a") == "sub/skills/a"
    assert VaultLayout.skill_git_dir("sub", "a", archived=True) == "sub/skills/.archive/a"


def test_a_vault_in_a_subfolder(top: Path) -> None:
    put(top, "sub/skills/a/SKILL.md", SKILL.format(name="a", version=1, body=1))
    put(top, "other/skills/b/SKILL.md", "not a skill of this vault\n")
    assert check(top) == []
    git(top, "commit", "-qm", "one")
    put(top, "sub/skills/a/SKILL.md", SKILL.format(name="a", version=1, body=2))
    assert check(top) == ["sub/skills/a/SKILL.md: the skill changed but metadata.version is "
                          "still 1 (committed: 1); bump it to 2"]
    (top / "sub/skills/.archive").mkdir()
    git(top, "mv", "sub/skills/a", "sub/skills/.archive/a")
    assert check(top) == ["sub/skills/.archive/a/SKILL.md: the skill changed but "
                          "metadata.version is still 1 (committed: 1); bump it to 2"]
    put(top, "sub/skills/.archive/a/SKILL.md", SKILL.format(name="a", version=2, body=2))
    put(top, "sub/skills/.rejected/bad/SKILL.md", "refused, kept with its reasons\n")
    assert check(top) == []
    git(top, "commit", "-qm", "archive")
    git(top, "rm", "-rq", "sub/skills/.archive/a")
    assert check(top) == ["sub/skills/.archive/a: deletes skill 'a' (skills are archived, "
                          "never deleted)"]


def test_logs_of_a_vault_in_a_subfolder(top: Path) -> None:
    put(top, "sub/logs/runs/2026-01/n.jsonl", "not json\n")
    put(top, "logs/runs/2026-01/n.jsonl", "not this vault's\n")
    assert check(top) == ["sub/logs/runs/2026-01/n.jsonl:1: not a JSON record "
                          "('gitvault doctor --repair' moves it aside, kept)"]
