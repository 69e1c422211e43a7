"""The hot commands (``record-run`` and the queue): one argv table, their handlers and
text output, and one parser, with no click on their path.

Agents call these all the time, and importing click costs more than the command's
work. :data:`COMMANDS` drives both front ends: :func:`try_run` parses a plain
invocation itself, and ``gitvault/cli/common.py`` builds the click commands from the
same table. Anything :func:`parse` does not fully understand (``--help``, an unknown or
repeated option, a missing value, a value starting with ``-``) returns None, and the
caller hands the arguments to click. Both paths run :func:`execute` and report errors
through :mod:`gitvault.cli.report`, so they print the same bytes and exit codes.
"""

from __future__ import annotations

import json
import sys

TYPE_CHECKING = False  # typing is not imported at run time (the hot path)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from gitvault.queue.commands import Queue
    from gitvault.vault.facade import Vault

class Opt:
    """One option: its keyword name, flag, help; ``metavar`` None makes it a flag; a
    ``required`` one without a default is refused by :func:`execute` on both paths."""

    def __init__(self, name: str, flag: str, help: str, metavar: str | None = "TEXT",
                 default: Any = None, kind: type = str, required: bool = False) -> None:
        self.name, self.flag, self.help = name, flag, help
        self.metavar, self.default, self.kind, self.required = metavar, default, kind, required


class Cmd:
    """One command: its one-line summary, help, handler, positional argument (its metavar and keyword name),
    options; ``writes`` commits the queue stream afterwards when logs.autocommit; the
    handler gets the vault's queue (``on_queue``) or the vault."""

    def __init__(self, summary: str, help: str, run: Callable[..., tuple[Any, str]],
                 arg: str | None = None,
                 options: tuple[Opt, ...] = (), writes: bool = False, arg_name: str = "",
                 on_queue: bool = True) -> None:
        self.help, self.run, self.arg, self.options, self.writes = help, run, arg, options, writes
        self.arg_name, self.on_queue = arg_name, on_queue
        self.summary = summary  # the line ``gitvault --help`` shows


class Globals:
    """The global options: --vault, --node, --json."""

    def __init__(self, vault: str | None = None, node: str | None = None,
                 json: bool = False) -> None:
        self.vault, self.node, self.json = vault, node, json
        self.notices: list[str] = []  # what the command tells its user on stderr


def _split(value: str | None) -> list[str]:
    return [part.strip() for part in (value or "").split(",") if part.strip()]


def _pr_line(pr: dict[str, Any]) -> str:
    files = f"  [{', '.join(pr['affectedFiles'])}]" if pr["affectedFiles"] else ""
    return f"{pr['id']}  {pr['priority']:<8}  {pr['agent']}: {pr['task']}{files}"


# -- handlers: (vault or its queue, **options) -> (data, text) -----------------------
def record_run(v: Vault, **o: Any) -> tuple[Any, str]:
    entry = v.record_run(**o)
    return ({"status": "recorded", "entry": entry},
            f"recorded {entry['result']} run of {entry['skill']} (score {entry['score']})")


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
    "record-run": Cmd("Append one skill run to logs/runs/.",
        "Append one skill run to logs/runs/ (no commit; see 'gitvault commit').",
        record_run, on_queue=False, options=(
        Opt("agent", "--agent", "Who ran the skill.", default="default"),
        Opt("skill", "--skill", "The skill that ran (required).", required=True),
        Opt("task", "--task", "What the run was for (secrets are redacted).", default=""),
        Opt("result", "--result", "success, partial or fail.", default="success"),
        Opt("score", "--score", "A number from 0 to 1 (clamped).", default="1.0"),
        Opt("notes", "--notes", "Free text (secrets are redacted).", default=""))),
    "enqueue": Cmd("Add a prompt request to the queue.",
        "Add a prompt request to the queue (an identical queued one is a duplicate).",
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
    "dispatch": Cmd("Prompt requests ready to start, highest priority first.",
        "List the next prompt requests ready to start: dependencies done, files "
        "free; by priority, then oldest first. Releases expired locks first.",
        dispatch, writes=True, options=(
        Opt("max", "--max", "At most N (capped by queue.max_per_dispatch).", "N", 5, int),)),
    "start": Cmd("Start a prompt request (takes its file locks).",
        "Lock a prompt request's files and mark it running (exit 3 if it is not "
        "queued, waits for a dependency, or a file is locked).", start, "ID", writes=True,
        arg_name="pr_id"),
    "complete": Cmd("Mark a prompt request done (releases its locks).",
        "Mark a prompt request done and release its locks.", complete, "ID",
        writes=True, arg_name="pr_id", options=(Opt("result", "--result", "The outcome.", default="done"),)),
    "fail": Cmd("Mark a prompt request failed (blocks its dependents).",
        "Mark a prompt request failed, release its locks, and block every PR that "
        "depends on it, transitively.", fail, "ID", writes=True, arg_name="pr_id",
        options=(Opt("reason", "--reason", "Why it failed.", default="unknown"),)),
    "stats": Cmd("Queue counts by status, locks, expired deadlines.",
        "Queue statistics: total, by status, active locks, expired deadlines.", stats),
    "locks": Cmd("Show file locks; release expired ones.",
        "Show active file locks, or release those past their TTL (their running PRs "
        "fail with lock_timeout).", locks, options=(
        Opt("release_expired", "--release-expired", "Release expired locks.", None, False, bool),)),
    "dag": Cmd("State of one DAG of prompt requests.",
        "Show a DAG's state: PR counts by status, and its PRs.", dag, "ID",
        arg_name="dag_id"),
    "dag-create": Cmd("Create a whole DAG of prompt requests from a file.",
        "Create a DAG from FILE (YAML or JSON: {dagId, tasks: [{key, task, "
        "dependsOn: [key, ...], ...}]}): all its PRs, or none.", dag_create, "FILE",
        writes=True, arg_name="file"),
}


def _check_required(name: str, options: dict[str, Any]) -> None:
    from gitvault.errors import InvalidInput

    for opt in COMMANDS[name].options:
        if opt.required and options.get(opt.name) in (None, ""):
            raise InvalidInput(f"missing option '{opt.flag}' (see 'gitvault {name} --help')")


def execute(name: str, g: Globals, options: dict[str, Any]) -> tuple[Any, str, list[str]]:
    """Run hot command ``name``: (data, text, warnings), the JSON data holding the
    warnings too. Raises GitvaultError."""
    from gitvault.vault.facade import Vault

    _check_required(name, options)
    vault = Vault.open(g.vault, g.node)
    g.notices = vault.notices
    if vault.config.logs.autocommit:  # only then may a hot command wait for the git lock
        from gitvault.cli.report import install_wait_note

        install_wait_note()
    cmd = COMMANDS[name]
    data, text = cmd.run(vault.queue if cmd.on_queue else vault, **options)
    if cmd.writes:
        vault.autocommit("queue")
    warnings = vault.warnings()
    if warnings and isinstance(data, dict):
        data["warnings"] = warnings
    return data, text, warnings


def render(data: Any, text: str, as_json: bool) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) if as_json else text


# -- the click-free path ---------------------------------------------------------------
GLOBALS = ("--json", "--vault", "--node")


def parse(argv: list[str]) -> tuple[str, Globals, dict[str, Any]] | None:
    """(command, globals, options) for a plain hot invocation, else None. Global options
    may stand before or after the command; ``--flag=value`` and ``--flag value`` both
    work."""
    g = Globals()
    name: str | None = None
    cmd: Cmd | None = None
    options: dict[str, Any] = {}
    by_flag: dict[str, Opt] = {}
    given: set[str] = set()
    positional: list[str] = []
    items = _split_equals(argv)
    if items is None:
        return None
    index = 0
    while index < len(items):
        token = items[index]
        if token in GLOBALS:
            index = _global(items, index, g)
            if index < 0:
                return None
            continue
        if cmd is None:
            if token not in COMMANDS:
                return None
            name, cmd = token, COMMANDS[token]
            by_flag = {opt.flag: opt for opt in cmd.options}
            options = {opt.name: opt.default for opt in cmd.options}
            index += 1
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
            if index + 1 >= len(items) or items[index + 1].startswith("-"):
                return None
            value = items[index + 1]
            if opt.kind is int:
                if not (value.isascii() and value.isdigit()):
                    return None
                options[opt.name] = int(value)
            else:
                options[opt.name] = value
            index += 2
            continue
        positional.append(token)
        index += 1
    if cmd is None or name is None or len(positional) != (1 if cmd.arg else 0):
        return None
    if cmd.arg:
        options[cmd.arg_name] = positional[0]
    return name, g, options


def _split_equals(argv: list[str]) -> list[str] | None:
    """``--flag=value`` as two tokens; ``--`` (end of options) is left to click."""
    out: list[str] = []
    for token in argv:
        if token == "--":
            return None
        if token.startswith("--") and "=" in token:
            flag, _, value = token.partition("=")
            if flag == "--json":
                return None
            out += [flag, value]
        else:
            out.append(token)
    return out


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
    """Run a plain hot command without click and return its exit code; None when the
    arguments are not plain (the caller then runs the click CLI with them)."""
    parsed = parse(argv)
    if parsed is None:
        return None
    name, g, options = parsed
    try:
        data, text, warnings = execute(name, g, options)
    except (Exception, KeyboardInterrupt) as exc:
        from gitvault.cli.report import report  # the one reporter, loaded on an error only

        return report(exc, g.json)
    for line in warnings:
        sys.stderr.write(f"gitvault: warning: {line}\n")
    for line in g.notices:
        sys.stderr.write(f"gitvault: {line}\n")
    out = render(data, text, g.json)
    try:
        if out:
            sys.stdout.write(out + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        return 1
    return 0
