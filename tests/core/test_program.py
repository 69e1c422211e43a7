"""core.program: the one runner of a configured program (knowledge command sources, the
LLM command), with real processes."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from gitvault.core.program import ProgramFailed, run_program

PY = sys.executable


def failure(command: str, **kwargs: object) -> ProgramFailed:
    args: dict = {"cwd": None, "stdin": None, "timeout": 5.0, "limit": 1 << 20, **kwargs}
    with pytest.raises(ProgramFailed) as caught:
        run_program(command, **args)
    return caught.value


def test_stdin_in_stdout_out_in_its_folder(tmp_path: Path) -> None:
    (tmp_path / "mark").write_text("here")
    ran = run_program(f"{PY} -c 'import sys; print(open(\"mark\").read(), sys.stdin.read())'",
                      cwd=tmp_path, stdin=b"prompt", timeout=5.0, limit=1 << 20)
    assert (ran.argv0, ran.stdout) == (PY, b"here prompt\n")


def test_no_stdin_reads_end_of_file() -> None:
    ran = run_program(f"{PY} -c 'import sys; print(repr(sys.stdin.read()))'",
                      cwd=None, stdin=None, timeout=5.0, limit=1 << 20)
    assert ran.stdout == b"''\n"


def test_why_a_program_gave_nothing() -> None:
    assert failure("'unclosed").reason == "unparsable"
    assert "quotation" in failure("'unclosed").detail
    assert failure("   ").reason == "empty"
    missing = failure("no-such-program-xyz --flag")
    assert (missing.reason, missing.argv0) == ("cannot_run", "no-such-program-xyz")
    assert "No such file" in missing.detail
    exited = failure(f"{PY} -c 'import sys; sys.stderr.write(\"bad key\"); sys.exit(3)'")
    assert (exited.reason, exited.returncode, exited.stderr) == ("exited", 3, "bad key")


def test_a_runaway_is_killed() -> None:
    started = time.monotonic()
    assert failure(f"{PY} -c 'import time; time.sleep(30)'", timeout=0.5).reason == "timeout"
    assert time.monotonic() - started < 10
    flood = failure(f"{PY} -c 'import sys; sys.stdout.write(\"x\" * 100000)'", limit=1000)
    assert flood.reason == "too_large"
