"""Import agent-skill-bus's knowledge watcher files (``import-bus``).

The peer keeps them in ``<data-dir>/skills/knowledge-watcher/``: ``knowledge-diffs.jsonl``
(one diff per line, ``processed`` rewritten in place) and ``knowledge-state.json``
(``{lastCheck, sources: {id: {...state, checkedAt}}}``). Each diff becomes a diff
record (its id kept when it has one; ``processed: true`` stays processed), each
source's state a check record; every imported record carries ``importedFrom``, so
importing twice adds nothing.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from gitvault.core import clock, records
from gitvault.core.paths import VaultLayout
from gitvault.errors import InvalidInput
from gitvault.knowledge import log
from gitvault.knowledge.model import is_version

KNOWLEDGE_DIR = "skills/knowledge-watcher"
DIFFS_FILE = "knowledge-diffs.jsonl"
STATE_FILE = "knowledge-state.json"


def import_bus_knowledge(peer_data_dir: str | os.PathLike[str], layout: VaultLayout,
                         node: str) -> dict[str, Any]:
    """Import the peer's knowledge folder as ``node``. Returns ``{"diffs", "sources"}``
    (records added), ``"skipped"`` (already imported) and ``"warnings"``
    (:class:`gitvault.core.records.LineWarning`: lines left out)."""
    folder = Path(peer_data_dir) / KNOWLEDGE_DIR
    known_lines, known_states, known_ids = _imported(layout)
    warnings: list[records.LineWarning] = []
    new: list[dict[str, Any]] = []
    added = {"diffs": 0, "sources": 0}
    skipped = 0
    path, rel = folder / DIFFS_FILE, f"{KNOWLEDGE_DIR}/{DIFFS_FILE}"
    for number, raw, problem in records.iter_file(path) if path.is_file() else []:
        why = problem if raw is None else log.check_record(raw) or records.ts_sort_key(
            raw.get("ts"))[1]
        if raw is None or why is not None:
            warnings.append(records.LineWarning(str(path), number, why or "invalid"))
            continue
        if (rel, number) in known_lines or raw.get("id") in known_ids:
            skipped += 1
            continue
        record = {k: v for k, v in raw.items() if k != "node"}
        new.append({**record, "importedFrom": {"file": rel, "line": number}})
        added["diffs"] += 1
    for record in _state_checks(folder / STATE_FILE, f"{KNOWLEDGE_DIR}/{STATE_FILE}", warnings):
        origin = record["importedFrom"]
        if (origin["file"], origin["source"], clock.ts_key(record["ts"])) in known_states:
            skipped += 1
            continue
        new.append(record)
        added["sources"] += 1
    batches: dict[Path, list[dict[str, Any]]] = {}
    for record in new:
        stamped = records.stamp(record, node)
        month = stamped["ts"][:7] if stamped["ts"][4:5] == "-" else "imported"
        batches.setdefault(layout.stream(log.STREAM) / month / f"{node}.jsonl",
                           []).append(stamped)
    for target, batch in batches.items():
        records.append_records(target, batch, root=layout.root)
    return {**added, "skipped": skipped, "warnings": warnings}


def _imported(layout: VaultLayout) -> tuple[set[tuple[str, int]], set[tuple[str, str, str]],
                                            set[str]]:
    lines, states, ids = set(), set(), set()
    for path in records.stream_files(layout.stream(log.STREAM)):
        for _, record, _ in records.iter_file(path):
            if record is None:
                continue
            if isinstance(record.get("id"), str):
                ids.add(record["id"])
            origin = record.get("importedFrom")
            if not isinstance(origin, dict):
                continue
            if "source" in origin:
                try:
                    states.add((str(origin.get("file")), str(origin["source"]),
                                clock.ts_key(str(record.get("ts")))))
                except InvalidInput:
                    pass
            else:
                lines.add((str(origin.get("file")), int(origin.get("line") or 0)))
    return lines, states, ids


def _state_checks(path: Path, rel: str, warnings: list[records.LineWarning]
                  ) -> list[dict[str, Any]]:
    """A check record for each source of the peer's state file."""
    if not path.is_file():
        return []
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError) as exc:
        warnings.append(records.LineWarning(str(path), 1, f"invalid JSON: {exc}"))
        return []
    sources = data.get("sources") if isinstance(data, dict) else None
    if not isinstance(sources, dict):
        warnings.append(records.LineWarning(str(path), 1, "no 'sources' mapping"))
        return []
    checks = []
    for source_id, entry in sources.items():
        if not isinstance(entry, dict):
            warnings.append(records.LineWarning(str(path), 1, f"source {source_id!r}: not a mapping"))
            continue
        ts = next((t for t in (entry.get("checkedAt"), data.get("lastCheck"))
                   if records.ts_sort_key(t)[1] is None), None) or records.now_iso()
        seen = {k: v for k, v in entry.items() if k != "checkedAt"}
        version = seen.get("version")
        value = version if isinstance(version, str) and version else \
            json.dumps(seen, sort_keys=True, ensure_ascii=False)
        checks.append({"ts": ts, "op": "check", "source": str(source_id), "sourceType": None,
                       "ok": True, "value": value,
                       "version": value if is_version(value) else None, "shown": value[:60],
                       "baseline": False, "state": seen,
                       "importedFrom": {"file": rel, "source": str(source_id)}})
    return checks
