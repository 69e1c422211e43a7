"""Cross-node ``start`` (SPEC §4.3): the push is the compare-and-swap.

A start this node has not pushed yet loses to a start the remote already had, of the
same PR or of a PR holding a lock on the same files: after the merge, the queue is
folded without this node's unpushed records; a start that this fold would refuse is
lost. The loser appends one record (``result: "lost_start_race"``): its PR goes back
to queued (for the same PR, the winner's running state and lock are restated), and
the start is listed in ``lostStarts``. (When the winner already finished the PR,
its result stands and the record says ``reason: "lost_start_race"`` instead.) The
record names the start it answers (``lostStart``), so a sync run again after a kill never answers twice.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gitvault.core import git, records
from gitvault.queue.rules import conflicts
from gitvault.queue.state import QueueState

LOST = "lost_start_race"


def unpushed(top: Path, files: list[Path], pushed: str | None) -> dict[str, str]:
    """Id → op of the records of ``files`` (this node's queue logs) the commit ``pushed``
    (the remote branch) does not hold: committed since, or not committed yet."""
    import json

    ids: dict[str, str] = {}
    for path in files:
        rel = path.relative_to(top).as_posix()
        old = git.show_file(top, pushed, rel) if pushed else None
        data = path.read_bytes() if path.is_file() else b""
        start = len(old) if old is not None and data.startswith(old) else 0
        for line in data[start:].splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict) and isinstance(record.get("id"), str):
                ids[record["id"]] = str(record.get("op", ""))
    return ids


def lost_starts(stream_dir: Path, node: str, mine: set[str]) -> list[tuple[dict[str, Any],
                                                                          dict[str, Any]]]:
    """(start record, record to append) for each of this node's unpushed starts that
    the remote's queue refuses."""
    scan = records.scan(stream_dir)
    ordered = scan.records
    starts = [r for r in ordered if r.get("id") in mine and r.get("op") == "start"
              and r.get("node") == node]
    answered = {r.get("lostStart") for r in ordered if r.get("lostStart")}
    starts = [s for s in starts if s["id"] not in answered]
    if not starts:
        return []
    remote = QueueState()
    for index, record in enumerate(ordered):
        if record.get("id") not in mine:
            remote.apply(record, (str(record.get("ts", "")), str(record.get("node", "")),
                                  "", index))
    lost = []
    for start in starts:
        pr = start["pr"]
        status = remote.status(pr)
        other = remote.locks.get(pr)
        files = (start.get("lock") or {}).get("files") or []
        held = {k: v for k, v in remote.locks.items() if k != pr}
        clash = conflicts(files, held) if files else []
        if status is not None and status != "queued":
            answer: dict[str, Any] = {"op": "lost-start", "pr": pr, "status": status,
                                      "lostStart": start["id"]}
            if status == "running":  # the winner's start, restated after this one
                answer["result"] = LOST
                if other is not None:
                    answer["lock"] = dict(other)
            else:  # the winner already finished it: its result stands
                answer["reason"] = LOST
        elif clash:
            answer = {"op": "lost-start", "pr": pr, "status": "queued", "result": LOST,
                      "lostStart": start["id"], "lockedBy": sorted({h for _, h in clash})}
        else:
            continue
        lost.append((start, answer))
    return lost
