"""The check behind every CI step: each skill's health, the flagged and the drifting
ones, why each is a problem and its latest failure.

The numbers are the JSON of :mod:`gitvault.runs.report` (what ``health``, ``flagged``
and ``drift`` print), never recomputed here.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from gitvault.core.clock import iso
from gitvault.core.paths import VaultLayout
from gitvault.runs.columns import Runs
from gitvault.runs.dashboard import attention_reasons, failure_notes
from gitvault.runs.report import drift_report, flagged_report, health_report, run_warnings


@dataclass
class Finding:
    """One skill that is flagged, drifting or both (``last_failure``: the dashboard's
    latest :class:`~gitvault.runs.dashboard.FailureNote` as a dict)."""

    name: str
    health: dict[str, Any]
    flagged: bool
    drift: dict[str, Any] | None
    why: list[str]
    last_failure: dict[str, Any] | None

    @property
    def status(self) -> str:
        """``flagged``, ``drifting`` or ``flagged and drifting``."""
        return " and ".join(w for w, on in (("flagged", self.flagged),
                                            ("drifting", self.drift is not None)) if on)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "status": self.status, "why": self.why,
                "health": self.health, "drift": self.drift, "lastFailure": self.last_failure}


@dataclass
class Check:
    """The whole check at one moment: ``health`` is health's ``skills`` object."""

    moment: datetime
    window: int
    flag_below: float
    health: dict[str, dict[str, Any]]
    findings: list[Finding]
    failures: dict[str, dict[str, Any]]
    warnings: list[str] = field(default_factory=list)

    @property
    def flagged(self) -> list[str]:
        return [f.name for f in self.findings if f.flagged]

    @property
    def drifting(self) -> list[str]:
        return [f.name for f in self.findings if f.drift is not None]

    def finding(self, name: str) -> Finding | None:
        return next((f for f in self.findings if f.name == name), None)


def run_check(runs: Runs, layout: VaultLayout, moment: datetime, section: Any,
              days: int | None = None) -> Check:
    """Health, flagged and drift reports for ``runs`` at ``moment`` (``section`` is the
    config's ``health``), and a :class:`Finding` per problem skill: flagged ones
    first, then drifting ones, each group in health's order."""
    warnings = run_warnings(runs, layout)
    health = health_report(runs, moment, section, warnings, days)["skills"]
    flagged = {f["name"] for f in flagged_report(runs, moment, section, warnings, days)["skills"]}
    drift = {d["name"]: d for d in drift_report(runs, moment, section, warnings)["skills"]}
    problems = [n for n in health if n in flagged] + [n for n in health
                                                      if n in drift and n not in flagged]
    failures = {name: asdict(notes[0]) for name, notes
                in failure_notes(layout.stream("runs"), per_skill=1).items()
                if name in health and notes}
    findings = []
    for name in problems:
        shift = {k: v for k, v in drift[name].items() if k != "name"} if name in drift else None
        findings.append(Finding(name, health[name], name in flagged, shift,
                                attention_reasons(health[name], shift, section.flag_below),
                                failures.get(name)))
    window = int(section.window_days if days is None else days)
    return Check(moment, window, section.flag_below, health, findings, failures, warnings)


def check_json(check: Check) -> dict[str, Any]:
    """The check as ``--json`` shows it."""
    return {"lastUpdated": iso(check.moment), "window": check.window,
            "skills": len(check.health), "flagged": check.flagged, "drifting": check.drifting,
            "findings": [f.to_json() for f in check.findings],
            **({"warnings": check.warnings} if check.warnings else {})}
