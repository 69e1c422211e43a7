"""Lifecycle (SPEC §2.3): active skills become stale when not injected for
``lifecycle.stale_after_days`` or when most of their recent outcomes failed. Each change
is a new version; stale → archived is only ever done by the curator or by hand."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from gitvault.core.clock import now, parse_iso
from gitvault.errors import InvalidInput
from gitvault.skills.usage import skill_usage

if TYPE_CHECKING:
    from gitvault.skills.store import SkillStore


def stale_reason(last_used: datetime, successes: int, failures: int, moment: datetime,
                 rules: Any) -> str | None:
    """Why an active skill should become stale, or None. ``rules`` is the ``lifecycle``
    config section (stale_after_days, stale_failure_rate, min_outcomes).

    ``last_used`` is its last injection, or its last change if it was never injected
    since; the outcomes are those recorded since its last change (a patch gives a
    skill a fresh start).
    """
    idle = moment - last_used
    if idle.total_seconds() >= rules.stale_after_days * 86400:
        return f"not injected for {idle.days} days"
    outcomes = successes + failures
    if outcomes >= rules.min_outcomes and failures / outcomes >= rules.stale_failure_rate:
        return f"{failures} of {outcomes} outcomes failed ({failures / outcomes:.0%})"
    return None


def run_lifecycle(store: SkillStore, events: list[dict[str, Any]], *, dry_run: bool = False
                  ) -> tuple[list[dict[str, Any]], list[str]]:
    """Mark active skills stale by the rules; returns (changes, skipped-file lines)."""
    rules = store.config.lifecycle
    moment = now()
    last_inject, outcomes = skill_usage(events)
    skipped: list[str] = []
    changes = []
    for skill in store.iter_all(include_archived=False, skipped=skipped):
        if skill.state != "active":
            continue
        stamp = skill.metadata.get("updated") or skill.metadata.get("created") \
            or "1970-01-01T00:00:00Z"
        try:
            changed_at = parse_iso(stamp)
            used = last_inject.get(skill.name)
            last_used = max(changed_at, parse_iso(used)) if used else changed_at
            since = [ok for ts, ok in outcomes.get(skill.name, []) if parse_iso(ts) >= changed_at]
        except InvalidInput as exc:  # a hand-edited date: reported, the others go on
            skipped.append(f"{skill.name}: {exc} (lifecycle skipped it; see 'gitvault doctor')")
            continue
        reason = stale_reason(last_used, sum(since), len(since) - sum(since), moment, rules)
        if reason is None:
            continue
        change = {"name": skill.name, "from": "active", "to": "stale", "reason": reason,
                  "version": skill.version}
        if not dry_run:
            with store.locked():
                current = store.mark(store.get(skill.name), "stale")
                store.save(current, "lifecycle", body=f"Stale: {reason}.")
            change["version"] = current.version
        changes.append(change)
    return changes, skipped
