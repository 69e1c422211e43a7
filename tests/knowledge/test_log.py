"""The knowledge stream's fold and the improvement loop's question: which diffs touched
this skill in this window."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

from gitvault.core.paths import VaultLayout
from gitvault.knowledge import log


def write(root: Path, lines: list[dict[str, object]]) -> None:
    path = root / "logs" / "knowledge" / "2026-11" / "n.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def day(n: int) -> datetime:
    return datetime(2026, 11, n, tzinfo=timezone.utc)


def test_diffs_touching_a_skill_in_a_window(tmp_path: Path) -> None:
    write(tmp_path, [
        {"id": "d1", "ts": "2026-11-01T00:00:00Z", "source": "a", "type": "version_change",
         "detail": "1 → 2", "affectedSkills": ["api-caller"], "severity": "high"},
        {"id": "d2", "ts": "2026-11-05T00:00:00Z", "source": "b", "type": "version_change",
         "detail": "x", "affectedSkills": ["*"], "severity": "low"},
        {"id": "d3", "ts": "2026-11-06T00:00:00Z", "source": "c", "type": "deprecation",
         "detail": "y", "affectedSkills": ["other"], "severity": "medium"},
        {"id": "d4", "ts": "2026-11-09T00:00:00Z", "source": "d", "type": "version_change",
         "detail": "z", "severity": "medium"},  # no affectedSkills: every skill
        {"id": "r1", "ts": "2026-11-09T00:00:01Z", "op": "route", "diff": "d1",
         "action": "enqueued", "priority": "high", "pr": "pr-1"}])
    layout = VaultLayout(tmp_path)
    found = log.diffs_touching(layout, "api-caller")
    assert [d["id"] for d in found] == ["d1", "d2", "d4"]
    assert found[0]["processed"] is True and found[1]["processed"] is False
    assert found[2]["affectedSkills"] == ["*"]
    assert [d["id"] for d in log.diffs_touching(layout, "api-caller", day(2), day(8))] == ["d2"]
    assert [d["id"] for d in log.diffs_touching(layout, "other", since=day(6))] == ["d3", "d4"]
    assert log.diffs_touching(layout, "api-caller", until=day(1)) == \
        [found[0]]  # the window's ends are included


def test_the_fold_keeps_the_last_check_and_the_last_good_observation(tmp_path: Path) -> None:
    write(tmp_path, [
        {"id": "c1", "ts": "2026-11-01T00:00:00Z", "op": "check", "source": "s", "ok": True,
         "value": "1.0.0"},
        {"id": "c2", "ts": "2026-11-02T00:00:00Z", "op": "check", "source": "s", "ok": False,
         "error": "HTTP 500"},
        {"id": "x", "ts": "2026-11-02T00:00:00Z", "op": "frobnicate"}])
    state = log.load(VaultLayout(tmp_path))
    assert state.last_check["s"]["id"] == "c2" and state.last_seen["s"]["id"] == "c1"
    assert [w.reason for w in state.warnings] == ["unknown op 'frobnicate'"]
    assert state.stats() == {"sources": 1, "totalDiffs": 0, "unprocessed": 0,
                             "bySeverity": {"critical": 0, "high": 0, "medium": 0, "low": 0}}
