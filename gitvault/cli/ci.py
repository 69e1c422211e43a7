"""``gitvault ci``: the steps of the GitHub workflow ``init --github`` installs (SPEC §6):
``ci report`` (job summary and ``health`` record) and ``ci issues`` (one issue per
flagged or drifting skill). Problem skills are news, not failures: both exit 0 then."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click

from gitvault.cli.common import dry_run_option, emit, global_options, state, warn
from gitvault.cli.runs import DAYS

SUMMARY = click.option("--summary", "summary_file", metavar="FILE",
                       help="Append the markdown to FILE (default: $GITHUB_STEP_SUMMARY, "
                            "the job summary; without either it goes to stdout).")


def _summary_path(option: str | None) -> Path | None:
    value = option or os.environ.get("GITHUB_STEP_SUMMARY") or None
    return Path(value) if value else None


@click.group()
@global_options
def ci() -> None:
    """The GitHub workflow's steps: report and issues.

    The workflow of 'gitvault init --github' runs 'gitvault ci report', then 'gitvault
    ci issues', then 'gitvault sync'. Flagged or drifting skills do not fail them; only
    gitvault failing does.
    """


@ci.command()
@DAYS
@SUMMARY
@global_options
def report(days: int | None, summary_file: str | None) -> None:
    """Check the vault and report: health, flags, drift, lifecycle, knowledge watcher.

    Writes a markdown report (flagged and drifting skills first, with why, then a
    table of every skill) to the job summary and appends one 'health' record; the
    lifecycle marks skills stale, and the knowledge watcher runs when watch.sources
    names sources. Skill names and notes are redacted and escaped.
    """
    from gitvault.ci.report import append_summary, open_summary, run_report

    vault = state().vault()
    target = _summary_path(summary_file)
    fd = open_summary(target) if target is not None else None
    try:
        result, markdown = run_report(vault, days=days)
    except BaseException:
        if fd is not None:
            os.close(fd)
        raise
    warn(result.get("warnings", []))
    if fd is not None:
        append_summary(fd, markdown)
    result["summary"] = str(target) if target is not None else None
    result["markdown"] = markdown
    emit(result, lambda: markdown if target is None else
         f"wrote the report to {target}: {len(result['flagged'])} flagged, "
         f"{len(result['drifting'])} drifting of {result['skills']} skills; "
         f"health record {result['record']['id']}")


@ci.command()
@DAYS
@click.option("--repo", metavar="OWNER/NAME",
              help="The GitHub repository (default: $GITHUB_REPOSITORY, else gh's default "
                   "for the working folder).")
@dry_run_option("List the issues and print what would change")
@click.option("--max-open", type=click.IntRange(min=0), default=20, show_default=True,
              metavar="N", help="Open at most N new issues per run; the rest wait for the next.")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=60.0,
              show_default=True, metavar="SECONDS", help="How long one gh call may take.")
@click.option("--summary", "summary_file", metavar="FILE",
              help="Append an Issues section (what was opened, updated, closed) to FILE "
                   "(default: $GITHUB_STEP_SUMMARY; nothing without either).")
@global_options
def issues(days: int | None, repo: str | None, dry_run: bool, max_open: int, timeout: float,
           summary_file: str | None) -> None:
    """Open, update or close one GitHub issue per flagged or drifting skill.

    Through the gh CLI (GH_TOKEN in the workflow): open issues are found with 'gh issue
    list', a problem skill without one gets 'gh issue create', one whose state changed
    gets 'gh issue edit' and a comment (nothing when unchanged), and a skill healthy
    again has its issue closed. Running it twice changes nothing more.
    """
    from gitvault.ci.findings import run_check
    from gitvault.ci.gh import Gh
    from gitvault.ci.issues import summary_section, sync_issues
    from gitvault.ci.report import append_summary, github_context, open_summary
    from gitvault.core.clock import now

    vault = state().vault()
    target = None if dry_run else _summary_path(summary_file)
    if target is not None:
        os.close(open_summary(target))  # a bad path is refused before gh is asked
    runs = vault.runs()
    check = run_check(runs, vault.layout, now(), vault.config.health, days)
    warn(check.warnings)
    gh = Gh(repo or os.environ.get("GITHUB_REPOSITORY"), timeout)
    result = sync_issues(check, gh, dry_run=dry_run, max_open=max_open,
                         run_url=github_context(os.environ).get("runUrl"))
    if dry_run:
        result["commands"] = gh.calls
    if target is not None:
        append_summary(open_summary(target), summary_section(result))
    emit(result, lambda: _text(result))


def _text(result: dict[str, Any]) -> str:
    from gitvault.ci.issues import outcomes

    return "\n".join(f"{what}: {item['title']}" for what, item in outcomes(result)) \
        or "no issues to open, update or close"
