"""The knowledge watcher: ``watch`` and ``diffs`` (SPEC §4, §8; agent-skill-bus's
``diffs`` shapes)."""

from __future__ import annotations

from typing import Any

import click

from gitvault.cli.common import emit, global_options, state, warn


@click.command()
@click.option("--tier", type=click.IntRange(1, 3), default=None, metavar="1|2|3",
              help="Check only the sources of this tier (1 = every 6 h, 2 = every 12 h, "
                   "3 = weekly).")
@click.option("--source", "source_id", metavar="ID",
              help="Check this source now, even if it is not due.")
@global_options
def watch(tier: int | None, source_id: str | None) -> None:
    """Check the knowledge sources that are due and route what changed.

    Each check is recorded; the first check of a source is its baseline; a change is a
    diff (a major version bump: breaking_change at critical). Critical and high diffs
    enqueue a prompt request at that priority, medium at medium, low is only logged. A
    failed check is recorded and named; watch still exits 0.
    """
    from gitvault.knowledge.command import commands_allowed
    from gitvault.knowledge.watch import watch as run_watch

    vault = state().vault()
    result = run_watch(vault.layout, vault.node, vault.config, tier=tier, source_id=source_id,
                       allow_commands=commands_allowed(vault.root))
    warnings = warn(result.pop("warnings"))
    if vault.config.logs.autocommit:
        vault.commit_logs("gitvault: watch")
    if warnings:
        result["warnings"] = warnings
    emit(result, lambda: _watch_text(result))


def _watch_text(result: dict[str, Any]) -> str:
    lines = []
    for row in result["checked"]:
        status = row["status"]
        if status == "failed":
            what = f"FAILED: {row['error']}"
        elif status == "baseline":
            what = f"baseline {row['value']}"
        elif status == "changed":
            what = f"{row['previous']} -> {row['value']}"
        else:
            what = f"unchanged ({row['value']})"
        lines.append(f"{row['source']:<20} {row['type']:<8} tier {row['tier']}  {what}")
    for diff in result["diffs"]:
        lines.append(f"diff {diff['id']}: {diff['source']} {diff['type']} ({diff['severity']}): "
                     f"{diff['detail']}")
    for mark in result["routed"]:
        if mark["action"] == "logged":
            lines.append(f"routed {mark['diff']}: low, logged only")
        else:
            lines.append(f"routed {mark['diff']}: prompt request {mark['pr']} at "
                         f"{mark['priority']}" + (" (already queued)"
                                                  if mark["action"] == "duplicate" else ""))
    for item in result["unrouted"]:
        lines.append(f"not routed {item['diff']}: {item['error']}")
    for item in result["skipped"]:
        lines.append(f"skipped {item['source']}: {item['reason']}")
    for item in result["notDue"]:
        lines.append(f"not due {item['source']} (tier {item['tier']}): next check {item['due']}")
    if not result["configured"]:
        lines.append("no knowledge sources configured (add them under watch.sources in "
                     "gitvault.yaml)")
    checked = len(result["checked"])
    failed = len(result["failed"])
    lines.append(f"checked {checked} source{'s' if checked != 1 else ''}, "
                 f"{len(result['diffs'])} new diff{'s' if len(result['diffs']) != 1 else ''}, "
                 f"{failed} failed" + (": " + ", ".join(f["source"] for f in result["failed"])
                                       if failed else ""))
    return "\n".join(lines)


@click.command()
@click.option("--unprocessed", is_flag=True, help="List the diffs not routed yet.")
@global_options
def diffs(unprocessed: bool) -> None:
    """Knowledge diff statistics: sources, totalDiffs, unprocessed, bySeverity.

    With --unprocessed, the list of diffs not routed yet (as agent-skill-bus).
    """
    from gitvault.knowledge import log

    folded = log.load(state().vault().layout)
    warnings = warn(folded.warnings)
    if unprocessed:
        pending = [folded.view(d) for d in folded.unprocessed()]
        emit(pending,  # type: ignore[arg-type]  # the peer's shape: a JSON array
             "\n".join(f"{d['ts']}  {d['source']:<20} {d['type']:<16} {d['severity']:<8} "
                       f"{d['detail']}" for d in pending) or "no unprocessed diffs")
        return
    stats = folded.stats()
    if warnings:  # SPEC §3 (the --unprocessed list has no room for them: stderr only)
        stats["warnings"] = warnings
    by = stats["bySeverity"]
    emit(stats, f"{stats['sources']} sources, {stats['totalDiffs']} diffs "
                f"({stats['unprocessed']} unprocessed): critical {by['critical']}, "
                f"high {by['high']}, medium {by['medium']}, low {by['low']}")
