"""The console script's entry point.

``record-run`` and the queue commands are what agents call all the time, so they
take a path that imports neither click nor YAML nor git: their arguments are
parsed without click when they are plain (here for record-run, in queue_cli.py
for the queue). Anything else — ``--help``, an unknown flag, a missing value —
goes to the click CLI, which owns the full behaviour and the error messages.
"""

from __future__ import annotations

import json
import sys

TYPE_CHECKING = False  # typing is not imported at run time: record-run starts fast
if TYPE_CHECKING:
    from typing import Any

RECORD_RUN_FLAGS = ("agent", "skill", "task", "result", "score", "notes")
GLOBAL_FLAGS = ("vault", "node")
QUEUE_COMMANDS = frozenset(("enqueue", "dispatch", "start", "complete", "fail", "stats", "locks",
                            "dag", "dag-create"))


def fail(code: str, message: str, exit_code: int, as_json: bool) -> None:
    """Report an error the gitvault way: one line on stderr, a JSON object with --json."""
    sys.stderr.write(f"gitvault: error: {message}\n")
    if as_json:
        sys.stdout.write(json.dumps({"error": {"code": code, "message": message}}) + "\n")
    sys.exit(exit_code)


def parse_plain(argv: list[str], command: str, flags: tuple[str, ...]
                ) -> dict[str, Any] | None:
    """``{flag: value, "json": bool}`` for plain ``[globals] COMMAND [flags]`` argv, else
    None (the click CLI then handles it, errors and help included)."""
    if command not in argv:
        return None
    values: dict[str, Any] = {"json": False}
    seen_command = False
    items = iter(argv)
    for arg in items:
        if arg == command and not seen_command:
            seen_command = True
            continue
        if arg == "--json":
            values["json"] = True
            continue
        if not arg.startswith("--"):
            return None
        name, eq, value = arg[2:].partition("=")
        allowed = flags + GLOBAL_FLAGS if seen_command else GLOBAL_FLAGS
        if name not in allowed or name in values:
            return None
        if not eq:
            value = next(items, None)  # type: ignore[assignment]
            if value is None:
                return None
        values[name] = value
    return values if seen_command else None


def record_run_fast(values: dict[str, Any]) -> None:
    from gitvault.core.config import load
    from gitvault.core.paths import VaultLayout, find_vault, resolve_node
    from gitvault.errors import GitvaultError

    try:
        layout = VaultLayout(find_vault(values.get("vault")))
        config = load(layout.config, layout.cache)
        node = resolve_node(values.get("node"), layout.git_dir)
        from gitvault.core.clock import now
        from gitvault.runs.record import record_run

        entry = record_run(layout.log_file("runs", node, now()), node,
                           agent=values.get("agent") or "default", skill=values.get("skill") or "",
                           task=values.get("task") or "", result=values.get("result") or "success",
                           score=values.get("score") or "1.0", notes=values.get("notes") or "")
        if config.logs.autocommit:
            from gitvault.vault.facade import Vault

            Vault(layout.root, node).commit_logs("gitvault: record run")
    except GitvaultError as exc:
        fail(exc.code, str(exc), exc.exit_code, values["json"])
    if values["json"]:
        sys.stdout.write(json.dumps({"status": "recorded", "entry": entry}, indent=2,
                                    ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(f"recorded {entry['result']} run of {entry['skill']} "
                         f"(score {entry['score']})\n")


def main() -> None:
    argv = sys.argv[1:]
    if "record-run" in argv:
        values = parse_plain(argv, "record-run", RECORD_RUN_FLAGS)
        if values is not None:
            record_run_fast(values)
            return
    if (argv and argv[0] in QUEUE_COMMANDS) or any(a in QUEUE_COMMANDS for a in argv[:4]):
        from gitvault.cli.hot import try_run

        code = try_run(argv)
        if code is not None:
            sys.exit(code)
    from gitvault.cli.app import main as cli_main

    cli_main(argv)
