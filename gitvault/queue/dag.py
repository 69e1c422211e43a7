"""DAG files for ``dag-create`` (SPEC §4; seed §6): parsing, checks, cycles.

A DAG file (YAML or JSON) is ``{dagId: ID, tasks: [{key, task, agent?, priority?,
source?, context?, files?, skills?, deadline?, dependsOn?: [key, ...]}]}``. Everything
wrong with it is an InvalidInput naming the file, the task and the field; a cycle
(found by ``graphlib``) is named by its keys (``a -> b -> a``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from graphlib import CycleError, TopologicalSorter
from pathlib import Path
from typing import Any

from gitvault.core.files import decode_text, read_bytes
from gitvault.errors import ConfigError, InvalidInput
from gitvault.queue.rules import normalize_request

TASK_KEYS = ("key", "task", "agent", "priority", "source", "context", "files", "skills",
             "deadline", "dependsOn")
_RENAMED = {"files": "affectedFiles", "skills": "affectedSkills"}


@dataclass
class DagSpec:
    """A checked DAG file: each task's PR fields, its key, and the keys it waits for."""

    dag_id: str
    source: str = "DAG file"
    keys: list[str] = field(default_factory=list)
    tasks: list[dict[str, Any]] = field(default_factory=list)
    depends: list[list[str]] = field(default_factory=list)


def read_dag_file(path: Path) -> DagSpec:
    """Read and check a DAG file (no queue state needed)."""
    return parse_dag(read_bytes(path, "DAG file"), str(path))


def parse_dag(data: bytes, source: str) -> DagSpec:
    """Parse DAG file bytes: JSON when the file is ``.json`` or starts with ``{``, else YAML."""
    text = decode_text(data, source)
    if source.endswith(".json") or text.lstrip().startswith("{"):
        try:
            raw = json.loads(text)
        except ValueError as exc:
            raise InvalidInput(f"{source}: invalid JSON: {exc}") from None
    else:
        from gitvault.core.config import parse_yaml

        try:
            raw = parse_yaml(data, source)
        except ConfigError as exc:
            raise InvalidInput(str(exc)) from None
    return check_dag(raw, source)


def _text(value: Any, what: str) -> str:
    """``value`` stripped, if it is non-empty text; else an InvalidInput naming ``what``."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"{what} must be non-empty text")
    return value.strip()


def check_dag(raw: Any, source: str) -> DagSpec:
    if not isinstance(raw, dict):
        raise InvalidInput(f"{source}: a DAG file is a mapping with dagId and tasks")
    unknown = sorted(str(k) for k in raw if k not in ("dagId", "tasks"))
    if unknown:
        raise InvalidInput(f"{source}: unknown key {unknown[0]!r} (a DAG file has dagId and tasks)")
    dag_id = _text(raw.get("dagId"), f"{source}: dagId")
    tasks = raw.get("tasks")
    if not isinstance(tasks, list) or not tasks:
        raise InvalidInput(f"{source}: tasks must be a non-empty list")
    spec = DagSpec(dag_id, source)
    for index, task in enumerate(tasks):
        where = f"{source}: tasks[{index}]"
        if not isinstance(task, dict):
            raise InvalidInput(f"{where} must be a mapping")
        key = _text(task.get("key"), f"{where}: key")
        where = f"{where} (key {key!r})"
        if key in spec.keys:
            raise InvalidInput(f"{where}: the key is used twice")
        extra = sorted(str(k) for k in task if k not in TASK_KEYS)
        if extra:
            raise InvalidInput(f"{where}: unknown key {extra[0]!r} (a task has {', '.join(TASK_KEYS)})")
        depends = task.get("dependsOn") or []
        if not isinstance(depends, list) or not all(isinstance(d, str) and d.strip() for d in depends):
            raise InvalidInput(f"{where}: dependsOn must be a list of task keys")
        fields = {_RENAMED.get(str(k), str(k)): v for k, v in task.items()
                  if k not in ("key", "dependsOn")}
        fields.setdefault("source", "dag")
        fields["dagId"] = spec.dag_id
        try:
            request = normalize_request(fields)
        except InvalidInput as exc:
            raise InvalidInput(f"{where}: {exc}") from None
        spec.keys.append(key)
        spec.tasks.append(request)
        spec.depends.append([d.strip() for d in depends])
    cycle = find_cycle(dict(zip(spec.keys, spec.depends, strict=True)))
    if cycle:
        raise InvalidInput(f"{source}: dependency cycle: {' -> '.join(cycle)}")
    return spec


def find_cycle(graph: dict[str, list[str]]) -> list[str] | None:
    """A cycle of ``graph`` (node -> the nodes it depends on) as ``[a, b, ..., a]`` (a
    depends on b), or None. Edges to nodes outside the graph are ignored."""
    inside = {node: [d for d in depends if d in graph] for node, depends in graph.items()}
    try:
        TopologicalSorter(inside).prepare()
    except CycleError as exc:
        return list(reversed(exc.args[1]))  # graphlib names it from dependency to dependent
    return None
