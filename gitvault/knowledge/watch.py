"""``gitvault watch``: check the sources that are due, record what each check saw,
record a diff on change, and route unprocessed diffs by severity (SPEC §8, seed §8.5).

- Due: a source is due when its tier's period (6 h, 12 h, a week) has passed since its
  last check record (a failed check counts), or when it was never checked; ``--source``
  checks one source even if it is not due.
- The first observation of a source is a baseline, not a diff. A change is one
  ``version_change`` diff at the source's severity; a bump of a version's major number
  is one ``breaking_change`` at critical.
- A cycle of tier 2 or 3 makes at most ``watch.max_lookups`` (3) network look-ups; the
  rest wait for a later run (most overdue first).
- Routing: critical and high enqueue a prompt request at that priority with source
  ``knowledge-watcher``, medium at medium, low is only logged; each routed diff gets a
  route mark (an appended record), which makes it processed.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from gitvault.core import clock, records
from gitvault.core.config import Config
from gitvault.core.paths import VaultLayout
from gitvault.errors import GitvaultError, InvalidInput, NotFound
from gitvault.knowledge import log
from gitvault.knowledge.command import NOT_ALLOWED
from gitvault.knowledge.model import Context, LookupFailed, Observation, major
from gitvault.knowledge.sources import Source, configured

ROUTER = "knowledge-watcher"


def select(sources: list[Source], state: log.Knowledge, now: datetime, *, tier: int | None,
           source_id: str | None, max_lookups: int, allow_commands: bool
           ) -> tuple[list[Source], list[dict[str, Any]], list[dict[str, Any]]]:
    """(sources to check now, not due ``{source, tier, due}``, skipped ``{source,
    reason}``) for one run."""
    not_due: list[dict[str, Any]] = []
    candidates: list[Source] = []
    if source_id is not None:
        candidates = [named(sources, source_id, tier)]
    else:
        for source in sources:
            if tier is not None and source.tier != tier:
                continue
            due = next_due(source, state)
            if due is None or due <= now:
                candidates.append(source)
            else:
                not_due.append({"source": source.id, "tier": source.tier, "due": clock.iso(due)})
        candidates.sort(key=lambda s: _due_key(s, state))  # most overdue first
    chosen: list[Source] = []
    skipped: list[dict[str, Any]] = []
    lookups = {2: 0, 3: 0}
    for source in candidates:
        if source.type == "command" and not allow_commands:
            skipped.append({"source": source.id, "reason": NOT_ALLOWED})
            continue
        if source_id is None and source.network and source.tier in lookups:
            if lookups[source.tier] >= max_lookups:
                skipped.append({"source": source.id, "reason":
                                f"a tier-{source.tier} cycle makes at most {max_lookups} network "
                                "look-ups (watch.max_lookups); it is checked on a later run"})
                continue
            lookups[source.tier] += 1
        chosen.append(source)
    return chosen, not_due, skipped


def named(sources: list[Source], source_id: str, tier: int | None) -> Source:
    """The source ``--source`` names (NotFound, or InvalidInput when not of ``tier``)."""
    found = [s for s in sources if s.id == source_id]
    if not found:
        known = ", ".join(s.id for s in sources) or "none configured"
        raise NotFound(f"no knowledge source {source_id!r} in watch.sources ({known})")
    if tier is not None and found[0].tier != tier:
        raise InvalidInput(f"source {source_id!r} is tier {found[0].tier}, not tier {tier}")
    return found[0]


def _due_key(source: Source, state: log.Knowledge) -> str:
    due = next_due(source, state)
    return clock.ts_key(clock.iso(due)) if due is not None else ""


def next_due(source: Source, state: log.Knowledge) -> datetime | None:
    """When ``source`` is next due (None: never checked, so due now)."""
    last = state.last_check.get(source.id)
    if not last:
        return None
    return clock.shift(clock.parse_iso(last["ts"]), source.period.total_seconds())


def observe(source: Source, ctx: Context, previous: dict[str, Any] | None
            ) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """Check one source: its check record and, on a change, its diff record."""
    base = {"op": "check", "source": source.id, "sourceType": source.type, "tier": source.tier}
    try:
        seen: Observation = source.check(ctx)
    except LookupFailed as exc:
        return {**base, "ok": False, "error": str(exc)}, None
    check = {**base, "ok": True, "value": seen.value, "version": seen.version,
             "shown": seen.label, "baseline": previous is None}
    if previous is None or previous.get("value") == seen.value:
        return check, None
    before = str(previous.get("shown") or previous.get("value"))
    old_major = major(str(previous.get("version") or ""))
    new_major = major(seen.version or "")
    breaking = old_major is not None and new_major is not None and new_major > old_major
    diff = {"source": source.id, "type": "breaking_change" if breaking else "version_change",
            "detail": f"{before} → {seen.label}"
                      + (f" (major version {old_major} → {new_major})" if breaking else ""),
            "affectedSkills": list(source.affected),
            "severity": "critical" if breaking else source.severity, "processed": False,
            "previous": previous.get("value"), "current": seen.value}
    return check, diff


def watch(layout: VaultLayout, node: str, cfg: Config, *, tier: int | None = None,
          source_id: str | None = None, allow_commands: bool = False) -> dict[str, Any]:
    """One watch run: due checks, their records and diffs, then routing of every
    unprocessed diff. Failed checks are recorded and listed, never raised."""
    sources = configured(cfg.watch.sources)
    if source_id is not None:
        named(sources, source_id, tier)  # refuse bad input before touching anything
    with records.locked(layout.lock_file("knowledge")):
        state = log.load(layout)
        chosen, not_due, skipped = select(
            sources, state, clock.now(), tier=tier, source_id=source_id,
            max_lookups=cfg.watch.max_lookups, allow_commands=allow_commands)
        ctx = Context(Path(layout.root), float(cfg.watch.timeout_s), allow_commands)
        checked, failed = [], []
        for source in chosen:
            previous = state.last_seen.get(source.id)
            check, diff = observe(source, ctx, previous)
            written = log.append(layout, node, [check, *([diff] if diff else [])])
            state.last_check[source.id] = written[0]
            if check["ok"]:
                state.last_seen[source.id] = written[0]
            else:
                failed.append({"source": source.id, "error": check["error"]})
            if diff:
                state.diffs.append(written[1])
            checked.append(_result(source, written[0], previous, written[1:]))
        routed, unrouted = route(layout, node, cfg, state)
    return {"configured": len(sources), "checked": checked, "notDue": not_due,
            "skipped": skipped, "failed": failed,
            "diffs": [state.view(d) for r in checked for d in r.pop("_diffs")],
            "routed": routed, "unrouted": unrouted,
            "warnings": [str(w) for w in state.warnings]}


def _result(source: Source, check: dict[str, Any], previous: dict[str, Any] | None,
            diffs: list[dict[str, Any]]) -> dict[str, Any]:
    status = "failed" if not check["ok"] else "baseline" if check["baseline"] else \
        "changed" if diffs else "unchanged"
    return {"source": source.id, "type": source.type, "tier": source.tier, "status": status,
            "value": check.get("shown"), "previous":
                (previous.get("shown") or previous.get("value")) if previous else None,
            "error": check.get("error"), "diff": diffs[0]["id"] if diffs else None,
            "_diffs": diffs}


def route(layout: VaultLayout, node: str, cfg: Config, state: log.Knowledge
          ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Route every unprocessed diff (seed §8.5); returns (route marks, diffs that could
    not be routed with why). A diff is marked only once its prompt request exists."""
    from gitvault.queue.commands import Queue

    queue = Queue(layout, node, cfg.queue)
    marks, unrouted = [], []
    for diff in state.unprocessed():
        severity = diff.get("severity", "medium")
        key = log.diff_key(diff)
        mark: dict[str, Any] = {"op": "route", "diff": key, "priority": None, "pr": None,
                                "action": "logged"}
        if severity != "low":
            try:
                answer = queue.enqueue(request_for(diff))
            except GitvaultError as exc:
                unrouted.append({"diff": key, "error": str(exc)})
                continue
            duplicate = answer["status"] == "duplicate"
            mark.update(priority=severity, action="duplicate" if duplicate else "enqueued",
                        pr=answer["existing"] if duplicate else answer["pr"]["id"])
        written = log.append(layout, node, [mark])[0]
        state.routed[key] = written
        marks.append({k: written[k] for k in ("diff", "action", "priority", "pr")})
    return marks, unrouted


def request_for(diff: dict[str, Any]) -> dict[str, Any]:
    """The prompt request that routes ``diff`` to the bus."""
    skills = log.affected(diff)
    who = "all skills" if "*" in skills or not skills else ", ".join(skills)
    return {"source": ROUTER, "priority": diff.get("severity", "medium"),
            "task": f"Update {who} for {diff['source']}: {diff['type']} {diff.get('detail', '')}",
            "context": f"knowledge diff {log.diff_key(diff)} ({diff['type']}, "
                       f"{diff.get('severity', 'medium')})",
            "affectedSkills": skills}
