"""The closed loop (SPEC §7, seed §3.3 steps 5-6): every earlier auto-edit of the loop
is judged by the skill's runs, never by the model's own scores. With at least
``improve.min_runs_after`` runs since the change, their average is compared with the
same number of runs before it: better by more than ``health.trend_threshold`` is
``improved``; worse by more than ``health.drift_threshold`` is a clear drop, rolled back
(a new version) under the same gate as an auto-edit; anything else is ``no_effect`` and
the skill is diagnosed again with that evidence.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from gitvault.core import git
from gitvault.core.clock import parse_iso
from gitvault.core.paths import VaultLayout
from gitvault.llm.journal import Loop
from gitvault.runs.columns import ts_ms
from gitvault.skills import versions

AUTO_OPS = ("improve", "improve-rollback")  # commits the loop made without a person


@dataclass
class Verdict:
    skill: str
    version: int  # the auto-applied version judged
    commit: str
    action: str  # improved | no_effect | drop | superseded | no_baseline | waiting
    before: dict[str, Any] = field(default_factory=dict)
    after: dict[str, Any] = field(default_factory=dict)
    previous: int | None = None  # the version before the change (a rollback target)

    def evidence(self) -> str:
        return (f"v{self.version} was applied automatically; runs since then average "
                f"{self.after.get('avg')} over {self.after.get('runs')} runs against "
                f"{self.before.get('avg')} over {self.before.get('runs')} runs before it: "
                "no improvement. Propose something different.")

    def to_json(self) -> dict[str, Any]:
        return {"skill": self.skill, "version": self.version, "commit": self.commit,
                "action": self.action, "before": self.before, "after": self.after,
                **({"previous": self.previous} if self.previous is not None else {})}


def before(moment: datetime, delta: timedelta) -> datetime:
    """``moment - delta``, or the calendar's first moment when that is before it."""
    try:
        return moment - delta
    except OverflowError:
        return datetime.min.replace(tzinfo=moment.tzinfo)


def auto_edits(loop: Loop, name: str, since: datetime) -> list[git.Commit]:
    """The loop's commits of ``name`` after ``since``, from git history (so every node's
    auto-edits count once synced)."""
    return [c for c in git.log(loop.top, versions.skill_paths(loop.vault_rel, name))
            if c.op in AUTO_OPS and c.trailers.get("Gitvault-Skill") == name
            and parse_iso(c.date) > since]


def gate_reasons(loop: Loop, name: str, sensitive: bool, now: datetime) -> list[str]:
    """Why the skill may not be auto-edited now (empty: it may): sensitive, or already
    auto-edited ``improve.max_auto_edits_per_day`` times in the last 24 hours."""
    reasons = []
    if sensitive:
        reasons.append("the skill is sensitive: the loop never auto-edits it")
    recent = auto_edits(loop, name, before(now, timedelta(hours=24)))
    limit = loop.config.improve.max_auto_edits_per_day
    if len(recent) >= limit:
        reasons.append(f"auto-edited {len(recent)} time{'s' if len(recent) != 1 else ''} in the "
                       f"last 24 hours (at most {limit}; last {recent[0].sha[:10]} at "
                       f"{recent[0].date})")
    return reasons


def _avg(scores: list[float]) -> float | None:
    return round(sum(scores) / len(scores), 3) if scores else None


def judged(loop: Loop) -> set[tuple[Any, Any]]:
    """(skill, version) of every auto-edit a ``judge`` record settled (not ``waiting``)."""
    return {(r.get("skill"), r.get("version")) for r in loop.scan().records
            if r.get("op") == "judge" and r.get("action") != "waiting"}


def verdicts(loop: Loop, now: datetime) -> list[Verdict]:
    """Every auto-edit not judged yet, judged (or ``waiting`` for runs)."""
    done = judged(loop)
    skills_path = VaultLayout.git_path(loop.vault_rel, "skills")
    runs = loop.runs()
    cfg, health = loop.config.improve, loop.config.health
    found: list[Verdict] = []
    seen: set[tuple[str, int]] = set()
    for commit in git.log(loop.top, [skills_path]):
        name, version = commit.trailers.get("Gitvault-Skill", ""), commit.version
        if commit.op != "improve" or not name or version is None or (name, version) in done \
                or (name, version) in seen:
            continue
        seen.add((name, version))
        if loop.skills.find(name) is None:
            continue
        current = loop.skills.get(name)
        entries = loop.skills.history(name)
        earlier = [e.version for e in entries if e.version < version]
        verdict = Verdict(name, version, commit.sha, "waiting",
                          previous=max(earlier) if earlier else None)
        if current.version != version:
            verdict.action = "superseded"
            found.append(verdict)
            continue
        cols = runs.skills.get(name)
        # a commit's date has whole seconds: runs of the change's own second count as before
        start = (ts_ms(commit.date) or 0) + 1000
        pairs = list(zip(cols.ts, cols.score, strict=True)) if cols is not None else []
        after = [s for t, s in pairs if t >= start]
        before = [s for t, s in pairs if t < start][-max(len(after), 1):]
        verdict.after = {"runs": len(after), "avg": _avg(after)}
        verdict.before = {"runs": len(before), "avg": _avg(before)}
        if len(after) < cfg.min_runs_after:
            verdict.after["needed"] = cfg.min_runs_after
        elif not before:
            verdict.action = "no_baseline"
        else:
            delta = (_avg(after) or 0.0) - (_avg(before) or 0.0)
            verdict.action = ("improved" if delta > health.trend_threshold else
                              "drop" if -delta > health.drift_threshold else "no_effect")
        found.append(verdict)
    return found
