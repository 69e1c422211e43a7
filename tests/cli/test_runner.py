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
def test_in_process_run_matches_a_process(gv: Runner, gv_proc: Runner, vault: Path,
                                          args: list[str], stdin: str | bytes | None) -> None:
    gv.ok("skill", "create", "present", "--description", "d", env=NOW)
    here, there = gv(*args, input=stdin, env=NOW), gv_proc(*args, input=stdin, env=NOW)
    assert (here.code, here.out, here.err) == (there.code, there.out, there.err)


def test_a_write_matches_a_process(gv: Runner, gv_proc: Runner, tmp_path: Path) -> None:
    results = []
    for runner, name in ((gv, "here"), (gv_proc, "there")):
        runner.ok("init", str(tmp_path / name))
        args = ("record-run", "--skill", "s", "--agent", "a", "--task", "t", "--json")
        result = runner(*args, cwd=tmp_path / name, env=NOW)
        entry = result.json()["entry"]
        assert len(entry.pop("id")) == 26
        results.append((result.code, entry, result.err))
    assert results[0] == results[1]


def test_the_interpreter_is_left_as_it_was(gv: Runner, monkeypatch: pytest.MonkeyPatch,
                                           tmp_path: Path) -> None:
    monkeypatch.setenv("GITVAULT_DIR", str(tmp_path / "elsewhere"))  # not in gv.env
    gv.env["GITVAULT_ONLY_IN_THE_RUN"] = "1"
    before = (dict(os.environ), os.getcwd(), sys.argv, sys.stdin, sys.stdout, sys.stderr,
              sys.__stdout__, list(warnings.filters), tempfile.tempdir)
    seen: dict[str, object] = {}

    def fake_main() -> None:
        seen.update(env=dict(os.environ), cwd=os.getcwd(), argv=sys.argv[1:],
                    stdin=sys.stdin.buffer.read())
        raise SystemExit(3)

    monkeypatch.setattr(gitvault.cli.main, "main", fake_main)
    assert gv("a", "--b", input=b"in\xff").code == 3
    assert seen["env"] == gv.env and seen["cwd"] == str(gv.cwd)
    assert seen["argv"] == ["a", "--b"] and seen["stdin"] == b"in\xff"
    assert (dict(os.environ), os.getcwd(), sys.argv, sys.stdin, sys.stdout, sys.stderr,
            sys.__stdout__, list(warnings.filters), tempfile.tempdir) == before
    assert "GITVAULT_ONLY_IN_THE_RUN" not in os.environ


def test_output_through_text_bytes_and_click_is_kept_in_order(
        gv: Runner, monkeypatch: pytest.MonkeyPatch) -> None:
    import click

    def fake_main() -> None:
        sys.stdout.write("one\n")
        sys.stdout.buffer.write("two é\n".encode())
        click.echo("three")
        click.echo("four", err=True)
        sys.stderr.buffer.write(b"five\n")

    monkeypatch.setattr(gitvault.cli.main, "main", fake_main)
    result = gv.ok()
    assert (result.out, result.err) == ("one\ntwo é\nthree\n", "four\nfive\n")


def test_child_processes_share_the_streams(gv: Runner, monkeypatch: pytest.MonkeyPatch) -> None:
    import subprocess

    def fake_main() -> None:
        assert not sys.stdout.isatty() and sys.stdout.fileno() == 1
        print("before")
        subprocess.run(["sh", "-c", "echo child; read first; echo \"got $first\" >&2"],
                       check=True)
        print(f"after {sys.stdin.read().strip()}")

    monkeypatch.setattr(gitvault.cli.main, "main", fake_main)
    result = gv.ok(input="one\ntwo\n")
    assert (result.out, result.err) == ("before\nchild\nafter two\n", "got one\n")


@pytest.mark.parametrize(("exit_with", "code", "err"), [
    (None, 0, ""), (0, 0, ""), (2, 2, ""), (256 + 4, 4, ""), ("bad thing", 1, "bad thing\n")])
def test_exit_codes_are_what_a_process_returns(gv: Runner, monkeypatch: pytest.MonkeyPatch,
                                               exit_with: str | int | None, code: int, err: str) -> None:
    def fake_main() -> None:
        sys.exit(exit_with)

    monkeypatch.setattr(gitvault.cli.main, "main", fake_main)
    result = gv()
    assert (result.code, result.err) == (code, err)


def test_a_crash_fails_with_its_traceback(gv: Runner, monkeypatch: pytest.MonkeyPatch) -> None:
    def fake_main() -> None:
        print("partial")
        raise RuntimeError("a bug")

    monkeypatch.setattr(gitvault.cli.main, "main", fake_main)
    result = gv()
    assert result.code == 1 and result.out == "partial\n"
    assert result.err.startswith("Traceback (most recent call last):")
    assert result.err_lines[-1] == "RuntimeError: a bug"
    with pytest.raises(AssertionError, match="a bug"):
        gv.ok()


def test_a_warning_reaches_stderr_as_in_a_process(gv: Runner,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    def fake_main() -> None:
        warnings.warn("careful", UserWarning, stacklevel=1)
        warnings.warn("old", DeprecationWarning, stacklevel=1)  # hidden outside __main__

    monkeypatch.setattr(gitvault.cli.main, "main", fake_main)
    result = gv.ok()
    assert "UserWarning: careful" in result.err and "old" not in result.err


def test_json_of_one_run_does_not_leak_into_the_next(gv: Runner, vault: Path) -> None:
    assert json.loads(gv.ok("--json", "skill", "list").out) == {"skills": []}
    result = gv("nope")
    assert result.code == 2 and result.out == ""


def test_the_process_twin_follows_the_runner(gv: Runner, gv_proc: Runner, vault: Path) -> None:
    assert gv_proc.subprocess and not gv.subprocess
    assert gv_proc.cwd == gv.cwd == vault and gv_proc.env is gv.env
    gv.env["GITVAULT_NODE"] = "twin"
    gv_proc.ok("record-run", "--skill", "s")
    assert [p.name for p in (vault / "logs" / "runs").rglob("*.jsonl")] == ["twin.jsonl"]
