"""``command``: a program's output. It runs only where this clone allows it (``git
config gitvault.allow-commands true`` or ``GITVAULT_ALLOW_COMMANDS=1``), never because
the committed ``gitvault.yaml`` names it: a synced vault cannot make a node run code."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from gitvault.core import git
from gitvault.core.program import ProgramFailed, run_program
from gitvault.knowledge.model import Context, LookupFailed, Observation, is_version

NETWORK = False
MAX_SHOWN = 200
MAX_OUTPUT = 8 << 20  # what is hashed; more is a runaway program
FAILED = {  # ProgramFailed.reason -> the message
    "unparsable": "command {command!r}: {e.detail}",
    "empty": "the command is empty",
    "cannot_run": "{e.argv0}: cannot run it ({e.detail})",
    "bad_argument": "{e.argv0!r}: cannot run it ({e.detail})",
    "too_large": "{e.argv0}: wrote more than {mib} MiB",
    "timeout": "{e.argv0}: no answer within {timeout:g} s",
    "exited": "{e.argv0}: exited {e.returncode}",
}
NOT_ALLOWED = ("command sources run only where 'git config gitvault.allow-commands true' "
               "or GITVAULT_ALLOW_COMMANDS=1 is set")


def commands_allowed(root: Path) -> bool:
    """Whether this clone (its git config or the environment) allows command sources."""
    return git.clone_allows(root, "GITVAULT_ALLOW_COMMANDS", "gitvault.allow-commands")


def check(source: dict[str, Any], ctx: Context) -> Observation:
    if not ctx.allow_commands:
        raise LookupFailed(NOT_ALLOWED)
    try:
        out = run_program(source["command"], cwd=ctx.root, stdin=None, timeout=ctx.timeout,
                          limit=MAX_OUTPUT).stdout
    except ProgramFailed as exc:
        raise LookupFailed(FAILED[exc.reason].format(
            e=exc, command=source["command"], timeout=ctx.timeout, mib=MAX_OUTPUT >> 20)) from None
    text = out.decode("utf-8", "replace").strip()
    if is_version(text):
        return Observation(text, text)
    if len(text) <= MAX_SHOWN and "\n" not in text:
        return Observation(text)
    digest = hashlib.sha256(text.encode()).hexdigest()
    return Observation(digest, None, f"output sha256 {digest[:12]}")
