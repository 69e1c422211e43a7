"""Races (SPEC §3): one vault-wide git lock for every stage and commit, a bounded wait
with a note, exit 3 only when nothing changed, and a command that wrote something never
fails afterwards (an append that could not be committed yet is pending)."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.conftest import Runner, snapshot


def set_config(vault: Path, gv: Runner, old: str, new: str) -> None:
    config = vault / "gitvault.yaml"
    text = config.read_text()
    assert old in text
    config.write_text(text.replace(old, new))
    gv.git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "config", "--",
           "gitvault.yaml")


def parallel(gv: Runner, commands: list[list[str]]) -> list[tuple[int, str, str]]:
    procs = [subprocess.Popen([sys.executable, "-m", "gitvault", *args], cwd=gv.cwd, env=gv.env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for args in commands]
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=180)
        results.append((proc.returncode, out.decode(), err.decode()))
    return results


@contextmanager
def held_git_lock(vault: Path) -> Iterator[None]:
    """Hold .git/gitvault/git.lock as another gitvault command would."""
    path = vault / ".git" / "gitvault" / "git.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def run_lines(vault: Path) -> list[dict[str, object]]:
    return [json.loads(line) for path in sorted((vault / "logs" / "runs").rglob("*.jsonl"))
            for line in path.read_text().splitlines()]


def test_parallel_record_runs_with_autocommit_all_succeed_once(gv: Runner, vault: Path) -> None:
    set_config(vault, gv, "autocommit: false", "autocommit: true")
    results = parallel(gv, [["record-run", "--skill", f"s{i}", "--score", "0.5", "--json"]
                            for i in range(8)])
    for code, _, err in results:
        assert code == 0, err
        assert "error" not in err
    ids = [json.loads(out)["entry"]["id"] for _, out, _ in results]
    lines = run_lines(vault)
    assert sorted(str(r["id"]) for r in lines) == sorted(ids)  # each exactly once
    # every line is committed, or pending (shown by status): never lost, never an error
    status = gv.ok("status", "--json").json()
    committed = gv.git("show", "HEAD:" + next(
        p.relative_to(vault).as_posix() for p in (vault / "logs" / "runs").rglob("*.jsonl")))
    assert len(committed.splitlines()) + status["pending"]["records"] == 8


def test_parallel_starts_never_fail_after_taking_their_locks(gv: Runner, vault: Path) -> None:
    set_config(vault, gv, "autocommit: false", "autocommit: true")
    for i in range(5):
        gv.ok("enqueue", "--task", f"task {i}", "--files", f"app:f{i}.py")
    ids = [pr["id"] for pr in gv.ok("dispatch", "--json").json()["prs"]]
    assert len(ids) == 5
    results = parallel(gv, [["start", pr_id] for pr_id in ids])
    assert [code for code, _, _ in results] == [0] * 5, [err for _, _, err in results]
    assert len(gv.ok("locks", "--json").json()) == 5


def test_parallel_skill_creates_and_commits_leave_nothing_half_staged(
        gv: Runner, vault: Path) -> None:
    for i in range(4):
        gv.ok("record-run", "--skill", f"r{i}")
    commands: list[list[str]] = []
    for i in range(4):
        commands.append(["skill", "create", f"race-{i}", "--description", f"Race {i}."])
        commands.append(["commit"])
    results = parallel(gv, commands)
    assert [code for code, _, _ in results] == [0] * len(commands), \
        [err for _, _, err in results]
    assert gv.git("diff", "--cached", "--name-only") == ""  # nothing left staged
    assert gv.git("status", "--porcelain", "--", "skills") == ""  # every skill committed
    log = gv.git("log", "--format=%s")
    for i in range(4):
        assert f"gitvault: create race-{i} v1" in log


def test_a_wait_that_runs_out_is_exit_3_and_changes_nothing(gv: Runner, vault: Path) -> None:
    set_config(vault, gv, "lock_wait_s: 30", "lock_wait_s: 1.5")
    gv.ok("record-run", "--skill", "s1")
    before = snapshot(vault)
    with held_git_lock(vault):
        result = gv("commit")
        created = gv("skill", "create", "blocked", "--description", "Never made.")
    assert result.code == 3, result.err
    assert "gitvault: waiting for another gitvault command to release the git lock" in result.err
    assert "git.lock" in result.err_lines[-1] and "nothing was changed" in result.err_lines[-1]
    assert created.code == 3, created.err
    assert snapshot(vault) == before
    assert not (vault / "skills" / "blocked").exists()


def test_an_append_that_cannot_be_committed_is_pending_not_failed(
        gv: Runner, vault: Path) -> None:
    set_config(vault, gv, "autocommit: false", "autocommit: true")
    set_config(vault, gv, "lock_wait_s: 30", "lock_wait_s: 1.2")
    with held_git_lock(vault):
        result = gv("record-run", "--skill", "s1", "--json")
        started = gv("enqueue", "--task", "t", "--json")
    assert result.code == 0, result.err
    assert result.json()["status"] == "recorded"
    assert "not committed yet (pending" in result.err
    assert started.code == 0, started.err
    assert gv.ok("status", "--json").json()["pending"]["records"] == 2
    gv.ok("commit")
    assert gv.ok("status", "--json").json()["pending"]["records"] == 0


def test_git_s_own_index_lock_is_waited_for_then_exit_3_with_git_s_whole_message(
        gv: Runner, vault: Path) -> None:
    set_config(vault, gv, "lock_wait_s: 30", "lock_wait_s: 1")
    gv.ok("record-run", "--skill", "s1")
    before = snapshot(vault)
    index_lock = vault / ".git" / "index.lock"
    index_lock.write_text("")  # a git process of the user, still at work
    try:
        result = gv("commit")
    finally:
        index_lock.unlink()
    assert result.code == 3, result.err
    line = result.err_lines[-1]
    # git's reason and its hint, not only its last line
    assert "index.lock': File exists" in line and "remove the file manually" in line
    assert "nothing was changed" in line
    assert snapshot(vault) == before
    assert gv.ok("commit").out.startswith("committed 1 record")


def test_a_refused_autocommit_leaves_the_record_pending_with_git_s_reason(
        gv: Runner, vault: Path) -> None:
    set_config(vault, gv, "autocommit: false", "autocommit: true")
    legacy = vault / ".git" / "hooks" / "pre-commit.legacy"
    legacy.write_text("#!/bin/sh\necho 'frozen: no commits' >&2\necho 'ask the admin' >&2\n"
                      "exit 1\n")
    legacy.chmod(0o755)
    result = gv("record-run", "--skill", "s1", "--json")
    assert result.code == 0, result.err
    assert result.json()["status"] == "recorded"
    assert "the runs record is written but not committed yet (pending: git commit failed: " \
           "frozen: no commits ask the admin)" in result.err
    assert gv.ok("status", "--json").json()["pending"]["records"] == 1
    assert gv.git("diff", "--cached", "--name-only") == ""  # not left staged either
