"""``gitvault ci issues``: one open GitHub issue per flagged or drifting skill (SPEC §6).

Each issue gitvault opens carries a marker line, ``<!-- gitvault-ci skill=HEX
state=DIGEST -->`` (the skill's name in hex, a digest of what the issue says), which
is how the next run finds it among ``gh issue list --json``'s open issues. A run:

- opens an issue (``gh issue create --title "gitvault: <skill> is flagged"``) for a
  problem skill that has none;
- edits it (title and body) and comments what changed when the skill's state did (a
  different status, reasons, numbers or latest failure), and does nothing when it
  did not, so running twice adds nothing;
- closes it with a comment once the skill is neither flagged nor drifting.

Skill names and run notes come from the vault (untrusted): titles get them redacted on
one line, bodies and comments only as code spans (:mod:`gitvault.ci.markdown`).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

from gitvault.ci.findings import Check, Finding
from gitvault.ci.gh import Gh
from gitvault.ci.markdown import code, plain, table
from gitvault.core.clock import iso

MARKER = re.compile(r"<!-- gitvault-ci skill=([0-9a-f]{2,}) state=([0-9a-f]{16}) -->")


@dataclass
class Action:
    kind: str  # "open", "update" or "close"
    skill: str
    title: str
    number: int | None = None
    body: str | None = None
    comment: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"skill": self.skill, "number": self.number, "title": self.title}


def marker(name: str, state: str) -> str:
    return f"<!-- gitvault-ci skill={name.encode('utf-8').hex()} state={state} -->"


def ours(issues: list[dict[str, Any]]) -> dict[str, tuple[int, str]]:
    """``{skill: (number, state digest)}`` of the open issues carrying gitvault's marker
    (the oldest one per skill)."""
    found: dict[str, tuple[int, str]] = {}
    for issue in sorted(issues, key=lambda i: i["number"]):
        match = MARKER.search(str(issue.get("body") or ""))
        if match is None:
            continue
        try:
            name = bytes.fromhex(match.group(1)).decode("utf-8")
        except ValueError:
            continue
        found.setdefault(name, (issue["number"], match.group(2)))
    return found


def _score(value: Any) -> str:
    return "–" if value is None else f"{value:.3f}"


def title_for(finding: Finding) -> str:
    return f"gitvault: {plain(finding.name, 80)} is {finding.status}"


def state_of(finding: Finding) -> str:
    """A digest of what the issue says about the skill (not when it was checked)."""
    fail = finding.last_failure or {}
    h = finding.health
    facts = [finding.status, finding.why, h["runs"], h["avgScore"], h["recentAvg"], h["trend"],
             h["consecutiveFails"], finding.drift, fail.get("ts"), fail.get("notes")]
    return hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()[:16]


def body_for(finding: Finding, check: Check) -> str:
    h = finding.health
    lines = [f"The skill {code(finding.name)} is **{finding.status}** (gitvault's check of "
             f"{iso(check.moment)}, window {check.window} days).", "", "Why:",
             *(f"- {why}" for why in finding.why), "",
             table(["runs", "avg score", "recent", "trend", "fails in a row"],
                   [[str(h["runs"]), _score(h["avgScore"]), _score(h["recentAvg"]), h["trend"],
                     str(h["consecutiveFails"])]], "rrr_r")]
    fail = finding.last_failure
    if fail is not None:
        lines += ["", f"Latest failure ({code(fail['ts'], 40)}): "
                  + (code(fail["notes"]) if fail["notes"] else "no notes")]
    lines += ["", "gitvault updates this issue while the skill stays flagged or drifting and "
              "closes it once the skill is healthy again (`gitvault health`, `gitvault drift`).",
              "", marker(finding.name, state_of(finding))]
    return "\n".join(lines) + "\n"


def _run_link(run_url: str | None) -> str:
    return f" ([workflow run]({run_url}))" if run_url else ""


def plan(check: Check, issues: list[dict[str, Any]], run_url: str | None = None
         ) -> tuple[list[Action], list[dict[str, Any]]]:
    """What to do so the open issues match the check: (actions, unchanged issues)."""
    mine = ours(issues)
    actions, unchanged = [], []
    for finding in check.findings:
        title = title_for(finding)
        if finding.name not in mine:
            actions.append(Action("open", finding.name, title, body=body_for(finding, check)))
            continue
        number, state = mine[finding.name]
        if state == state_of(finding):
            unchanged.append({"skill": finding.name, "number": number, "title": title})
            continue
        comment = (f"gitvault's check of {iso(check.moment)}{_run_link(run_url)}: "
                   f"{code(finding.name)} is still **{finding.status}**.\n\n"
                   + "\n".join(f"- {why}" for why in finding.why) + "\n")
        actions.append(Action("update", finding.name, title, number, body_for(finding, check),
                              comment))
    for name, (number, _) in mine.items():
        if check.finding(name) is not None:
            continue
        h = check.health.get(name)
        now = (f"average score {_score(h['avgScore'])}, trend {h['trend']}" if h
               else "it has no runs")
        actions.append(Action("close", name, f"gitvault: {plain(name, 80)}", number,
                              comment=f"gitvault's check of {iso(check.moment)}{_run_link(run_url)}: "
                                      f"{code(name)} is healthy again ({now}).\n"))
    return actions, unchanged


def sync_issues(check: Check, gh: Gh, *, dry_run: bool = False, run_url: str | None = None,
                max_open: int = 20) -> dict[str, Any]:
    """List, then open, update and close issues (none with ``dry_run``); returns the
    ``--json`` object ``{dryRun, opened, updated, closed, unchanged, deferred}``. At most
    ``max_open`` issues are opened per run (a vault cannot flood the repository); the
    rest are ``deferred`` to the next run."""
    actions, unchanged = plan(check, gh.open_issues(), run_url)
    result: dict[str, Any] = {"dryRun": dry_run, "repository": gh.repo, "opened": [],
                              "updated": [], "closed": [], "unchanged": unchanged, "deferred": []}
    for action in actions:
        if action.kind == "open" and len(result["opened"]) >= max_open:
            result["deferred"].append(action.to_json())
            continue
        if not dry_run:
            if action.kind == "open":
                action.number = gh.create(action.title, action.body or "")
            elif action.kind == "update" and action.number is not None:
                gh.edit(action.number, action.title, action.body or "")
                gh.comment(action.number, action.comment or "")
            elif action.number is not None:
                gh.close(action.number, action.comment or "")
        key = {"open": "opened", "update": "updated", "close": "closed"}[action.kind]
        result[key].append(action.to_json())
    return result


def outcomes(result: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(what happened, e.g. "opened #12" or "would open", the issue) for every issue of
    ``result``, in the order the summary and the terminal show them."""
    dry = result["dryRun"]
    words = {"opened": "would open" if dry else "opened",
             "updated": "would update" if dry else "updated",
             "closed": "would close" if dry else "closed",
             "unchanged": "unchanged", "deferred": "deferred to the next run"}
    return [(word + (f" #{item['number']}" if item.get("number") else ""), item)
            for key, word in words.items() for item in result[key]]


def summary_section(result: dict[str, Any]) -> str:
    """The job summary's ``Issues`` section."""
    lines = ["### Issues" + (" (dry run)" if result["dryRun"] else ""), ""]
    lines += [f"- {what}: {code(item['skill'])}" for what, item in outcomes(result)]
    if len(lines) == 2:
        lines.append("No issues to open, update or close.")
    return "\n".join(lines) + "\n\n"
