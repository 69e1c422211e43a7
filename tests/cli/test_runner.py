"""The test runner itself: an in-process run of the CLI shows what a process shows
(the same exit code and bytes), leaves the interpreter as it found it, and never lets
a crash pass as success."""

from __future__ import annotations

import json
import os
import sys
import tempfile
import warnings
from pathlib import Path

import pytest

import gitvault.cli.main
from tests.conftest import Runner

NOW = {"GITVAULT_NOW": "2026-03-18T08:00:00.000Z"}


@pytest.fixture
def here(gv: Runner) -> Runner:
    """In this interpreter, even when GITVAULT_TESTS_IN_PROCESS=0 makes ``gv`` a process."""
    return gv.in_process()


# Read-only invocations and mistakes, through every path (click, record-run's and the
# queue's fast paths), text and --json.
SAME: list[tuple[list[str], str | bytes | None]] = [
    ([], None), (["--help"], None), (["--version"], None), (["skill", "--help"], None),
    (["hooks", "--help"], None), (["nope"], None), (["--json", "nope"], None),
    (["skill", "list"], None), (["skill", "list", "--json"], None),
    (["skill", "show", "absent", "--json"], None), (["status", "--json"], None),
    (["stats"], None), (["stats", "--json"], None), (["start", "pr-404", "--json"], None),
    (["dispatch", "--max", "five"], None), (["record-run", "--json"], None),
    (["record-run", "--score"], None), (["health", "--json"], None),
    (["tool", "-"], "{not json"), (["tool", "-"], b"\xff\xfe"),
    (["skill", "create", "x", "--description", "d", "--json", "--bogus"], None),
]


@pytest.mark.parametrize(("args", "stdin"), SAME, ids=[" ".join(a) or "(none)" for a, _ in SAME])
def test_in_process_run_matches_a_process(here: Runner, gv_proc: Runner, vault: Path,
                                          args: list[str], stdin: str | bytes | None) -> None:
    here.ok("skill", "create", "present", "--description", "d", env=NOW)
    mine, theirs = here(*args, input=stdin, env=NOW), gv_proc(*args, input=stdin, env=NOW)
    assert (mine.code, mine.out, mine.err) == (theirs.code, theirs.out, theirs.err)


def test_a_write_matches_a_process(here: Runner, gv_proc: Runner, tmp_path: Path) -> None:
    results = []
    for runner, name in ((here, "here"), (gv_proc, "there")):
        runner.ok("init", str(tmp_path / name))
        args = ("record-run", "--skill", "s", "--agent", "a", "--task", "t", "--json")
        result = runner(*args, cwd=tmp_path / name, env=NOW)
        entry = result.json()["entry"]
        assert len(entry.pop("id")) == 26
        results.append((result.code, entry, result.err))
    assert results[0] == results[1]


def test_the_interpreter_is_left_as_it_was(here: Runner, monkeypatch: pytest.MonkeyPatch,
                                           tmp_path: Path) -> None:
    monkeypatch.setenv("GITVAULT_DIR", str(tmp_path / "elsewhere"))  # not in the runner's env
    here.env["GITVAULT_ONLY_IN_THE_RUN"] = "1"
    before = (dict(os.environ), os.getcwd(), sys.argv, sys.stdin, sys.stdout, sys.stderr,
              sys.__stdout__, list(warnings.filters), tempfile.tempdir)
    seen: dict[str, object] = {}

    def fake_main() -> None:
        seen.update(env=dict(os.environ), cwd=os.getcwd(), argv=sys.argv[1:],
                    stdin=sys.stdin.buffer.read())
        raise SystemExit(3)

    monkeypatch.setattr(gitvault.cli.main, "main", fake_main)
    assert here("a", "--b", input=b"in\xff").code == 3
    assert seen["env"] == here.env and seen["cwd"] == str(here.cwd)
    assert seen["argv"] == ["a", "--b"] and seen["stdin"] == b"in\xff"
    assert (dict(os.environ), os.getcwd(), sys.argv, sys.stdin, sys.stdout, sys.stderr,
            sys.__stdout__, list(warnings.filters), tempfile.tempdir) == before
    assert "GITVAULT_ONLY_IN_THE_RUN" not in os.environ


def test_output_through_text_bytes_and_click_is_kept_in_order(
        here: Runner, monkeypatch: pytest.MonkeyPatch) -> None:
    import click

    def fake_main() -> None:
        sys.stdout.write("one\n")
        sys.stdout.buffer.write("two é\n".encode())
        click.echo("three")
        click.echo("four", err=True)
        sys.stderr.buffer.write(b"five\n")

    monkeypatch.setattr(gitvault.cli.main, "main", fake_main)
    result = here.ok()
    assert (result.out, result.err) == ("one\ntwo é\nthree\n", "four\nfive\n")


def test_child_processes_share_the_streams(here: Runner, monkeypatch: pytest.MonkeyPatch) -> None:
    import subprocess

    def fake_main() -> None:
        assert not sys.stdout.isatty() and sys.stdout.fileno() == 1
        print("before")
        subprocess.run(["sh", "-c", "echo child; read first; echo \"got $first\" >&2"],
                       check=True)
        print(f"after {sys.stdin.read().strip()}")

    monkeypatch.setattr(gitvault.cli.main, "main", fake_main)
    result = here.ok(input="one\ntwo\n")
    assert (result.out, result.err) == ("before\nchild\nafter two\n", "got one\n")


@pytest.mark.parametrize(("exit_with", "code", "err"), [
    (None, 0, ""), (0, 0, ""), (2, 2, ""), (256 + 4, 4, ""), ("bad thing", 1, "bad thing\n")])
def test_exit_codes_are_what_a_process_returns(here: Runner, monkeypatch: pytest.MonkeyPatch,
                                               exit_with: str | int | None, code: int, err: str) -> None:
    def fake_main() -> None:
        sys.exit(exit_with)

    monkeypatch.setattr(gitvault.cli.main, "main", fake_main)
    result = here()
    assert (result.code, result.err) == (code, err)


def test_a_returned_code_is_the_exit_code(here: Runner, monkeypatch: pytest.MonkeyPatch) -> None:
    """As the console script does (``sys.exit(main())``)."""
    monkeypatch.setattr(gitvault.cli.main, "main", lambda: 4)
    assert here().code == 4


def test_a_crash_fails_with_its_traceback(here: Runner, monkeypatch: pytest.MonkeyPatch) -> None:
    def fake_main() -> None:
        print("partial")
        raise RuntimeError("a bug")

    monkeypatch.setattr(gitvault.cli.main, "main", fake_main)
    result = here()
    assert result.code == 1 and result.out == "partial\n"
    assert result.err.startswith("Traceback (most recent call last):")
    assert result.err_lines[-1] == "RuntimeError: a bug"
    with pytest.raises(AssertionError, match="a bug"):
        here.ok()


def test_a_warning_reaches_stderr_as_in_a_process(here: Runner,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    def fake_main() -> None:
        warnings.warn("careful", UserWarning, stacklevel=1)
        warnings.warn("old", DeprecationWarning, stacklevel=1)  # hidden outside __main__

    monkeypatch.setattr(gitvault.cli.main, "main", fake_main)
    result = here.ok()
    assert "UserWarning: careful" in result.err and "old" not in result.err


def test_json_of_one_run_does_not_leak_into_the_next(here: Runner, vault: Path) -> None:
    assert json.loads(here.ok("--json", "skill", "list").out) == {"skills": []}
    result = here("nope")
    assert result.code == 2 and result.out == ""


def test_the_process_twin_follows_the_runner(here: Runner, gv_proc: Runner, vault: Path) -> None:
    assert gv_proc.subprocess and not here.subprocess
    assert gv_proc.cwd == here.cwd == vault and gv_proc.env is here.env
    here.env["GITVAULT_NODE"] = "twin"
    gv_proc.ok("record-run", "--skill", "s")
    assert [p.name for p in (vault / "logs" / "runs").rglob("*.jsonl")] == ["twin.jsonl"]
