"""Import agent-skill-bus's queue, locks and DAG state (SPEC §4.3, ``import-bus``).

The peer keeps them in ``<data-dir>/skills/prompt-request-bus/``:
``prompt-request-queue.jsonl`` (one PR per line, rewritten in place),
``active-locks.jsonl`` and ``dag-state.jsonl``. Each PR keeps its id and fields; each
imported record carries ``importedFrom: {file, line}``. A PR already in the vault, a
lock or a DAG snapshot imported before is skipped, so importing twice adds nothing.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from gitvault.core import clock, records
from gitvault.core.config import DEFAULT_LOCK_TTL_S
from gitvault.core.paths import VaultLayout
from gitvault.errors import InvalidInput
from gitvault.queue.log import QueueLog
from gitvault.queue.state import check_event, check_pr, import_key

QUEUE_DIR = "skills/prompt-request-bus"
FILES = {"queue": "prompt-request-queue.jsonl", "locks": "active-locks.jsonl",
         "dags": "dag-state.jsonl"}


def import_bus_queue(peer_data_dir: str | os.PathLike[str], layout: VaultLayout, node: str,
                     *, queue_dir: str = QUEUE_DIR) -> dict[str, Any]:
    """Import the peer's queue folder (``<peer_data_dir>/<queue_dir>``) into the vault's
    ``queue`` stream as ``node``, in one write under the queue lock.

    Returns ``{"prs", "locks", "dags"}`` (records added), ``"skipped"`` (already
    there) and ``"warnings"`` (:class:`gitvault.core.records.LineWarning` for lines that are
    not valid; they are left out). A missing folder or file imports nothing.
    """
    folder = Path(peer_data_dir) / queue_dir
    log = QueueLog(layout)
    added = {"prs": 0, "locks": 0, "dags": 0}
    skipped = 0
    warnings: list[records.LineWarning] = []
    with log.locked():
        state = log.load()
        known = set(state.imported)
        new: list[dict[str, Any]] = []
        for kind, name in FILES.items():
            path = folder / name
            rel = f"{queue_dir}/{name}"
            for number, raw, problem in _lines(path):
                if raw is None:
                    warnings.append(records.LineWarning(str(path), number, problem or "invalid"))
                    continue
                origin = {"file": rel, "line": number}
                record, why = _convert(kind, raw, origin)
                if record is None:
                    warnings.append(records.LineWarning(str(path), number, why or "invalid"))
                    continue
                if kind == "queue":
                    fresh = state.status(record["id"]) is None and \
                        all(r.get("id") != record["id"] for r in new)
                else:
                    fresh = import_key(record) not in known
                    known.add(import_key(record))
                if fresh:
                    new.append(record)
                    added[kind if kind != "queue" else "prs"] += 1
                else:
                    skipped += 1
        log.append(state, node, new)
        log.save(state)
    return {**added, "skipped": skipped, "warnings": warnings}


def _lines(path: Path) -> list[tuple[int, dict[str, Any] | None, str | None]]:
    if not path.is_file():
        return []
    return list(records.iter_file(path))


def _valid_ts(value: Any) -> str:
    """``value`` if it is a timestamp, else now (the record still gets imported)."""
    if isinstance(value, str):
        try:
            clock.ts_key(value)
            return value
        except InvalidInput:
            pass
    return records.now_iso()


def _convert(kind: str, raw: dict[str, Any], origin: dict[str, Any]
             ) -> tuple[dict[str, Any] | None, str | None]:
    """The vault record for one peer line, or (None, why it cannot be imported)."""
    if kind == "queue":
        if "op" in raw:
            return None, "not a prompt request (has 'op')"
        why = check_pr(raw)
        if why is None and not isinstance(raw.get("ts"), str):
            why = f"prompt request {raw.get('id')}: missing ts"
        if why is None:
            try:
                clock.ts_key(raw["ts"])
            except InvalidInput:
                why = f"prompt request {raw['id']}: bad ts {raw['ts']!r}"
        record = {**raw, "importedFrom": origin}
        record.pop("node", None)
        return (record, None) if why is None else (None, why)
    if kind == "locks":
        lock = {"agent": raw.get("agent", "default"), "files": raw.get("files"),
                "lockedAt": raw.get("lockedAt"), "ttl": raw.get("ttl", DEFAULT_LOCK_TTL_S)}
        record = {"ts": _valid_ts(raw.get("lockedAt")), "op": "lock", "pr": raw.get("prId"),
                  "lock": lock, "importedFrom": origin}
    else:
        record = {"ts": _valid_ts(raw.get("updated")), "op": "dag", "dagId": raw.get("dagId"),
                  "state": raw, "importedFrom": origin}
    why = check_event(record)
    return (record, None) if why is None else (None, why)
