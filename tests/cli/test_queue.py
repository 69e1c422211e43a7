"""The queue commands end to end: the real CLI in real vaults, the seed's DAG example,
every queue exit code of SPEC §4.0, agent-skill-bus's --json shapes, races between
real processes, and an import of state the real peer made."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from gitvault.cli.hot import parse
from gitvault.core.paths import VaultLayout
from gitvault.core.records import locked
from gitvault.queue.busimport import import_bus_queue
from tests.conftest import REPO, Runner, snapshot
from tests.queue.test_queue import set_queue

PEER_CLI = REPO / "bench" / ".peer" / "node_modules" / "agent-skill-bus" / "src" / "cli.js"
NOW = {"GITVAULT_NOW": "2026-03-18T08:00:00.000Z"}
PR_KEYS = ["id", "ts", "source", "priority", "agent", "task", "context", "affectedSkills",
           "affectedFiles", "deadline", "status", "result", "dependsOn", "dagId"]


def enqueue(gv: Runner, *args: str) -> str:
    return str(gv.ok("enqueue", "--json", *args, env=NOW).json()["pr"]["id"])


def write_dag(folder: Path, name: str, data: Any) -> str:
    path = folder / name
    path.write_text(data if isinstance(data, str) else json.dumps(data), "utf-8")
    return str(path)


def refused(gv: Runner, root: Path, code: int, message: str, *args: str) -> None:
    """The command exits ``code`` with one error line naming ``message``, changing nothing."""
    before = snapshot(root)
    result = gv(*args, "--json", env=NOW)
    assert result.code == code, (args, result.code, result.err)
    assert result.err_lines == [f"gitvault: error: {result.json()['error']['message']}"]
    assert message in result.err_lines[0], result.err
    assert snapshot(root) == before, args


def test_seed_dag_example_cycle_by_cycle(gv: Runner, vault: Path) -> None:
    dag = {"dagId": "dag-feature-auth", "tasks": [
        {"key": "pr-001", "task": "DB schema change", "files": ["myapp:db/schema.sql"]},
        {"key": "pr-002", "task": "Auth module refactor", "files": ["myapp:src/auth.ts"]},
        {"key": "pr-003", "task": "API endpoints", "dependsOn": ["pr-001", "pr-002"]},
        {"key": "pr-004", "task": "Frontend update", "dependsOn": ["pr-003"]},
        {"key": "pr-005", "task": "E2E tests", "dependsOn": ["pr-003", "pr-004"]}]}
    made = gv.ok("dag-create", write_dag(vault.parent, "auth.json", dag), "--json").json()
    assert (made["status"], made["dagId"], made["count"]) == ("created", "dag-feature-auth", 5)
    ids = made["ids"]
    # Timeline of seed §6.4: the roots in parallel, then one stage per cycle.
    for cycle, keys in enumerate([["pr-001", "pr-002"], ["pr-003"], ["pr-004"], ["pr-005"]], 1):
        dispatched = gv.ok("dispatch", "--json").json()
        assert [pr["id"] for pr in dispatched["prs"]] == [ids[k] for k in keys], f"cycle {cycle}"
        for key in keys:
            assert gv.ok("start", ids[key], "--json").json()["pr"]["status"] == "running"
        for key in keys:
            assert gv.ok("complete", ids[key], "--json").json() == \
                {"status": "completed", "prId": ids[key]}
        state = gv.ok("dag", "dag-feature-auth", "--json").json()
        assert state["done"] == sum(len(k) for k in [["pr-001", "pr-002"], ["pr-003"],
                                                     ["pr-004"], ["pr-005"]][:cycle])
    final = gv.ok("dag", "dag-feature-auth", "--json").json()
    assert {k: final[k] for k in ("dagId", "total", "queued", "running", "done", "failed",
                                  "blocked")} == \
        {"dagId": "dag-feature-auth", "total": 5, "queued": 0, "running": 0, "done": 5,
         "failed": 0, "blocked": 0}
    assert gv.ok("dispatch", "--json").json()["count"] == 0
    text = gv.ok("dag", "dag-feature-auth").out.splitlines()
    assert text[0].startswith("DAG dag-feature-auth: 5 PRs (queued 0, running 0, done 5,")
    assert text[5] == f"  {ids['pr-005']}  done     E2E tests  <- {ids['pr-003']}, {ids['pr-004']}"


def test_every_queue_exit_code(gv: Runner, vault: Path) -> None:
    set_queue(vault, max_locks=1, max_active=3)
    first = enqueue(gv, "--task", "Fix auth", "--agent", "dev", "--files", "app:src/auth.ts")
    dup = gv.ok("enqueue", "--task", "Fix auth", "--agent", "dev", "--json", env=NOW)
    assert dup.json() == {"status": "duplicate", "message": "Identical PR already in queue",
                          "existing": first}
    second = enqueue(gv, "--task", "Refactor", "--files", "app:*", "--depends-on", first)
    third = enqueue(gv, "--task", "Docs", "--priority", "high", "--files", "docs:x.md")
    folder = vault.parent
    refused(gv, vault, 2, "unknown dependency: pr-404", "enqueue", "--task", "x",
            "--depends-on", f"{first},pr-404")
    refused(gv, vault, 2, "unknown priority 'urgent'", "enqueue", "--task", "x",
            "--priority", "urgent")
    refused(gv, vault, 2, "needs a task", "enqueue", "--agent", "dev")
    refused(gv, vault, 2, "dependency cycle: a -> b -> a", "dag-create",
            write_dag(folder, "cycle.yaml", "dagId: c\ntasks:\n  - {key: a, task: A, dependsOn: [b]}\n"
                                            "  - {key: b, task: B, dependsOn: [a]}\n"))
    big = {"dagId": "big", "tasks": [{"key": f"k{i}", "task": f"t{i}"} for i in range(21)]}
    refused(gv, vault, 2, "DAG big has 21 tasks (queue.max_per_dag is 20)", "dag-create",
            write_dag(folder, "big.json", big))
    refused(gv, vault, 2, "invalid YAML at line", "dag-create",
            write_dag(folder, "broken.yaml", "dagId: d\ntasks: [\n"))
    refused(gv, vault, 2, "no such DAG file", "dag-create", str(folder / "missing.yaml"))
    refused(gv, vault, 2, "unknown dependency: nope", "dag-create", write_dag(
        folder, "unknown.json", {"dagId": "u", "tasks": [{"key": "a", "task": "A",
                                                          "dependsOn": ["nope"]}]}))
    for command in ("start", "complete", "fail"):
        refused(gv, vault, 2, "no prompt request 'pr-404'", command, "pr-404")
    refused(gv, vault, 2, "no DAG 'dag-404'", "dag", "dag-404")
    refused(gv, vault, 3, f"its dependencies are not done: {first} (queued)", "start", second)
    gv.ok("start", first)
    refused(gv, vault, 3, f"{first} is running, not queued", "start", first)
    refused(gv, vault, 3, "1 locks are held (queue.max_locks is 1)", "start", third)
    refused(gv, vault, 3, "the queue is full: 3 active prompt requests", "enqueue",
            "--task", "one too many")
    gv.ok("complete", first)
    refused(gv, vault, 3, f"{first} is already done", "complete", first)
    gv.ok("start", third)
    refused(gv, vault, 3, "1 locks are held", "start", second)  # no conflict, but no room
    gv.ok("fail", third, "--reason", "flaky")
    assert gv.ok("start", second, "--json").json()["pr"]["status"] == "running"


def test_lock_conflict_names_the_files_and_the_holder(gv: Runner, vault: Path) -> None:
    holder = enqueue(gv, "--task", "Refactor", "--files", "app:*")
    other = enqueue(gv, "--task", "Fix", "--files", "app:src/a.ts,lib:b.ts")
    gv.ok("start", holder)
    refused(gv, vault, 3, f"Lock conflict: files [app:src/a.ts] are already locked (by {holder})",
            "start", other)


def test_json_shapes_are_the_peers(gv: Runner, vault: Path) -> None:
    made = gv.ok("enqueue", "--task", "Fix auth", "--agent", "dev", "--priority", "high",
                 "--files", "app:a.ts", "--skills", "api-caller", "--context", "401s",
                 "--deadline", "24h", "--dag-id", "dag-1", "--json").json()
    assert list(made) == ["status", "pr"] and list(made["pr"]) == PR_KEYS
    pr = made["pr"]
    assert (pr["affectedFiles"], pr["affectedSkills"], pr["dagId"], pr["status"], pr["result"]) == \
        (["app:a.ts"], ["api-caller"], "dag-1", "queued", None)
    dispatched = gv.ok("dispatch", "--max", "9", "--json").json()
    assert {"count", "prs", "expired"} <= set(dispatched) and dispatched["prs"] == [pr]
    started = gv.ok("start", pr["id"], "--json").json()
    assert list(started) == ["status", "pr"] and started["pr"]["status"] == "running"
    locks = gv.ok("locks", "--json").json()
    assert [list(lock) for lock in locks] == [["agent", "files", "prId", "lockedAt", "ttl"]]
    assert gv.ok("stats", "--json").json() == {"total": 1, "byStatus": {"running": 1},
                                               "activeLocks": 1, "expired": 0}
    failed = gv.ok("fail", pr["id"], "--reason", "boom", "--json").json()
    assert failed == {"status": "failed", "prId": pr["id"], "blocked": []}
    cleaned = gv.ok("locks", "--release-expired", "--json").json()
    assert (cleaned["status"], cleaned["released"], cleaned["active"]) == ("cleaned", 0, 0)
    dag = gv.ok("dag", "dag-1", "--json").json()
    assert list(dag)[:9] == ["dagId", "updated", "total", "queued", "running", "done", "failed",
                             "blocked", "purged"]
    assert (dag["total"], dag["failed"]) == (1, 1)
    text = gv.ok("stats").out
    assert text == "prompt requests: 1 (failed 1)\nactive locks: 0\nexpired deadlines: 0\n"


def test_autocommit_commits_queue_records(gv: Runner, vault: Path) -> None:
    config = vault / "gitvault.yaml"
    config.write_text(config.read_text("utf-8").replace("autocommit: false", "autocommit: true"))
    gv.git("-c", "user.name=T", "-c", "user.email=t@example.com", "commit", "-qam", "autocommit")
    pr_id = enqueue(gv, "--task", "Fix")
    gv.ok("start", pr_id)
    assert gv.git("status", "--porcelain").strip() == ""
    assert gv.git("log", "-2", "--format=%s").splitlines() == ["gitvault: record queue"] * 2


def test_help_for_every_queue_command(gv: Runner) -> None:
    listing = gv.ok("--help").out
    for command in ("enqueue", "dispatch", "start", "complete", "fail", "stats", "locks", "dag",
                    "dag-create"):
        assert f"  {command} " in listing, command
        page = gv.ok(command, "--help").out
        assert page.startswith(f"Usage: gitvault {command}")
    assert "--depends-on IDS" in gv.ok("enqueue", "--help").out


FAST = "import sys; from gitvault.cli.hot import try_run; code = try_run(sys.argv[1:]); " \
       "sys.exit(99 if code is None else code)"


def test_the_click_free_path_prints_what_click_prints(gv: Runner, vault: Path) -> None:
    pr_id = enqueue(gv, "--task", "Fix", "--files", "app:a", "--dag-id", "d1")
    gv.ok("start", pr_id, env=NOW)
    enqueue(gv, "--task", "Later", "--priority", "low")
    path = next((vault / "logs" / "queue").rglob("*.jsonl"))
    with open(path, "ab") as handle:
        handle.write(b"not json\n")
    for args in (["stats"], ["stats", "--json"], ["--json", "locks"], ["locks"], ["dag", "d1"],
                 ["dispatch", "--max", "3", "--json"], ["--vault", str(vault), "dag", "d1", "--json"],
                 ["start", "pr-404"], ["start", "pr-404", "--json"], ["complete", pr_id, "--json"],
                 ["stats", "--json"]):
        fast = subprocess.run([sys.executable, "-c", FAST, *args], capture_output=True, cwd=vault,
                              env={**gv.env, **NOW})
        assert fast.returncode != 99, args
        slow = gv(*args, env=NOW) if args[0] != "complete" else None
        if slow is None:  # a write: both paths would change the vault; run it once each way
            assert fast.returncode == 0 and json.loads(fast.stdout)["status"] == "completed"
            continue
        assert (fast.returncode, fast.stdout.decode(), fast.stderr.decode()) == \
            (slow.code, slow.out, slow.err), args
    assert parse(["--node", "n1", "enqueue", "--task", "x", "--json"]) is not None


def wait_for_lock_waiters(lock: Path, count: int) -> None:
    """Until ``count`` processes are blocked on the flock of ``lock`` (/proc/locks)."""
    inode = f":{os.stat(lock).st_ino} "
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        lines = Path("/proc/locks").read_text().splitlines()
        if sum("->" in line and inode in line for line in lines) >= count:
            return
        time.sleep(0.02)
    raise AssertionError("the processes never reached the queue lock")


def test_two_starts_of_prs_touching_one_file_one_wins(gv: Runner, vault: Path) -> None:
    ids = [enqueue(gv, "--task", f"edit {i}", "--files", "app:src/shared.py") for i in range(2)]
    lock = VaultLayout(vault).cache / "locks" / "queue.lock"  # type: ignore[operator]
    with locked(lock):
        procs = [subprocess.Popen([sys.executable, "-m", "gitvault", "start", pr_id],
                                  cwd=vault, env=gv.env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE) for pr_id in ids]
        wait_for_lock_waiters(lock, 2)
    results = [(p.wait(60), p.stderr.read().decode()) for p in procs]  # type: ignore[union-attr]
    assert sorted(code for code, _ in results) == [0, 3]
    loser = next(err for code, err in results if code == 3)
    assert "Lock conflict: files [app:src/shared.py] are already locked" in loser
    assert len(gv.ok("locks", "--json").json()) == 1


def test_enqueue_racing_complete_through_the_cli(gv: Runner, vault: Path) -> None:
    old = [enqueue(gv, "--task", f"old {i}") for i in range(3)]
    lock = VaultLayout(vault).cache / "locks" / "queue.lock"  # type: ignore[operator]
    with locked(lock):
        commands = [["complete", pr_id] for pr_id in old]
        commands += [["enqueue", "--task", f"new {i}", "--agent", "racer"] for i in range(3)]
        procs = [subprocess.Popen([sys.executable, "-m", "gitvault", *c], cwd=vault, env=gv.env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                 for c in commands]
        wait_for_lock_waiters(lock, len(procs))
    assert [p.wait(60) for p in procs] == [0] * 6
    stats = gv.ok("stats", "--json").json()
    assert (stats["total"], stats["byStatus"]) == (6, {"queued": 3, "done": 3})


@pytest.mark.skipif(not PEER_CLI.exists() or shutil.which("node") is None,
                    reason="agent-skill-bus is not installed in bench/.peer (run bench/bench_queue.py)")
def test_import_of_state_the_real_peer_made(gv: Runner, vault: Path, tmp_path: Path) -> None:
    data = tmp_path / "peer"
    data.mkdir()

    def peer(*args: str) -> Any:
        out = subprocess.run(["node", str(PEER_CLI), *args, "--data-dir", str(data)],
                             capture_output=True, check=True, cwd=data).stdout
        return json.loads(out)

    peer("init")
    a = peer("enqueue", "--task", "Fix auth", "--agent", "dev", "--priority", "high",
             "--files", "app:src/auth.ts", "--dag-id", "dag-x")["pr"]["id"]
    peer("enqueue", "--task", "Test auth", "--agent", "dev", "--depends-on", a, "--dag-id", "dag-x")
    c = peer("enqueue", "--task", "Rotate logs", "--source", "cron", "--priority", "low")["pr"]["id"]
    peer("enqueue", "--task", "Docs", "--priority", "critical", "--skills", "writer")
    peer("enqueue", "--task", "Cleanup", "--priority", "low", "--context", "old files")
    peer("start", a)
    peer("complete", c, "--result", "rotated")
    result = import_bus_queue(data, VaultLayout(vault), "test-node")
    assert (result["prs"], result["locks"], result["dags"], result["warnings"]) == (5, 1, 1, [])
    ours, theirs = gv.ok("stats", "--json").json(), peer("stats")
    assert {k: ours[k] for k in ("total", "byStatus", "activeLocks")} == theirs
    assert gv.ok("locks", "--json").json() == peer("locks")
    assert gv.ok("dispatch", "--json").json()["prs"] == peer("dispatch")["prs"]
    dag = gv.ok("dag", "dag-x", "--json").json()
    assert (dag["total"], dag["running"], dag["queued"]) == (2, 1, 1)
    before = snapshot(vault)
    again = import_bus_queue(data, VaultLayout(vault), "test-node")
    assert (again["prs"], again["locks"], again["dags"], again["skipped"]) == (0, 0, 0, 7)
    assert snapshot(vault) == before
