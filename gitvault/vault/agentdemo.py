"""The demo's agent-facing steps: search with its reasons, the queue working the
watcher's prompt request, the skills handed to Claude Code or Codex as an Agent Skills
folder and an AGENTS.md index, and the HTML health report."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from gitvault.core.clock import now
from gitvault.core.files import write_atomic
from gitvault.vault.facade import Vault

Say = Callable[[str], None]
Step = Callable[[str, str], None]
QUERY = "a test fails on CI only sometimes"


def agent_cycle(vault: Vault, base: Path, say: Say, step: Step) -> dict[str, Any]:
    """Run the four steps; returns what each produced."""
    return {"search": _search(vault, say, step), "queue": _queue(vault, say, step),
            "export": _export(vault, base, say, step), "report": _report(vault, base, say, step)}


def _search(vault: Vault, say: Say, step: Step) -> list[str]:
    from gitvault.retrieval.inject import explanation, search_hits

    step("Search ranks skills by what they say and how they did; --explain says why",
         f'gitvault search "{QUERY}" --explain')
    hits, _ = search_hits(vault, QUERY, 3, explain=True)
    for hit in hits:
        why = explanation(hit)
        terms = ", ".join(f"{t['term']} {t['score']:.2f}" for t in why["terms"][:4])
        say(f"  {hit.name:<28} {hit.score:.2f}  terms: {terms or '-'}  "
            f"(usage factor {why['boost']:.2f})")
    return [hit.name for hit in hits]


def _queue(vault: Vault, say: Say, step: Step) -> dict[str, Any]:
    step("An agent takes the watcher's prompt request: dispatch, start (file locks), complete",
         "gitvault dispatch; gitvault start PR_ID; gitvault complete PR_ID --result ...")
    ready = vault.queue.dispatch()["prs"]
    if not ready:
        say("  nothing ready")
        return {}
    pr = ready[0]
    say(f"  ready: {pr['id']}  {pr['priority']}  from {pr['source']}: {pr['task'][:60]}")
    vault.queue.start(pr["id"])
    say(f"  started {pr['id']} (its files are locked until it ends)")
    done = vault.queue.complete(pr["id"], "upgraded the client to requests 3")
    say(f"  completed {pr['id']}: {done.get('status', 'done')}")
    vault.autocommit("queue")
    sha, lines = vault.commit_logs()
    say(f"  committed {lines} queue records as {sha[:12] if sha else '-'}")
    return {"id": pr["id"], "priority": pr["priority"], "source": pr["source"]}


def _export(vault: Vault, base: Path, say: Say, step: Step) -> dict[str, Any]:
    from gitvault.vault import interchange

    project = base / "agent-project"
    step("Claude Code and Codex load the skills as they are: an Agent Skills folder and an "
         "AGENTS.md index",
         f"cd {project} && gitvault export .claude/skills && gitvault export . --format agents-md")
    result = interchange.export_folders(vault, project / ".claude" / "skills")
    for entry in result["exported"][:4]:
        say(f"  exported {entry['name']} v{entry['version']} -> {entry['path']}")
    if len(result["exported"]) > 4:
        say(f"  ... and {len(result['exported']) - 4} more")
    for skipped in result["skipped"]:
        say(f"  skipped {skipped['name']}: {skipped['reason']}")
    index = interchange.export_index(vault, project)
    say(f"  {index['action']} {index['file']}: {len(index['skills'])} skills, "
        f"most used first ({index['chars']} characters)")
    return {"folders": len(result["exported"]), "index": index["file"],
            "indexed": len(index["skills"])}


def _report(vault: Vault, base: Path, say: Say, step: Step) -> str:
    from gitvault.runs import dashboard as view
    from gitvault.runs.report import dashboard_report

    page = base / "health.html"
    step("A health report to share: one self-contained page, flagged skills first",
         f"gitvault dashboard --html {page}")
    runs, warnings = vault.runs(), vault.warnings()
    moment, section = now(), vault.config.health
    _, report, drift_rows = dashboard_report(runs, moment, section, warnings, None)
    write_atomic(page, view.html_page(runs, vault.layout.stream("runs"), moment,
                                      section.window_days, section.flag_below, report, drift_rows))
    say(f"  wrote {page} ({len(report)} skills; open it in a browser)")
    return str(page)
