"""``gitvault import-bus DIR``: bring an agent-skill-bus data folder into the vault:
its skill runs (here), its queue, locks and DAG state (queue/busimport.py) and its
knowledge diffs and state (knowledge/busimport.py).

Each imported record keeps the peer's fields and gains ``importedFrom``
(``{"file", "line"}``, the file relative to the imported folder: one machine's paths
do not belong in a shared history), so importing the same folder again, from
wherever it is, adds nothing. Lines the peer would choke on are reported, not
imported.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gitvault.core import records
from gitvault.errors import InvalidInput
from gitvault.runs import columns
from gitvault.vault.facade import Vault

RUNS_FILE = Path("skills") / "self-improving-skills" / "skill-runs.jsonl"


def imported_keys(vault: Vault, stream: str) -> set[tuple[str, int, Any]]:
    """(file, line, ts) of every record already imported into ``stream``. A file
    recorded as an absolute path (imports before the paths were relative) counts as
    the runs file of whichever folder it was; the ts tells that folder's lines apart
    from another folder's."""
    keys = set()
    for path in records.stream_files(vault.layout.stream(stream)):
        for _, record, _ in records.iter_file(path):
            origin = record.get("importedFrom") if record else None
            if record and isinstance(origin, dict):
                file = str(origin.get("file"))
                if Path(file).is_absolute() and Path(file).parts[-3:] == RUNS_FILE.parts:
                    file = RUNS_FILE.as_posix()
                keys.add((file, int(origin.get("line") or 0), record.get("ts")))
    return keys


def import_bus(vault: Vault, data_dir: Path) -> dict[str, Any]:
    """Import runs and queue state; returns counts per part and the warnings."""
    from gitvault.knowledge.busimport import KNOWLEDGE_DIR, import_bus_knowledge
    from gitvault.queue.busimport import QUEUE_DIR, import_bus_queue

    has_runs = (data_dir / RUNS_FILE).is_file()
    has_queue = (data_dir / QUEUE_DIR).is_dir()
    has_knowledge = (data_dir / KNOWLEDGE_DIR).is_dir()
    if data_dir.is_dir() and not has_runs and not has_queue and not has_knowledge:
        raise InvalidInput(f"{data_dir}: not an agent-skill-bus data folder (no {RUNS_FILE}, "
                           f"no {QUEUE_DIR}/ and no {KNOWLEDGE_DIR}/)")
    result = import_runs(vault, data_dir)
    for part, present, run in (("queue", has_queue, import_bus_queue),
                               ("knowledge", has_knowledge, import_bus_knowledge)):
        if present:
            counts = run(data_dir, vault.layout, vault.node)
            result["warnings"] += [str(w) for w in counts.pop("warnings")]
            result[part] = counts
    return result


def import_runs(vault: Vault, data_dir: Path) -> dict[str, Any]:
    """Import the peer's skill-runs.jsonl; returns counts and warnings."""
    source = (data_dir / RUNS_FILE).resolve()
    if not data_dir.is_dir():
        raise InvalidInput(f"{data_dir}: not a folder")
    result: dict[str, Any] = {"source": str(data_dir.resolve()),
                              "runs": {"imported": 0, "skipped": 0, "bad": 0}, "warnings": []}
    if not source.is_file():
        return result
    done = imported_keys(vault, "runs")
    origin = RUNS_FILE.as_posix()
    batches: dict[Path, list[dict[str, Any]]] = {}
    for line, record, problem in records.iter_file(source):
        if problem is None and record is not None:
            problem = columns.check_run(record)
        if problem is not None or record is None:
            result["warnings"].append(str(records.LineWarning(str(source), line, problem or "?")))
            result["runs"]["bad"] += 1
            continue
        if (origin, line, record["ts"]) in done:
            result["runs"]["skipped"] += 1
            continue
        ms = columns.ts_ms(record["ts"])
        assert ms is not None
        month = record["ts"][:7] if record["ts"][4:5] == "-" else "imported"
        entry = records.stamp({**record, "importedFrom": {"file": origin, "line": line}},
                              vault.node)
        path = vault.layout.stream("runs") / month / f"{vault.node}.jsonl"
        batches.setdefault(path, []).append(entry)
        result["runs"]["imported"] += 1
    for path, batch in batches.items():
        records.append_records(path, batch, root=vault.root)
    return result
