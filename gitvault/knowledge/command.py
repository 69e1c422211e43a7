"""``command``: a program's output. It runs only where this clone allows it (``git
config gitvault.allow-commands true`` or ``GITVAULT_ALLOW_COMMANDS=1``), never because
the committed ``gitvault.yaml`` names it: a synced vault cannot make a node run code."""

from __future__ import annotations

import hashlib
import os
import shlex
import subprocess
from pathlib import Path
from typing import Any

from gitvault.core import git
from gitvault.knowledge.model import Context, LookupFailed, Observation, is_version

NETWORK = False
MAX_SHOWN = 200
MAX_OUTPUT = 8 << 20  # what is hashed; more is a runaway program
NOT_ALLOWED = ("command sources run only where 'git config gitvault.allow-commands true' "
               "or GITVAULT_ALLOW_COMMANDS=1 is set")


def commands_allowed(root: Path) -> bool:
    """Whether this clone (its git config or the environment) allows command sources."""
    if os.environ.get("GITVAULT_ALLOW_COMMANDS", "").lower() in ("1", "true", "yes"):
        return True
    return git.config_flag(root, "gitvault.allow-commands")


def check(source: dict[str, Any], ctx: Context) -> Observation:
    if not ctx.allow_commands:
        raise LookupFailed(NOT_ALLOWED)
    try:
        argv = shlex.split(source["command"])
    except ValueError as exc:
        raise LookupFailed(f"command {source['command']!r}: {exc}") from None
    if not argv:
        raise LookupFailed("the command is empty")
    try:
        proc = subprocess.Popen(argv, cwd=ctx.root, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True)
    except OSError as exc:
        raise LookupFailed(f"{argv[0]}: cannot run it ({exc.strerror or exc})") from None
    except ValueError as exc:  # a null byte in an argument
        raise LookupFailed(f"{argv[0]!r}: cannot run it ({exc})") from None
    try:
        out, _ = git.communicate_capped(proc, None, ctx.timeout, MAX_OUTPUT)
    except git.OutputTooLarge:
        raise LookupFailed(f"{argv[0]}: wrote more than {MAX_OUTPUT >> 20} MiB") from None
    except subprocess.TimeoutExpired:  # its process group is killed
        raise LookupFailed(f"{argv[0]}: no answer within {ctx.timeout:g} s") from None
    if proc.returncode != 0:
        raise LookupFailed(f"{argv[0]}: exited {proc.returncode}")
    text = out.decode("utf-8", "replace").strip()
    if is_version(text):
        return Observation(text, text)
    if len(text) <= MAX_SHOWN and "\n" not in text:
        return Observation(text)
    digest = hashlib.sha256(text.encode()).hexdigest()
    return Observation(digest, None, f"output sha256 {digest[:12]}")
