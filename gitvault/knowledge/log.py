"""The ``knowledge`` stream and its fold (SPEC §3, §8).

Three kinds of record, all appended, none rewritten:
- a check ``{op: "check", source, sourceType, tier, ok, value, version, shown, error,
  baseline}``: one observation (or failure) of a source;
- a diff, in the seed's shape ``{id, ts, source, type, detail, affectedSkills,
  severity, processed}`` (no ``op``; other programs may append their own);
- a route mark ``{op: "route", diff, action, priority, pr}``: the diff was routed
  (``enqueued``, ``duplicate`` or ``logged``), so it is processed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from gitvault.core import clock, records
from gitvault.core.config import SEVERITIES
from gitvault.core.paths import VaultLayout

STREAM = "knowledge"
DIFF_KEYS = ("id", "ts", "source", "type", "detail", "affectedSkills", "severity", "processed")


def check_record(record: dict[str, Any]) -> str | None:
    """Why a line of the knowledge stream is not a valid record (None when it is)."""
    op = record.get("op")
    if op == "check":
        return None if isinstance(record.get("source"), str) else "check without a source"
    if op == "route":
        return None if isinstance(record.get("diff"), str) else "route mark without a diff id"
    if op not in (None, "diff"):
        return f"unknown op {op!r}"
    for key in ("source", "type"):
        if not isinstance(record.get(key), str) or not record[key]:
            return f"knowledge diff without {key!r}"
    if record.get("severity", "medium") not in SEVERITIES:
        return f"knowledge diff with severity {record.get('severity')!r}"
    skills = record.get("affectedSkills", ["*"])
    if not isinstance(skills, list) or not all(isinstance(s, str) for s in skills):
        return "knowledge diff whose affectedSkills is not a list of names"
    return None


@dataclass
class Knowledge:
    """The fold: the last check and last observation of each source, every diff, and
    which diffs are processed."""

    last_check: dict[str, dict[str, Any]] = field(default_factory=dict)
    last_seen: dict[str, dict[str, Any]] = field(default_factory=dict)
    diffs: list[dict[str, Any]] = field(default_factory=list)
    routed: dict[str, dict[str, Any]] = field(default_factory=dict)
    warnings: list[records.LineWarning] = field(default_factory=list)

    def processed(self, diff: dict[str, Any]) -> bool:
        return diff.get("processed") is True or diff_key(diff) in self.routed

    def unprocessed(self) -> list[dict[str, Any]]:
        return [d for d in self.diffs if not self.processed(d)]

    def view(self, diff: dict[str, Any]) -> dict[str, Any]:
        """A diff as ``diffs`` shows it: the seed's keys first, ``processed`` folded."""
        shown = {key: diff.get(key) for key in DIFF_KEYS}
        shown["affectedSkills"] = affected(diff)
        shown["severity"] = diff.get("severity", "medium")
        shown.update({k: v for k, v in diff.items() if k not in shown and k != "op"})
        shown["processed"] = self.processed(diff)
        return shown

    def stats(self) -> dict[str, Any]:
        """agent-skill-bus's ``diffs`` shape: ``{sources, totalDiffs, unprocessed,
        bySeverity}``; ``sources`` counts sources observed at least once."""
        return {"sources": len(self.last_seen), "totalDiffs": len(self.diffs),
                "unprocessed": len(self.unprocessed()),
                "bySeverity": {s: sum(1 for d in self.diffs if d.get("severity", "medium") == s)
                               for s in SEVERITIES}}


def diff_key(diff: dict[str, Any]) -> str:
    """What a route mark names: the diff's id, or for a line another program appended
    without one, a digest of its content."""
    if isinstance(diff.get("id"), str) and diff["id"]:
        return str(diff["id"])
    import hashlib

    text = json.dumps({k: diff.get(k) for k in DIFF_KEYS}, sort_keys=True, ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()[:24]


def affected(diff: dict[str, Any]) -> list[str]:
    """A diff's ``affectedSkills`` as written; every skill (``["*"]``) when the key is missing."""
    skills = diff.get("affectedSkills")
    return list(skills) if isinstance(skills, list) else ["*"]


def load(layout: VaultLayout) -> Knowledge:
    """Fold every record below ``logs/knowledge/`` (bad lines become warnings)."""
    scan = records.scan(layout.stream(STREAM), check=check_record)
    state = Knowledge(warnings=scan.warnings)
    for record in scan.records:
        op = record.get("op")
        if op == "check":
            state.last_check[record["source"]] = record
            if record.get("ok"):
                state.last_seen[record["source"]] = record
        elif op == "route":
            state.routed.setdefault(record["diff"], record)
        else:
            state.diffs.append(record)
    return state


def append(layout: VaultLayout, node: str, batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Stamp and append records (one write) to this node's file of this month."""
    return records.append_to_stream(layout, STREAM, node, batch)


def diffs_touching(layout: VaultLayout, skill: str, since: datetime | None = None,
                   until: datetime | None = None) -> list[dict[str, Any]]:
    """For the improvement loop: the diffs that touched ``skill`` (``affectedSkills``
    naming it or ``"*"``) detected in ``[since, until]``, oldest first."""
    state = load(layout)
    found = []
    for diff in state.diffs:
        if skill not in affected(diff) and "*" not in affected(diff):
            continue
        moment = clock.parse_iso(diff["ts"])
        if (since is not None and moment < since) or (until is not None and moment > until):
            continue
        found.append(state.view(diff))
    return found
