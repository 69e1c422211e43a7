"""``gitvault ci report``: the check, the lifecycle and the knowledge watcher in one
run; the job summary's markdown; one ``health`` record (SPEC §3) summing it up."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitvault.ci.findings import Check, check_json, run_check
from gitvault.ci.summary import render
from gitvault.core.clock import now

MAX_FINDINGS = 100  # findings detailed in one health record (all are named in the lists)

if TYPE_CHECKING:
    from gitvault.vault.facade import Vault


def github_context(environ: Mapping[str, str]) -> dict[str, str]:
    """The workflow run this is (``repository``, ``runId``, ``workflow``, ``sha``,
    ``runUrl``), from the variables GitHub Actions sets; empty elsewhere."""
    if environ.get("GITHUB_ACTIONS") != "true":
        return {}
    names = {"repository": "GITHUB_REPOSITORY", "runId": "GITHUB_RUN_ID",
             "workflow": "GITHUB_WORKFLOW", "sha": "GITHUB_SHA"}
    found = {key: environ[var] for key, var in names.items() if environ.get(var)}
    server = environ.get("GITHUB_SERVER_URL", "https://github.com")
    if "repository" in found and "runId" in found:
        found["runUrl"] = f"{server}/{found['repository']}/actions/runs/{found['runId']}"
    return found


def health_record(check: Check, lifecycle: list[dict[str, Any]],
                  knowledge: dict[str, Any] | None, github: dict[str, str]) -> dict[str, Any]:
    """The ``health`` record of one check (``id``, ``ts`` and ``node`` are added when it
    is appended)."""
    return {
        "op": "check", "window": check.window, "skills": len(check.health),
        "runs": sum(h["runs"] for h in check.health.values()),
        "flagged": check.flagged, "drifting": check.drifting,
        "findings": [{"name": f.name, "status": f.status, "why": f.why,
                      "avgScore": f.health["avgScore"], "trend": f.health["trend"]}
                     for f in check.findings[:MAX_FINDINGS]],
        "lifecycle": [c["name"] for c in lifecycle],
        "knowledge": None if knowledge is None else {
            "checked": len(knowledge["checked"]), "diffs": len(knowledge["diffs"]),
            "failed": len(knowledge["failed"])},
        **({"github": github} if github else {}),
    }


def run_report(vault: Vault, *, days: int | None = None,
               environ: Mapping[str, str] | None = None) -> tuple[dict[str, Any], str]:
    """One ``ci report``: returns its ``--json`` object and the summary's markdown.
    The lifecycle changes skills (each a commit); the watcher runs only when
    ``watch.sources`` names sources; the ``health`` record is appended (committed
    by ``logs.autocommit`` or the next ``gitvault commit``/``sync``)."""
    env = os.environ if environ is None else environ
    check = run_check(vault.runs(), vault.layout, now(), vault.config.health, days)
    lifecycle, lifecycle_warnings = vault.lifecycle()
    knowledge = None
    if vault.config.watch.sources:
        from gitvault.knowledge.command import commands_allowed
        from gitvault.knowledge.watch import watch

        knowledge = watch(vault.layout, vault.node, vault.config,
                          allow_commands=commands_allowed(vault.root))
        check.warnings += [str(w) for w in knowledge.pop("warnings", [])]
    check.warnings += lifecycle_warnings
    github = github_context(env)
    record = vault.append("health", health_record(check, lifecycle, knowledge, github))
    markdown = render(check, lifecycle, knowledge, record["id"], github.get("runUrl"))
    result = {**check_json(check), "lifecycle": lifecycle, "knowledge": knowledge,
              "record": record}
    return result, markdown


def open_summary(path: Path) -> int:
    """An append descriptor on the job summary file (GitHub joins what every step
    appends), opened before the work so a bad path changes nothing."""
    from gitvault.errors import InvalidInput

    try:
        return os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0),
                       0o644)
    except OSError as exc:
        raise InvalidInput(f"{path}: cannot append the summary there "
                           f"({exc.strerror or exc})") from None


def append_summary(fd: int, markdown: str) -> None:
    """Write ``markdown`` to the descriptor of :func:`open_summary` and close it."""
    try:
        data = markdown.encode("utf-8")
        while data:
            data = data[os.write(fd, data):]
    finally:
        os.close(fd)
