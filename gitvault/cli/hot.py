"""The queue commands without click: their options, handlers and text output.

``gitvault/cli/queue.py`` builds the click commands from :data:`COMMANDS`; the same
table drives :func:`try_run`, a click-free path for well-formed queue invocations
(the queue is on agents' hot path, and importing click costs more than the
command's work). Anything it does not fully understand (``--help``, an unknown or
repeated option, ``--opt=value``, a value starting with ``-``) returns None, and the
caller hands the arguments to click. Both paths print the same bytes.
"""

from __future__ import annotations

import json
import sys

from gitvault.errors import GitvaultError

TYPE_CHECKING = False  # typing is not imported at run time (the queue's hot path)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from gitvault.queue.commands import Queue

class Opt:
    """One option: its keyword name, flag, help; ``metavar`` None makes it a flag."""

    def __init__(self, name: str, flag: str, help: str, metavar: str | None = "TEXT",
                 default: Any = None, kind: type = str) -> None:
        self.name, self.flag, self.help = name, flag, help
        self.metavar, self.default, self.kind = metavar, default, kind


class Cmd:
    """One command: help, handler, positional argument (its metavar), options."""

    def __init__(self, help: str, run: Callable[..., tuple[Any, str]], arg: str | None = None,
                 options: tuple[Opt, ...] = (), writes: bool = False) -> None:
        self.help, self.run, self.arg, self.options, self.writes = help, run, arg, options, writes


class Globals:
    """The global options: --vault, --node, --json."""

    def __init__(self, vault: str | None = None, node: str | None = None,
                 json: bool = False) -> None:
        self.vault, self.node, self.json = vault, node, json


def open_queue(g: Globals) -> tuple[Queue, Any]:
    """The vault's queue and its validated config, without the Vault facade."""
    from gitvault.core import config as config_mod
    from gitvault.core.paths import VaultLayout, find_vault, resolve_node
    from gitvault.queue.commands import Queue

    layout = VaultLayout(find_vault(g.vault))
    cfg = config_mod.load(layout.config, layout.cache)
    return Queue(layout, resolve_node(g.node, layout.git_dir), cfg.queue), cfg


def _split(value: str | None) -> list[str]:
    return [part.strip() for part in (value or "").split(",") if part.strip()]


def _pr_line(pr: dict[str, Any]) -> str:
    files = f"  [{', '.join(pr['affectedFiles'])}]" if pr["affectedFiles"] else ""
    return f"{pr['id']}  {pr['priority']:<8}  {pr['agent']}: {pr['task']}{files}"


# -- handlers: (queue, **options) -> (data, text) ------------------------------------
def enqueue(q: Queue, **o: Any) -> tuple[Any, str]:
    fields = {"source": o["source"], "priority": o["priority"], "agent": o["agent"],
              "task": o["task"], "context": o["context"], "deadline": o["deadline"],
              "affectedFiles": _split(o["files"]), "affectedSkills": _split(o["skills"]),
              "dependsOn": _split(o["depends_on"]), "dagId": o["dag_id"]}
    data = q.enqueue(fields)
    if data["status"] == "duplicate":
        return data, f"duplicate: an identical PR is already queued ({data['existing']})"
    lines = [f"enqueued {_pr_line(data['pr'])}"]
    lines += [f"purged {pr_id} (queue full)" for pr_id in data.get("purged", [])]
    return data, "\n".join(lines)


def dispatch(q: Queue, **o: Any) -> tuple[Any, str]:
    data = q.dispatch(o["max"])
    lines = [_pr_line(pr) for pr in data["prs"]] or ["nothing to dispatch"]
    for key, what in (("expired", "deadline passed"), ("released", "expired lock released"),
                      ("blocked", "blocked by a failed dependency")):
        if data[key]:
            lines.append(f"{what}: {', '.join(data[key])}")
    return data, "\n".join(lines)


def start(q: Queue, **o: Any) -> tuple[Any, str]:
    data = q.start(o["pr_id"])
    files = data["pr"]["affectedFiles"]
    return data, f"started {o['pr_id']}" + (f" (locked: {', '.join(files)})" if files else "")


def complete(q: Queue, **o: Any) -> tuple[Any, str]:
    return q.complete(o["pr_id"], o["result"]), f"completed {o['pr_id']}"


def fail(q: Queue, **o: Any) -> tuple[Any, str]:
    data = q.fail(o["pr_id"], o["reason"])
    text = f"failed {o['pr_id']}: {o['reason']}"
    if data["blocked"]:
        text += f"\nblocked: {', '.join(data['blocked'])}"
    return data, text


def stats(q: Queue, **o: Any) -> tuple[Any, str]:
    data = q.stats()
    counts = ", ".join(f"{k} {v}" for k, v in data["byStatus"].items()) or "empty"
    return data, (f"prompt requests: {data['total']} ({counts})\n"
                  f"active locks: {data['activeLocks']}\nexpired deadlines: {data['expired']}")


def locks(q: Queue, **o: Any) -> tuple[Any, str]:
    if o["release_expired"]:
        data = q.release_expired()
        text = f"released {data['released']} expired lock(s), {data['active']} active"
        if data["prs"]:
            text += f"\nreleased: {', '.join(data['prs'])}"
        if data["blocked"]:
            text += f"\nblocked: {', '.join(data['blocked'])}"
        return data, text
    held = q.locks()
    lines = [f"{lock['prId']}  {lock['agent']}  since {lock['lockedAt']} (ttl {lock['ttl']}s): "
             f"{', '.join(lock['files'])}" for lock in held]
    return held, "\n".join(lines) or "no active locks"


def dag(q: Queue, **o: Any) -> tuple[Any, str]:
    data = q.dag(o["dag_id"])
    counts = ", ".join(f"{k} {data.get(k, 0)}" for k in
                       ("queued", "running", "done", "failed", "blocked", "purged"))
    lines = [f"DAG {data['dagId']}: {data['total']} PRs ({counts}), updated {data['updated']}"]
    for pr in data.get("prs", []):
        waits = f"  <- {', '.join(pr['dependsOn'])}" if pr.get("dependsOn") else ""
        lines.append(f"  {pr['id']}  {pr['status']:<8} {pr.get('task') or ''}{waits}")
    return data, "\n".join(lines)


def dag_create(q: Queue, **o: Any) -> tuple[Any, str]:
    from pathlib import Path

    from gitvault.queue.dag import read_dag_file

    data = q.create_dag(read_dag_file(Path(o["file"])))
    if data["status"] == "duplicate":
        return data, data["message"]
    lines = [f"created DAG {data['dagId']} with {data['count']} PRs"]
    lines += [f"  {key} -> {pr_id}" for key, pr_id in data["ids"].items()]
    return data, "\n".join(lines)


COMMANDS: dict[str, Cmd] = {
    "enqueue": Cmd("Add a prompt request to the queue (an identical queued one is a duplicate).",
                   enqueue, writes=True, options=(
        Opt("source", "--source", "Where it comes from (human, cron, webhook, ...).", default="human"),
        Opt("priority", "--priority", "critical, high, medium or low.", "LEVEL", "medium"),
        Opt("agent", "--agent", "The agent that should run it.", "NAME", "default"),
        Opt("task", "--task", "What to do (required).", default=""),
        Opt("context", "--context", "Background or the reason for it.", default=""),
        Opt("deadline", "--deadline", "immediate, 24h, week-end, next-cycle, none or an "
            "ISO 8601 time.", "WHEN", "none"),
        Opt("files", "--files", "Files it changes, comma-separated (repo:path; repo:* is the "
            "whole repo).", "a,b"),
        Opt("skills", "--skills", "Skills it concerns, comma-separated.", "a,b"),
        Opt("depends_on", "--depends-on", "PR ids that must be done first, comma-separated.", "IDS"),
        Opt("dag_id", "--dag-id", "The DAG it belongs to.", "ID"))),
    "dispatch": Cmd("List the next prompt requests ready to start: dependencies done, files "
                    "free; by priority, then oldest first. Releases expired locks first.",
                    dispatch, writes=True, options=(
        Opt("max", "--max", "At most N (capped by queue.max_per_dispatch).", "N", 5, int),)),
    "start": Cmd("Lock a prompt request's files and mark it running (exit 3 if it is not "
                 "queued, waits for a dependency, or a file is locked).", start, "ID", writes=True),
    "complete": Cmd("Mark a prompt request done and release its locks.", complete, "ID",
                    writes=True, options=(Opt("result", "--result", "The outcome.", default="done"),)),
    "fail": Cmd("Mark a prompt request failed, release its locks, and block every PR that "
                "depends on it, transitively.", fail, "ID", writes=True,
                options=(Opt("reason", "--reason", "Why it failed.", default="unknown"),)),
    "stats": Cmd("Queue statistics: total, by status, active locks, expired deadlines.", stats),
    "locks": Cmd("Show active file locks, or release those past their TTL (their running PRs "
                 "fail with lock_timeout).", locks, options=(
        Opt("release_expired", "--release-expired", "Release expired locks.", None, False, bool),)),
    "dag": Cmd("Show a DAG's state: PR counts by status, and its PRs.", dag, "ID"),
    "dag-create": Cmd("Create a DAG from FILE (YAML or JSON: {dagId, tasks: [{key, task, "
                      "dependsOn: [key, ...], ...}]}): all its PRs, or none.", dag_create, "FILE",
                      writes=True),
}
_ARG_NAMES = {"start": "pr_id", "complete": "pr_id", "fail": "pr_id", "dag": "dag_id",
              "dag-create": "file"}


def execute(name: str, g: Globals, options: dict[str, Any]) -> tuple[Any, str, list[str]]:
    """Run queue command ``name``: (data, text, warnings), the JSON data holding the
    warnings too. Raises GitvaultError."""
    queue, cfg = open_queue(g)
    data, text = COMMANDS[name].run(queue, **options)
    if COMMANDS[name].writes and cfg.logs.autocommit:
        from gitvault.vault.facade import Vault

        Vault(queue.log.layout.root, queue.node).commit_logs("gitvault: record queue")
    warnings = [str(w) for w in queue.warnings]
    if warnings and isinstance(data, dict):
        data["warnings"] = warnings
    return data, text, warnings


def render(data: Any, text: str, as_json: bool) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) if as_json else text


# -- the click-free path ---------------------------------------------------------------
def parse(argv: list[str]) -> tuple[str, Globals, dict[str, Any]] | None:
    """(command, globals, options) for a plain queue invocation, else None."""
    g = Globals()
    index = 0
    while index < len(argv) and argv[index] in ("--json", "--vault", "--node"):
        index = _global(argv, index, g)
        if index < 0:
            return None
    if index >= len(argv) or argv[index] not in COMMANDS:
        return None
    name = argv[index]
    cmd = COMMANDS[name]
    by_flag = {opt.flag: opt for opt in cmd.options}
    options: dict[str, Any] = {opt.name: opt.default for opt in cmd.options}
    given: set[str] = set()
    positional: list[str] = []
    index += 1
    while index < len(argv):
        token = argv[index]
        if token in ("--json", "--vault", "--node"):
            index = _global(argv, index, g)
            if index < 0:
                return None
            continue
        if token.startswith("-"):
            opt = by_flag.get(token)
            if opt is None or opt.name in given:
                return None
            given.add(opt.name)
            if opt.metavar is None:
                options[opt.name] = True
                index += 1
                continue
            if index + 1 >= len(argv) or argv[index + 1].startswith("-"):
                return None
            value = argv[index + 1]
            if opt.kind is int:
                if not value.isdigit():
                    return None
                options[opt.name] = int(value)
            else:
                options[opt.name] = value
            index += 2
            continue
        positional.append(token)
        index += 1
    if len(positional) != (1 if cmd.arg else 0):
        return None
    if cmd.arg:
        options[_ARG_NAMES[name]] = positional[0]
    return name, g, options


def _global(argv: list[str], index: int, g: Globals) -> int:
    token = argv[index]
    if token == "--json":
        g.json = True
        return index + 1
    if index + 1 >= len(argv) or argv[index + 1].startswith("-") or \
            getattr(g, token[2:]) is not None:
        return -1
    setattr(g, token[2:], argv[index + 1])
    return index + 2


def try_run(argv: list[str]) -> int | None:
    """Run a plain queue command without click and return its exit code; None when the
    arguments are not plain (the caller then runs the click CLI with them)."""
    parsed = parse(argv)
    if parsed is None:
        return None
    name, g, options = parsed
    try:
        data, text, warnings = execute(name, g, options)
    except GitvaultError as exc:
        sys.stderr.write(f"gitvault: error: {exc}\n")
        if g.json:
            error = {"error": {"code": exc.code, "message": str(exc)}}
            sys.stdout.write(json.dumps(error) + "\n")
        return exc.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("gitvault: error: interrupted\n")
        return 130
    for line in warnings:
        sys.stderr.write(f"gitvault: warning: {line}\n")
    out = render(data, text, g.json)
    try:
        if out:
            sys.stdout.write(out + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        return 1
    return 0
