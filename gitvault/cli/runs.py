"""Runs and health, with agent-skill-bus's names, flags and --json shapes:
record-run, health, flagged, drift, dashboard; plus lifecycle and import-bus."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from gitvault.cli.common import emit, global_options, state, warn

DAYS = click.option("--days", type=click.IntRange(min=0), default=None, metavar="N",
                    help="The recent window in days (default: health.window_days, 7).")
FAIL_ON = click.option("--fail-on", is_flag=True,
                       help="Exit 1 when anything is listed (for CI).")


@click.command("record-run")
@click.option("--agent", default="default", show_default=True, help="Who ran the skill.")
@click.option("--skill", required=True, help="The skill that ran.")
@click.option("--task", default="", help="What the run was for (secrets are redacted).")
@click.option("--result", default="success", show_default=True,
              help="success, partial or fail.")
@click.option("--score", default="1.0", show_default=True, help="A number from 0 to 1 (clamped).")
@click.option("--notes", default="", help="Free text (secrets are redacted).")
@global_options
def record_run(agent: str, skill: str, task: str, result: str, score: str, notes: str) -> None:
    """Append one skill run to logs/runs/ (no commit; see 'gitvault commit')."""
    from gitvault.core.clock import now
    from gitvault.runs.record import record_run as append_run

    vault = state().vault()
    entry = append_run(vault.layout.log_file("runs", vault.node, now()), vault.node,
                       agent=agent, skill=skill, task=task, result=result, score=score,
                       notes=notes)
    if vault.config.logs.autocommit:
        vault.commit_logs("gitvault: record run")
    emit({"status": "recorded", "entry": entry},
         f"recorded {entry['result']} run of {entry['skill']} (score {entry['score']})")


def _analysis(days: int | None) -> tuple[Any, Any, int, list[str]]:

    vault = state().vault()
    runs = vault.runs()
    window = vault.config.health.window_days if days is None else days
    warnings = warn([f"{_shown(vault, w.file)}:{w.line}: {w.reason}" for w in runs.warnings])
    return vault, runs, window, warnings


def _shown(vault: Any, file: str) -> str:
    """A log file's path relative to the vault, when it is inside it."""
    try:
        return vault.layout.rel(Path(file))
    except ValueError:
        return file


def _with_warnings(data: dict[str, Any], warnings: list[str]) -> dict[str, Any]:
    if warnings:
        data["warnings"] = warnings
    return data


def _table(report: dict[str, dict[str, Any]]) -> str:
    if not report:
        return "no runs recorded yet"
    rows = [f"{'skill':<28} {'runs':>7} {'avg':>6} {'recent':>6}  {'trend':<9} {'fails':>5}  flag"]
    for name, d in report.items():
        recent = "-" if d["recentAvg"] is None else f"{d['recentAvg']:.3f}"
        rows.append(f"{name[:28]:<28} {d['runs']:>7} {d['avgScore']:>6.3f} {recent:>6}  "
                    f"{d['trend']:<9} {d['consecutiveFails']:>5}  {'FLAGGED' if d['flagged'] else ''}")
    return "\n".join(rows)


@click.command()
@DAYS
@global_options
def health(days: int | None) -> None:
    """Per-skill health: runs, avgScore, recentAvg, trend, lastFail, consecutiveFails,
    flagged (the rules of agent-skill-bus; threshold health.flag_below)."""
    from gitvault.core.clock import iso, now
    from gitvault.runs import health as rules

    vault, runs, window, warnings = _analysis(days)
    moment = now()
    report = rules.analyze(runs, moment, window, rules.Thresholds.from_config(vault.config.health))
    data = {"lastUpdated": iso(moment), "skills": rules.to_json_numbers(report)}
    emit(_with_warnings(data, warnings), lambda: _table(report))


@click.command()
@DAYS
@FAIL_ON
@global_options
def flagged(days: int | None, fail_on: bool) -> None:
    """Skills that are flagged: low average, declining or broken."""
    from gitvault.core.clock import now
    from gitvault.runs import health as rules

    vault, runs, window, warnings = _analysis(days)
    report = rules.analyze(runs, now(), window, rules.Thresholds.from_config(vault.config.health))
    found = rules.flagged(report)
    emit(_with_warnings({"count": len(found), "skills": rules.to_json_numbers(found)}, warnings),
         lambda: _table({f["name"]: f for f in found}) if found else "no flagged skills")
    if fail_on and found:
        click.get_current_context().exit(1)


@click.command()
@FAIL_ON
@global_options
def drift(fail_on: bool) -> None:
    """Skills whose average dropped more than health.drift_threshold (0.15) from last
    week to this week."""
    from gitvault.core.clock import now
    from gitvault.runs import health as rules

    vault, runs, window, warnings = _analysis(None)
    found = rules.drift(runs, now(), rules.Thresholds.from_config(vault.config.health), window)
    emit(_with_warnings({"count": len(found), "skills": rules.to_json_numbers(found)}, warnings),
         lambda: "\n".join(f"{d['name']}: {d['lastWeekAvg']:.3f} -> {d['thisWeekAvg']:.3f} "
                           f"(drop {d['drop']:.3f})" for d in found) or "no drifting skills")
    if fail_on and found:
        click.get_current_context().exit(1)


@click.command()
@DAYS
@click.option("--no-color", is_flag=True, help="Plain text (also when NO_COLOR is set or "
                                                "output is not a terminal).")
@click.option("--html", "html_file", metavar="FILE",
              help="Write one self-contained HTML file with per-skill score trends.")
@global_options
def dashboard(days: int | None, no_color: bool, html_file: str | None) -> None:
    """Skill health at a glance: flagged and drifting skills first."""
    import os
    import sys

    from gitvault.core.clock import now
    from gitvault.runs import dashboard as view
    from gitvault.runs import health as rules

    vault, runs, window, warnings = _analysis(days)
    moment = now()
    thresholds = rules.Thresholds.from_config(vault.config.health)
    report = rules.analyze(runs, moment, window, thresholds)
    drift_rows = rules.drift(runs, moment, thresholds, window)
    data: dict[str, Any] = {"skills": rules.to_json_numbers(report),
                            "drift": rules.to_json_numbers(drift_rows)}
    if html_file:
        from gitvault.skills.model import write_atomic

        write_atomic(Path(html_file), view.render_html(report, drift_rows, runs, moment, window,
                                                       thresholds.flag_below))
        data["html"] = str(Path(html_file).resolve())
    color = not no_color and not os.environ.get("NO_COLOR") and sys.stdout.isatty()
    emit(_with_warnings(data, warnings),
         lambda: (f"wrote {data['html']}\n" if html_file else "") + view.render_terminal(
             report, {d["name"] for d in drift_rows}, window, None, color))


@click.command()
@click.option("--dry-run", is_flag=True, help="Show what would change; change nothing.")
@global_options
def lifecycle(dry_run: bool) -> None:
    """Mark active skills stale: not injected for lifecycle.stale_after_days (14), or
    failing at least lifecycle.stale_failure_rate (70%) of at least lifecycle.min_outcomes
    (3) outcomes since their last change. Each change is a new version."""
    changes, warnings = state().vault().lifecycle(dry_run)
    emit(_with_warnings({"dryRun": dry_run, "changes": changes}, warn(warnings)),
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
    emit(_with_warnings(result, warnings),
         f"imported {result['runs']['imported']} runs "
         f"({result['runs']['skipped']} already imported)"
         + (f"; queue: {queue['prs']} PRs, {queue['locks']} locks, {queue['dags']} DAGs "
            f"({queue['skipped']} already imported)" if queue else "")
         + (f"; knowledge: {k['diffs']} diffs, {k['sources']} source states "
            f"({k['skipped']} already imported)" if (k := result.get("knowledge")) else ""))
