"""Each skill's latest failed run (its ``ts`` and ``notes``), read from the ``runs``
stream: the cached columns keep no notes, so this streams the log files once."""

from __future__ import annotations

from typing import Any

from gitvault.core.paths import VaultLayout
from gitvault.core.records import iter_file, stream_files, ts_sort_key
from gitvault.errors import InvalidInput


def last_failures(layout: VaultLayout, names: set[str] | None = None) -> dict[str, dict[str, Any]]:
    """``{skill: {"ts", "notes", "task"}}`` of each skill's latest ``fail`` run (latest by
    ``ts``, then node as readers order records); only ``names`` when given. Bad lines
    are skipped here (the run reader reports them)."""
    best: dict[str, tuple[tuple[str, str], dict[str, Any]]] = {}
    for path in stream_files(layout.stream("runs")):
        try:
            rows = list(iter_file(path))
        except (OSError, InvalidInput):  # unreadable, or a symlink swapped in
            continue
        for _, record, _ in rows:
            if record is None or record.get("result") != "fail":
                continue
            skill = record.get("skill")
            if not isinstance(skill, str) or (names is not None and skill not in names):
                continue
            key, why = ts_sort_key(record.get("ts"))
            if why is not None:
                continue
            order = (key, str(record.get("node") or ""))
            if skill not in best or order >= best[skill][0]:
                best[skill] = (order, record)
    return {skill: {"ts": record["ts"], "notes": _text(record.get("notes")),
                    "task": _text(record.get("task"))}
            for skill, (_, record) in best.items()}


def _text(value: object) -> str:
    return value if isinstance(value, str) else "" if value is None else str(value)
