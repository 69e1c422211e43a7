"""What the logs say about each skill, and the skill objects front ends print.

Usage, success, failure and patch counts are not stored in SKILL.md (SPEC §2.1): they
are folded from ``events`` records, so concurrent use on many nodes never conflicts.
The ``skill show`` / ``skill list`` JSON shapes (SPEC §4.0) are built here, once, for
the CLI, the MCP server and CI alike.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from gitvault.skills.model import STATES, Skill

Stats = dict[str, dict[str, int]]
VIEW_KEYS = ("name", "description", "trigger", "version", "kind", "state", "provenance",
             "sensitive", "urn", "metadata", "content", "stats")
LIST_STATES = (*STATES, "unverified", "all")  # unverified: code skills without evidence


def _name(ref: object) -> str:
    return str(ref).split("@")[0]


def skill_stats(events: Iterable[dict[str, Any]]) -> Stats:
    """usage / success / failure / patches per skill, from ``events`` records."""
    stats: Stats = {}

    def bump(name: str, key: str) -> None:
        entry = stats.setdefault(name, {"usage": 0, "success": 0, "failure": 0, "patches": 0})
        entry[key] += 1

    for record in events:
        op = record.get("op")
        if op == "inject":
            for ref in record.get("skills") or []:
                bump(_name(ref), "usage")
        elif op == "outcome":
            key = "success" if record.get("success") is True else "failure"
            for ref in record.get("skills") or []:
                bump(_name(ref), key)
        elif op in ("patch", "improve") and isinstance(record.get("skill"), str):
            bump(record["skill"], "patches")
    return stats


def skill_usage(events: Iterable[dict[str, Any]]
                ) -> tuple[dict[str, str], dict[str, list[tuple[str, bool]]]]:
    """From ``events`` records: each skill's last injection (ts) and its outcomes
    (ts, success) in record order. Skill refs may carry ``@vN``."""
    last_inject: dict[str, str] = {}
    outcomes: dict[str, list[tuple[str, bool]]] = {}
    for record in events:
        op = record.get("op")
        for name in (_name(ref) for ref in record.get("skills") or []):
            if op == "inject":
                last_inject[name] = record["ts"]
            elif op == "outcome":
                outcomes.setdefault(name, []).append((record["ts"], record.get("success") is True))
    return last_inject, outcomes


def skill_view(skill: Skill, stats: Stats, urn: str, *, content: bool = False) -> dict[str, Any]:
    """The ``skill show --json`` object (``skill list`` leaves out content)."""
    view = skill.summary()
    view["urn"] = urn
    if content:
        view["content"] = skill.body
    view["stats"] = dict(stats.get(skill.name) or
                         {"usage": 0, "success": 0, "failure": 0, "patches": 0})
    return {k: view[k] for k in VIEW_KEYS if k in view}


def with_warnings(data: dict[str, Any], warnings: Iterable[object]) -> dict[str, Any]:
    """``data`` with a ``"warnings"`` list when there are any (SPEC §3)."""
    shown = [str(w) for w in warnings]
    if shown:
        data["warnings"] = shown
    return data
