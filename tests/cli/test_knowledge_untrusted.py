"""The watcher against a vault nobody here controls (SPEC §1 Trust, §8): what a synced
vault holds must never make this machine run a program, hang, or crash."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.conftest import Runner
from tests.knowledge.servers import set_sources

T0 = "2026-12-01T00:00:00.000Z"


def plant_bare_repo(folder: Path, config: str) -> None:
    """The files that make ``folder`` look like a bare git repository to git's own
    discovery (HEAD, objects/, refs/, config), as a synced commit can carry them."""
    (folder / "HEAD").write_text("ref: refs/heads/main\n")
    for sub in ("objects", "refs"):
        (folder / sub).mkdir()
        (folder / sub / ".keep").write_text("")
    (folder / "config").write_text("[core]\n\trepositoryformatversion = 0\n\tbare = true\n"
                                   + config)


@pytest.fixture
def subvault(gv: Runner, tmp_path: Path) -> Path:
    """A vault in a subfolder of a larger repository (SPEC §1 allows it)."""
    top = tmp_path / "repo"
    top.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main", str(top)], env=gv.env, check=True)
    gv.ok("init", str(top / "sub"))
    gv.cwd = top / "sub"
    return top / "sub"


def test_a_committed_bare_repo_config_cannot_allow_command_sources(
        gv: Runner, subvault: Path, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    plant_bare_repo(subvault, "[gitvault]\n\tallow-commands = true\n")
    set_sources(subvault, [{"id": "tool", "type": "command", "command": f"touch {marker}"}])
    result = gv.ok("watch", "--json", env={"GITVAULT_NOW": T0})
    assert result.json()["checked"] == []
    assert "gitvault.allow-commands" in result.json()["skipped"][0]["reason"]
    assert not marker.exists()


def test_a_committed_bare_repo_config_cannot_allow_the_ext_transport(
        gv: Runner, subvault: Path, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    plant_bare_repo(subvault, '[protocol "ext"]\n\tallow = always\n')
    set_sources(subvault, [{"id": "ref", "type": "git-ref",
                            "remote": f"ext::sh -c touch% {marker}"}])
    result = gv.ok("watch", "--json", env={"GITVAULT_NOW": T0})
    assert result.json()["failed"][0]["source"] == "ref"
    assert not marker.exists()


def test_watch_at_the_end_of_the_calendar_is_not_a_crash(gv: Runner, vault: Path) -> None:
    set_sources(vault, [{"id": "conf", "type": "file", "path": "gitvault.yaml", "tier": 3}])
    end = {"GITVAULT_NOW": "9999-12-31T23:59:59Z"}
    assert gv.ok("watch", "--json", env=end).json()["checked"][0]["status"] == "baseline"
    again = gv("watch", "--json", env=end)
    assert again.code == 0, again.err
    assert again.json()["checked"] == [] and again.json()["notDue"][0]["source"] == "conf"
    start = gv("watch", "--json", env={"GITVAULT_NOW": "0001-01-01T00:00:00Z"})
    assert start.code == 0, start.err


@pytest.mark.parametrize("source", [
    {"type": "file", "path": "gitvault\u0000.yaml"},
    {"type": "command", "command": "echo a\u0000b"},
])
def test_a_nul_byte_in_a_source_is_a_failed_check(gv: Runner, vault: Path,
                                                   source: dict[str, str]) -> None:
    set_sources(vault, [{"id": "odd", **source}])
    result = gv("watch", "--json", env={"GITVAULT_NOW": T0, "GITVAULT_ALLOW_COMMANDS": "1"})
    assert result.code == 0, result.err
    assert result.json()["failed"][0]["source"] == "odd"
    assert "null" in result.json()["failed"][0]["error"]


def test_diffs_json_lists_the_warnings_of_bad_lines(gv: Runner, vault: Path) -> None:
    """SPEC §3: lines that are not valid records are a "warnings" list in --json output."""
    bad = vault / "logs" / "knowledge" / "2026-12" / "other.jsonl"
    bad.parent.mkdir(parents=True)
    bad.write_text('{"ts": "2026-12-01T00:00:00Z", "source": "x", "type": "t", '
                   '"severity": "urgent"}\n')
    data = gv.ok("diffs", "--json").json()
    assert data["totalDiffs"] == 0
    assert len(data["warnings"]) == 1 and "other.jsonl:1: knowledge diff" in data["warnings"][0]
