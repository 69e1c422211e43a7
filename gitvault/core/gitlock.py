"""The vault-wide git lock (SPEC §3): every command that stages or commits holds
``.git/gitvault/git.lock`` meanwhile, so gitvault never races itself for git's own
``index.lock`` and never leaves the index half-staged.

A plain ``flock`` on a file (no git, no threads: ``record-run`` passes through here),
re-entrant within a process, so a step that holds it may call another that takes it.
A wait is bounded (``git.lock_wait_s``); after :data:`NOTE_AFTER_S` the front end's
``on_wait`` callback is told once (the CLI writes a note on stderr; library code never
prints). A wait that runs out raises :class:`~gitvault.errors.Conflict` (exit 3) before
anything was changed.
"""

from __future__ import annotations

import fcntl
import os
import time
from contextlib import contextmanager

from gitvault.errors import Conflict

TYPE_CHECKING = False  # typing is not imported at run time: record-run starts fast
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path

LOCK_NAME = "git.lock"
DEFAULT_WAIT_S = 30.0
NOTE_AFTER_S = 1.0

# Told once when a wait passes NOTE_AFTER_S: (lock path, seconds it may still wait).
# The CLI sets it; None says nothing.
on_wait: Callable[[str, float], None] | None = None

# lock path -> [fd, depth, wait budget in seconds] of the locks this process holds
_held: dict[str, list[float]] = {}


def lock_path(git_dir: Path) -> Path:
    """``<git dir>/gitvault/git.lock``."""
    return git_dir / "gitvault" / LOCK_NAME


def budget(git_dir: Path | None) -> float:
    """The wait budget (seconds) of the git lock this process holds for ``git_dir``
    (the default when it holds none): how long a step under it may wait for git."""
    mine = _held.get(os.path.realpath(lock_path(git_dir))) if git_dir is not None else None
    return mine[2] if mine is not None else DEFAULT_WAIT_S


@contextmanager
def held(git_dir: Path | None, wait_s: float | None = None) -> Iterator[None]:
    """Hold the git lock of the repository whose git dir is ``git_dir`` (None: no
    repository, nothing to lock), waiting up to ``wait_s`` seconds (default 30)."""
    if git_dir is None:
        yield
        return
    path = os.path.realpath(lock_path(git_dir))
    mine = _held.get(path)
    if mine is not None:
        mine[1] += 1
        try:
            yield
        finally:
            mine[1] -= 1
        return
    budget = DEFAULT_WAIT_S if wait_s is None else wait_s
    fd = acquire(path, budget, f"another gitvault command still holds the git lock ({path}) "
                 f"after {budget:g} s (git.lock_wait_s)")
    _held[path] = [fd, 1, budget]
    try:
        yield
    finally:
        del _held[path]
        os.close(fd)  # closing the descriptor releases the lock


def acquire(path: str, wait_s: float, busy: str) -> int:
    """An exclusive ``flock`` on ``path`` (created with its folder), waiting up to
    ``wait_s`` seconds, with ``on_wait`` told once after :data:`NOTE_AFTER_S`; returns
    the descriptor (closing it releases the lock). A wait that runs out is Conflict
    (exit 3): ``busy``, then that nothing was changed."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
    start = time.monotonic()
    noted = False
    pause = 0.002
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return fd
            except BlockingIOError:
                pass
            waited = time.monotonic() - start
            if waited >= wait_s:
                raise Conflict(f"{busy}; nothing was changed: try again")
            if not noted and waited >= NOTE_AFTER_S:
                noted = True
                if on_wait is not None:
                    on_wait(path, wait_s - waited)
            time.sleep(min(pause, max(wait_s - waited, 0.0)))
            pause = min(pause * 2, 0.05)
    except BaseException:
        os.close(fd)
        raise
