"""Each skill's latest failed run and its notes, from every node's run files."""

from __future__ import annotations

import json
from pathlib import Path

from gitvault.core.paths import VaultLayout
from gitvault.runs.notes import last_failures


def test_the_latest_failure_wins_across_nodes_and_bad_lines_are_skipped(tmp_path: Path) -> None:
    folder = tmp_path / "logs" / "runs" / "2026-11"
    folder.mkdir(parents=True)
    rows = {"a.jsonl": [
        {"ts": "2026-11-02T00:00:00Z", "skill": "s", "result": "fail", "notes": "newest"},
        {"ts": "2026-11-03T00:00:00Z", "skill": "s", "result": "success", "notes": "not a fail"},
        {"ts": "2026-11-01T00:00:00Z", "skill": "t", "result": "fail", "notes": 7},
    ], "b.jsonl": [
        {"ts": "2026-11-01T00:00:00Z", "skill": "s", "result": "fail", "notes": "older"},
        {"ts": "not a time", "skill": "s", "result": "fail", "notes": "bad ts"},
        {"ts": "2026-11-09T00:00:00Z", "skill": ["x"], "result": "fail"},
    ]}
    for name, records in rows.items():
        (folder / name).write_text("".join(json.dumps(r) + "\n" for r in records)
                                   + "{torn" + ("\n" if name == "a.jsonl" else ""))
    found = last_failures(VaultLayout(tmp_path))
    assert found == {"s": {"ts": "2026-11-02T00:00:00Z", "notes": "newest", "task": ""},
                     "t": {"ts": "2026-11-01T00:00:00Z", "notes": "7", "task": ""}}
    assert last_failures(VaultLayout(tmp_path), {"t"}) == {"t": found["t"]}
    assert last_failures(VaultLayout(tmp_path / "none")) == {}
