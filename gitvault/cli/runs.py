"""Runs and health, with agent-skill-bus's names, flags and --json shapes: health,
flagged, drift, dashboard; plus lifecycle and import-bus (record-run is a hot command:
:mod:`gitvault.cli.queue`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from gitvault.cli.common import dry_run_option, emit, global_options, state, warn
from gitvault.skills.usage import with_warnings

DAYS = click.option("--days", type=click.IntRange(min=0), default=None, metavar="N",
                    help="The recent window in days (default: health.window_days, 7).")
FAIL_ON = click.option("--fail-on", is_flag=True,
                       help="Exit 1 when anything is listed (for CI).")


def _analysis() -> tuple[Any, Any, list[str]]:
    """The open vault, its runs, and the bad-line warnings (printed on stderr)."""
    from gitvault.runs.report import run_warnings

    vault = state().vault()
    runs = vault.runs()
    return vault, runs, warn(run_warnings(runs, vault.layout))


def _table(report: dict[str, dict[str, Any]]) -> str:
    if not report:
        return "no runs recorded yet"
    rows = [f"{'skill':<28} {'runs':>7} {'avg':>6} {'recent':>6}  {'trend':<9} {'fails':>5}  flag"]
    for name, d in report.items():
        recent = "-" if d["recentAvg"] is None else f"{d['recentAvg']:.3f}"
        rows.append(f"{name[:28]:<28} {d['runs']:>7} {d['avgScore']:>6.3f} {recent:>6}  "
                    f"{d['trend']:<9} {d['consecutiveFails']:>5}  {'FLAGGED' if d['flagged'] else ''}")
    return "\n".join(rows)


def _exit_if(fail_on: bool, found: int) -> None:
    if fail_on and found:
        click.get_current_context().exit(1)


@click.command()
@DAYS
@global_options
def health(days: int | None) -> None:
    """Per-skill health: runs, avgScore, recentAvg, trend, lastFail, consecutiveFails,
    flagged (the rules of agent-skill-bus; threshold health.flag_below)."""
    from gitvault.core.clock import now
    from gitvault.runs.report import health_report

    vault, runs, warnings = _analysis()
    data = health_report(runs, now(), vault.config.health, warnings, days)
    emit(data, lambda: _table(data["skills"]))


@click.command()
@DAYS
@FAIL_ON
@global_options
def flagged(days: int | None, fail_on: bool) -> None:
    """Skills that are flagged: low average, declining or broken."""
    from gitvault.core.clock import now
    from gitvault.runs.report import flagged_report

    vault, runs, warnings = _analysis()
    data = flagged_report(runs, now(), vault.config.health, warnings, days)
    found = data["skills"]
    emit(data, lambda: _table({f["name"]: f for f in found}) if found else "no flagged skills")
    _exit_if(fail_on, data["count"])


@click.command()
@FAIL_ON
@global_options
def drift(fail_on: bool) -> None:
    """Skills whose average dropped more than health.drift_threshold (0.15) from last
    week to this week."""
    from gitvault.core.clock import now
    from gitvault.runs.report import drift_report

    vault, runs, warnings = _analysis()
    data = drift_report(runs, now(), vault.config.health, warnings)
    emit(data, lambda: "\n".join(f"{d['name']}: {d['lastWeekAvg']:.3f} -> {d['thisWeekAvg']:.3f} "
                                 f"(drop {d['drop']:.3f})" for d in data["skills"])
         or "no drifting skills")
    _exit_if(fail_on, data["count"])


@click.command()
@DAYS
@click.option("--no-color", is_flag=True, help="Plain text (also when NO_COLOR is set or "
                                                "output is not a terminal).")
@click.option("--html", "html_file", metavar="FILE",
              help="Also write one self-contained HTML report: summary counts, flagged and "
                   "drifting skills first with why, a daily score chart per skill, the "
                   "latest failure notes.")
@global_options
def dashboard(days: int | None, no_color: bool, html_file: str | None) -> None:
    """Skill health at a glance: flagged and drifting skills first."""
    import os
    import sys

    from gitvault.core.clock import now
    from gitvault.runs import dashboard as view
    from gitvault.runs.report import dashboard_report

    vault, runs, warnings = _analysis()
    moment = now()
    section = vault.config.health
    window = section.window_days if days is None else days
    data, report, drift_rows = dashboard_report(runs, moment, section, warnings, days)
    if html_file:
        from gitvault.core.files import write_atomic

        write_atomic(Path(html_file), view.html_page(runs, vault.layout.stream("runs"), moment,
                                                     window, section.flag_below, report,
                                                     drift_rows))
        data["html"] = str(Path(html_file).resolve())
    color = not no_color and not os.environ.get("NO_COLOR") and sys.stdout.isatty()
    emit(data, lambda: (f"wrote {data['html']}\n" if html_file else "") + view.render_terminal(
        report, {d["name"] for d in drift_rows}, window, None, color))


@click.command()
@dry_run_option("Show what would change")
@global_options
def lifecycle(dry_run: bool) -> None:
    """Mark active skills stale: not injected for lifecycle.stale_after_days (14), or
    failing at least lifecycle.stale_failure_rate (70%) of at least lifecycle.min_outcomes
    (3) outcomes since their last change. Each change is a new version."""
    changes, warnings = state().vault().lifecycle(dry_run)
    emit(with_warnings({"dryRun": dry_run, "changes": changes}, warn(warnings)),
         lambda: "\n".join(f"{'would mark' if dry_run else 'marked'} {c['name']} stale: "
                           f"{c['reason']}" for c in changes) or "no lifecycle changes")


@click.command("import-bus")
@click.argument("directory", type=click.Path(exists=True, file_okay=False))
@global_options
def import_bus(directory: str) -> None:
    """Import an agent-skill-bus data folder (its --data-dir): the skill runs, the
    queue, locks and DAG state with their PR ids, and the knowledge diffs and state.
    Importing twice adds nothing."""
    from gitvault.vault.importbus import import_bus

    vault = state().vault()
    result = import_bus(vault, Path(directory))
    warnings = warn(result.pop("warnings"))
    queue = result.get("queue")
    emit(with_warnings(result, warnings),
         f"imported {result['runs']['imported']} runs "
         f"({result['runs']['skipped']} already imported)"
         + (f"; queue: {queue['prs']} PRs, {queue['locks']} locks, {queue['dags']} DAGs "
            f"({queue['skipped']} already imported)" if queue else "")
         + (f"; knowledge: {k['diffs']} diffs, {k['sources']} source states "
            f"({k['skipped']} already imported)" if (k := result.get("knowledge")) else ""))
