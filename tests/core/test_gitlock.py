"""The vault-wide git lock: re-entrant within a process, a bounded wait with one note,
and a Conflict (exit 3) when the wait runs out."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from gitvault.core import gitlock
from gitvault.errors import Conflict

HOLD = ("import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT); "
        "fcntl.flock(fd, fcntl.LOCK_EX); print('held', flush=True); time.sleep(float(sys.argv[2]))")


def hold_elsewhere(git_dir: Path, seconds: float) -> subprocess.Popen[str]:
    path = gitlock.lock_path(git_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(path), str(seconds)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline() == "held\n"
    return proc


def test_the_lock_is_re_entrant_and_released(tmp_path: Path) -> None:
    with gitlock.held(tmp_path, 0.5):
        with gitlock.held(tmp_path, 0.5):  # a step under the lock calls another
            assert gitlock.budget(tmp_path) == 0.5
        assert gitlock.budget(tmp_path) == 0.5
    assert gitlock.budget(tmp_path) == gitlock.DEFAULT_WAIT_S
    proc = hold_elsewhere(tmp_path, 0)  # another process gets it at once
    proc.wait()


def test_a_wait_notes_once_then_gives_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    notes: list[tuple[str, float]] = []
    monkeypatch.setattr(gitlock, "on_wait", lambda path, left: notes.append((path, left)))
    proc = hold_elsewhere(tmp_path, 10)
    try:
        start = time.monotonic()
        with pytest.raises(Conflict, match=r"another gitvault command still holds the git "
                                           r"lock \(.*git\.lock\) after 1\.5 s \(git\.lock_wait_s\); "
                                           r"nothing was changed: try again"), \
                gitlock.held(tmp_path, 1.5):
            pass
        assert 1.5 <= time.monotonic() - start < 5
    finally:
        proc.kill()
        proc.wait()
    assert len(notes) == 1 and notes[0][0].endswith("gitvault/git.lock")
    with gitlock.held(tmp_path, 1):  # free again once its holder is gone
        pass
