"""The job summary's markdown (``$GITHUB_STEP_SUMMARY``): the problem skills first with
why, a table of every skill, the lifecycle changes, the knowledge watcher, warnings.
Everything that came from the vault or a source is shown through
:mod:`gitvault.ci.markdown`."""

from __future__ import annotations

from typing import Any

from gitvault.ci.findings import Check, Finding
from gitvault.ci.markdown import cell, code, table
from gitvault.core.clock import iso

MAX_ROWS = 200  # skills in the table (a summary is capped at 1 MiB per step)
MAX_ITEMS = 50  # lifecycle changes, sources, diffs, warnings shown


def _score(value: Any) -> str:
    return "–" if value is None else f"{value:.3f}"


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def finding_line(finding: Finding) -> str:
    """One bullet: the skill, its status, why, and its latest failure's notes."""
    line = f"- {code(finding.name)} is **{finding.status}**: " + "; ".join(finding.why) + "."
    fail = finding.last_failure
    if fail is not None:
        line += f" Latest failure ({code(fail['ts'], 40)}): " + (
            code(fail["notes"]) if fail["notes"] else "no notes")
    return line


def skills_table(check: Check) -> str:
    problems = [f.name for f in check.findings]
    order = problems + [n for n in check.health if n not in set(problems)]
    rows = []
    for name in order[:MAX_ROWS]:
        h = check.health[name]
        finding = check.finding(name)
        fail = check.failures.get(name)
        rows.append([cell(name), str(h["runs"]), _score(h["avgScore"]), _score(h["recentAvg"]),
                     h["trend"], str(h["consecutiveFails"]),
                     f"**{finding.status}**" if finding else "ok",
                     cell(fail["notes"], 120) if fail and fail["notes"] else "–"])
    out = table(["skill", "runs", "avg score", "recent", "trend", "fails in a row", "status",
                 "last failure note"], rows, "_rrr_r__")
    if len(order) > MAX_ROWS:
        out += f"\n\n…and {len(order) - MAX_ROWS} more skills (`gitvault health` lists all)."
    return out


def _more_rows(count: int) -> str | None:
    return f"- …and {count - MAX_ROWS} more" if count > MAX_ROWS else None


def _more(items: list[Any]) -> str:
    return f"\n- …and {len(items) - MAX_ITEMS} more" if len(items) > MAX_ITEMS else ""


def knowledge_section(result: dict[str, Any] | None) -> list[str]:
    if result is None:
        return ["No knowledge sources configured (`watch.sources` in `gitvault.yaml`)."]
    checked = result["checked"]
    lines = [f"{_plural(len(checked), 'source')} checked, {_plural(len(result['diffs']), 'new diff')}, "
             f"{len(result['failed'])} failed, {len(result['notDue'])} not due."]
    if checked:
        rows = [[cell(r["source"], 60), r["type"], r["status"],
                 cell(r["error"] if r["status"] == "failed" else r["value"] or "", 120)]
                for r in checked[:MAX_ITEMS]]
        lines += ["", table(["source", "type", "status", "value or error"], rows)]
    for diff in result["diffs"][:MAX_ITEMS]:
        lines.append(f"- diff from {code(diff['source'], 60)} ({code(diff['severity'], 20)}): "
                     f"{code(diff['detail'])}")
    return lines


def render(check: Check, lifecycle: list[dict[str, Any]], knowledge: dict[str, Any] | None,
           record_id: str, run_url: str | None = None) -> str:
    """The whole summary (ends with a newline, so appends stay apart)."""
    count = len(check.findings)
    head = (f"## gitvault: {_plural(count, 'skill')} need{'s' if count == 1 else ''} attention"
            if count else "## gitvault: all skills healthy")
    lines: list[str | None] = [head, "",
             f"{len(check.flagged)} flagged, {len(check.drifting)} drifting of "
             f"{_plural(len(check.health), 'skill')} with runs (window {check.window} days, "
             f"checked {iso(check.moment)}; health record `{record_id}`)."
             + (f" [Workflow run]({run_url})" if run_url else ""), ""]
    if check.findings:
        lines += ["### Flagged and drifting", "", *map(finding_line, check.findings[:MAX_ROWS]),
                  _more_rows(len(check.findings)), ""]
    lines += ["### Skills", "", skills_table(check) if check.health else "No runs recorded yet.", ""]
    lines += ["### Lifecycle", ""]
    lines += [f"- {code(c['name'])} marked stale: {code(c['reason'])}" for c in lifecycle[:MAX_ITEMS]]
    lines += [_more(lifecycle).lstrip("\n")] if len(lifecycle) > MAX_ITEMS else []
    lines += [] if lifecycle else ["No lifecycle changes."]
    lines += ["", "### Knowledge watcher", "", *knowledge_section(knowledge), ""]
    if check.warnings:
        lines += ["### Warnings", "", *(f"- {code(w)}" for w in check.warnings[:MAX_ITEMS]),
                  _more(check.warnings).lstrip("\n"), ""]
    return "\n".join(line for line in lines if line is not None) + "\n"
