"""The one error reporter of every entry path (the fast paths, the click CLI, the hooks
it runs): the same mistake gives the same line and exit code whichever path it took
(SPEC §4). An error is one line on stderr, ``gitvault: error: ...``, and with
``--json`` also ``{"error": {"code", "message"}}`` on stdout; never a traceback
(``GITVAULT_DEBUG=1`` shows one for an internal error).
"""

from __future__ import annotations

import json
import os
import sys

from gitvault.errors import GitvaultError

INTERNAL_EXIT = 4  # a bug in gitvault; never 1, which CI reads as "a check failed"


def fail(code: str, message: str, exit_code: int, as_json: bool) -> int:
    """Write one error and return its exit code."""
    try:
        sys.stderr.write(f"gitvault: error: {message}\n")
        if as_json:
            sys.stdout.write(json.dumps({"error": {"code": code, "message": message}}) + "\n")
            sys.stdout.flush()
    except BrokenPipeError:
        pass
    return exit_code


def describe(exc: BaseException) -> tuple[str, str, int]:
    """(code, message, exit code) of an exception that reached an entry point."""
    if isinstance(exc, GitvaultError):
        return exc.code, str(exc), exc.exit_code
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted", "interrupted", 130
    if isinstance(exc, OSError):  # the machine refused: a full disk, a permission
        where = f"{exc.filename}: " if exc.filename else ""
        return "os_error", f"{where}{exc.strerror or exc}", 2
    return ("internal", f"internal error: {type(exc).__name__}: {exc} "
            "(rerun with GITVAULT_DEBUG=1 for the traceback)", INTERNAL_EXIT)


def report(exc: BaseException, as_json: bool) -> int:
    """Report ``exc`` as gitvault reports errors and return the exit code; with
    GITVAULT_DEBUG=1 an internal error is re-raised (its traceback shown)."""
    code, message, exit_code = describe(exc)
    if code == "internal" and os.environ.get("GITVAULT_DEBUG"):
        raise exc
    return fail(code, message, exit_code, as_json)


def _wait_note(path: str, left: float) -> None:
    try:
        what = "the git lock" if path.endswith("git.lock") else "its lock"
        sys.stderr.write(f"gitvault: waiting for another gitvault command to release "
                         f"{what} ({path}; giving up in {left:.0f} s)\n")
        sys.stderr.flush()
    except (BrokenPipeError, ValueError):
        pass


def install_wait_note() -> None:
    """Have a wait for the git lock say so on stderr (SPEC §3), on every entry path."""
    from gitvault.core import gitlock

    gitlock.on_wait = _wait_note
