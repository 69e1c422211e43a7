"""Run a program this clone configured (a knowledge ``command`` source, the LLM
command) or one gitvault drives (``gh``): its command line split as a shell would (never
a shell), in a process group of its own that is
killed when it overruns its time or floods its output."""

from __future__ import annotations

import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

from gitvault.core import git


class ProgramFailed(Exception):
    """Why a program gave no usable output. ``reason`` is one of ``unparsable`` (the
    command line), ``empty``, ``cannot_run`` (OSError), ``bad_argument`` (a null byte),
    ``too_large``, ``timeout`` or ``exited``; ``detail`` says more where there is more
    (the parse error, the OS's reason), ``stderr`` is what a program that exited wrote."""

    def __init__(self, reason: str, argv0: str = "", detail: str = "", returncode: int = 0,
                 stderr: str = "") -> None:
        super().__init__(reason)
        self.reason, self.argv0, self.detail = reason, argv0, detail
        self.returncode, self.stderr = returncode, stderr


@dataclass(frozen=True)
class Output:
    argv0: str
    stdout: bytes


def run_program(command: str | list[str], *, cwd: Path | None, stdin: bytes | None,
                timeout: float, limit: int, env: dict[str, str] | None = None) -> Output:
    """Run ``command`` (an argv list, or a command line split by shlex) in ``cwd`` with
    ``stdin`` (None: no stdin) and ``env`` (None: this process's) and return its stdout,
    at most ``limit`` bytes, once it exited 0 within ``timeout`` seconds; else raise
    ProgramFailed."""
    try:
        argv = shlex.split(command) if isinstance(command, str) else list(command)
    except ValueError as exc:
        raise ProgramFailed("unparsable", detail=str(exc)) from None
    if not argv:
        raise ProgramFailed("empty")
    try:
        proc = subprocess.Popen(argv, cwd=cwd, env=env,
                                stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True)
    except OSError as exc:
        raise ProgramFailed("cannot_run", argv[0], str(exc.strerror or exc)) from None
    except ValueError as exc:  # a null byte in an argument
        raise ProgramFailed("bad_argument", argv[0], str(exc)) from None
    try:
        out, err = git.communicate_capped(proc, stdin, timeout, limit)
    except git.OutputTooLarge:
        raise ProgramFailed("too_large", argv[0]) from None
    except subprocess.TimeoutExpired:  # its process group is killed
        raise ProgramFailed("timeout", argv[0]) from None
    if proc.returncode != 0:
        raise ProgramFailed("exited", argv[0], returncode=proc.returncode,
                            stderr=err.decode("utf-8", "replace"))
    return Output(argv[0], out)
