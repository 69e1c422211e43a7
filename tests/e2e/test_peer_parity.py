"""Differential check against agent-skill-bus 1.4.0: on well-formed runs, health,
flagged and drift equal the peer's numbers (with health.flag_below: 0.8, the peer's
threshold), for generated logs of several shapes and hand-made edge cases."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Runner
from tests.peer import NOW, generate, peer, write_runs


def vault_with(gv: Runner, tmp_path: Path, data_dir: Path) -> Path:
    root = tmp_path / "vault"
    gv.ok("init", str(root))
    text = (root / "gitvault.yaml").read_text()
    (root / "gitvault.yaml").write_text(text.replace("flag_below: 0.7", "flag_below: 0.8"))
    gv.cwd = root
    imported = gv.ok("import-bus", str(data_dir), "--json").json()
    assert imported["runs"]["bad"] == 0
    return root


def ours(gv: Runner, *args: str) -> Any:
    return gv.ok(*args, "--json", env={"GITVAULT_NOW": NOW}).json()


def assert_same(gv: Runner, data_dir: Path, days: tuple[str, ...] = ("1", "3", "7", "30")) -> None:
    for window in days:
        mine = ours(gv, "health", "--days", window)
        theirs = peer(data_dir, "health", "--days", window)
        assert mine["skills"] == theirs["skills"], f"health --days {window}"
        assert list(mine["skills"]) == list(theirs["skills"])
        assert ours(gv, "flagged", "--days", window) == peer(data_dir, "flagged", "--days", window)
    assert ours(gv, "drift") == peer(data_dir, "drift")


@pytest.mark.parametrize("count, seed, days, skills", [
    (4000, 1, 30, 50), (2500, 7, 10, 12), (1500, 3, 60, 5), (300, 11, 20, 40)])
def test_generated_logs_match_the_peer(gv: Runner, tmp_path: Path, count: int, seed: int,
                                       days: float, skills: int) -> None:
    data_dir = tmp_path / "peer"
    generate(data_dir, count, seed, days, skills)
    vault_with(gv, tmp_path, data_dir)
    assert_same(gv, data_dir)


def run(ts: str, skill: str, result: str, score: float | int) -> dict[str, Any]:
    return {"ts": ts, "agent": "a", "skill": skill, "task": "t", "result": result,
            "score": score, "notes": ""}


def test_edge_cases_match_the_peer(gv: Runner, tmp_path: Path) -> None:
    runs = [
        # ties in time: the peer's stable sort reads equal times in append order
        run("2026-11-29T10:00:00.000Z", "ties", "success", 0.9),
        run("2026-11-29T11:00:00.000Z", "ties", "fail", 0.0),
        run("2026-11-29T11:00:00.000Z", "ties", "success", 1),
        run("2026-11-29T11:00:00.000Z", "ties", "fail", 0.1),
        run("2026-11-29T09:00:00.000Z", "ties2", "fail", 0.1),
        run("2026-11-29T09:00:00.000Z", "ties2", "fail", 0.2),
        run("2026-11-29T09:00:00.000Z", "ties2", "fail", 0.3),
        # only last week: absent from this week's window
        run("2026-11-20T10:00:00.000Z", "old-only", "success", 0.9),
        # exactly on the 7-day cutoff (excluded) and one ms after (included)
        run("2026-11-23T12:00:00.000Z", "edge", "success", 0.2),
        run("2026-11-23T12:00:00.001Z", "edge", "success", 0.9),
        # halves that round up in JavaScript's toFixed: (0.8 + 0.825) / 2 = 0.8125
        run("2026-11-28T10:00:00.000Z", "round", "success", 0.8),
        run("2026-11-28T10:00:01.000Z", "round", "success", 0.825),
        run("2026-11-16T10:00:00.000Z", "drop", "success", 0.95),
        run("2026-11-17T10:00:00.000Z", "drop", "success", 0.9),
        run("2026-11-28T10:00:00.000Z", "drop", "partial", 0.5),
        # numeric names come first in the peer's key order
        run("2026-11-28T10:00:00.000Z", "42", "success", 0.7),
        run("2026-11-28T10:00:00.000Z", "7", "success", 0.75),
        # timestamps without milliseconds
        run("2026-11-28T10:00:00Z", "plain-ts", "fail", 0.3),
    ]
    data_dir = tmp_path / "peer"
    write_runs(data_dir, runs)
    vault_with(gv, tmp_path, data_dir)
    assert_same(gv, data_dir, days=("0", "1", "7", "14"))
    health = ours(gv, "health")["skills"]
    assert list(health)[:2] == ["7", "42"]
    assert health["ties"]["consecutiveFails"] == 1
    assert health["ties2"]["trend"] == "broken"
    assert health["round"]["avgScore"] == 0.813
