"""The prompt-request bus as a library: rules of SPEC §4.3 and the seed (§5, §6, §11),
the incremental fold, concurrency between real processes, and the peer import. Real
vaults, real files; the only fake is the clock (GITVAULT_NOW)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from gitvault.core import config
from gitvault.core.paths import VaultLayout
from gitvault.errors import Conflict, InvalidInput, NotFound
from gitvault.queue.busimport import import_bus_queue
from gitvault.queue.commands import Queue
from gitvault.queue.dag import find_cycle, parse_dag
from gitvault.queue.log import SAVE_LAG
from gitvault.queue.rules import conflicts

REPO = Path(__file__).resolve().parents[2]
T0 = "2026-03-18T08:00:00.000Z"


def open_q(root: Path, node: str = "test-node") -> Queue:
    layout = VaultLayout(root)
    return Queue(layout, node, config.load(layout.config, layout.cache).queue)


def set_queue(root: Path, **values: int) -> None:
    path = root / "gitvault.yaml"
    text = path.read_text("utf-8")
    for key, value in values.items():
        text, n = re.subn(rf"(?m)^(  {key}: )\S+", rf"\g<1>{value}", text)
        assert n == 1, key
    path.write_text(text, "utf-8")


def log_bytes(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted((root / "logs" / "queue").rglob("*.jsonl"))}


def records(root: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for data in log_bytes(root).values()
            for line in data.decode().splitlines() if line.strip()]


def add(q: Queue, task: str, **fields: Any) -> str:
    result = q.enqueue({"task": task, **fields})
    assert result["status"] == "enqueued", result
    return str(result["pr"]["id"])


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Set GITVAULT_NOW (the one fake the house style allows)."""
    def set_now(moment: str) -> None:
        monkeypatch.setenv("GITVAULT_NOW", moment)
    set_now(T0)
    return set_now


SEED_DAG = {"dagId": "dag-feature-auth", "tasks": [
    {"key": "pr-001", "task": "DB schema change", "files": ["myapp:db/schema.sql"]},
    {"key": "pr-002", "task": "Auth module refactor", "files": ["myapp:src/auth.ts"]},
    {"key": "pr-003", "task": "API endpoints", "dependsOn": ["pr-001", "pr-002"]},
    {"key": "pr-004", "task": "Frontend update", "dependsOn": ["pr-003"]},
    {"key": "pr-005", "task": "E2E tests", "dependsOn": ["pr-003", "pr-004"]},
]}


def test_seed_dag_example_runs_cycle_by_cycle(vault: Path, clock: Any) -> None:
    q = open_q(vault)
    made = q.create_dag(parse_dag(json.dumps(SEED_DAG).encode(), "dag.json"))
    ids = made["ids"]
    assert made["count"] == 5
    assert made["prs"][2]["dependsOn"] == [ids["pr-001"], ids["pr-002"]]
    cycles = [["pr-001", "pr-002"], ["pr-003"], ["pr-004"], ["pr-005"]]
    for number, expected in enumerate(cycles, 1):
        clock(f"2026-03-18T{8 + number:02d}:00:00.000Z")
        got = [pr["id"] for pr in q.dispatch()["prs"]]
        assert got == [ids[k] for k in expected], f"cycle {number}"
        for key in expected:
            q.start(ids[key])
        state = q.dag("dag-feature-auth")
        assert state["running"] == len(expected)
        assert q.dispatch()["prs"] == []  # nothing else is ready while these run
        for key in expected:
            q.complete(ids[key], "ok")
    final = q.dag("dag-feature-auth")
    assert {k: final[k] for k in ("total", "queued", "running", "done", "failed", "blocked")} == \
        {"total": 5, "queued": 0, "running": 0, "done": 5, "failed": 0, "blocked": 0}
    assert final["updated"] == "2026-03-18T12:00:00.000Z"
    assert [(pr["task"], pr["status"]) for pr in final["prs"]] == \
        [(t["task"], "done") for t in SEED_DAG["tasks"]]  # finished PRs keep what a DAG shows
    assert final["prs"][4]["dependsOn"] == [ids["pr-003"], ids["pr-004"]]


def test_failure_blocks_every_transitive_dependent(vault: Path, clock: Any) -> None:
    q = open_q(vault)
    a = add(q, "a")
    b = add(q, "b", dependsOn=[a])
    c = add(q, "c", dependsOn=[b])
    d = add(q, "d", dependsOn=[c, a])
    free = add(q, "free")
    q.start(a)
    result = q.fail(a, "compiler crashed")
    assert sorted(result["blocked"]) == sorted([b, c, d])
    state = q.state()
    assert [state.status(i) for i in (a, b, c, d, free)] == \
        ["failed", "blocked", "blocked", "blocked", "queued"]
    assert [pr["id"] for pr in q.dispatch()["prs"]] == [free]
    blocks = [r for r in records(vault) if r.get("op") == "block"]
    assert {r["pr"]: r["result"] for r in blocks} == {i: "Dependency failed" for i in (b, c, d)}


def test_lock_expiry_fails_the_pr_with_lock_timeout(vault: Path, clock: Any) -> None:
    q = open_q(vault)
    held = add(q, "long job", affectedFiles=["app:src/a.py"])
    after = add(q, "after it", dependsOn=[held])
    waiting = add(q, "same file", affectedFiles=["app:src/a.py"])
    q.start(held)
    clock("2026-03-18T10:00:00.000Z")  # exactly the TTL: not expired (now - lockedAt > ttl)
    assert q.dispatch()["prs"] == []
    assert q.locks()[0]["prId"] == held
    clock("2026-03-18T10:00:00.001Z")
    result = q.dispatch()
    assert result["released"] == [held]
    assert result["blocked"] == [after]
    assert [pr["id"] for pr in result["prs"]] == [waiting]
    state = q.state()
    assert state.status(held) == "failed"
    assert state.prs.get(held) is None and state.result_of(held) == "lock_timeout"
    assert q.locks() == []


def test_locks_release_expired_and_start_ignores_an_expired_lock(vault: Path, clock: Any) -> None:
    q = open_q(vault)
    first = add(q, "one", affectedFiles=["app:x"])
    second = add(q, "two", affectedFiles=["app:x"])
    q.start(first)
    with pytest.raises(Conflict, match=r"Lock conflict: files \[app:x\]"):
        q.start(second)
    clock("2026-03-18T12:00:00.000Z")
    assert q.start(second)["status"] == "running"  # the expired lock was released first
    assert q.state().status(first) == "failed"
    clock("2026-03-18T15:00:00.000Z")
    cleaned = q.release_expired()
    assert (cleaned["status"], cleaned["released"], cleaned["active"], cleaned["prs"]) == \
        ("cleaned", 1, 0, [second])


def test_repo_star_lock_covers_every_file_of_that_repo(vault: Path, clock: Any) -> None:
    held = {"p1": {"files": ["app:*"]}, "p2": {"files": ["lib:src/x.py"]}}
    assert conflicts(["app:src/a.py", "lib:src/y.py"], held) == [("app:src/a.py", "p1")]
    assert conflicts(["lib:*"], held) == [("lib:*", "p2")]
    assert conflicts(["lib:src/x.py", "other:*", "x.py"], held) == [("lib:src/x.py", "p2")]
    q = open_q(vault)
    whole = add(q, "refactor", affectedFiles=["app:*"])
    one = add(q, "fix", affectedFiles=["app:src/deep/a.py"])
    elsewhere = add(q, "docs", affectedFiles=["docs:index.md"])
    q.start(whole)
    assert [pr["id"] for pr in q.dispatch()["prs"]] == [elsewhere]
    with pytest.raises(Conflict, match=f"by {whole}"):
        q.start(one)


def test_dispatch_orders_by_priority_then_fifo_and_caps_at_five(vault: Path, clock: Any) -> None:
    q = open_q(vault)
    order = []
    for i, priority in enumerate(["low", "high", "critical", "medium", "high", "low", "critical"]):
        clock(f"2026-03-18T08:00:0{i}.000Z")
        order.append((priority, add(q, f"task {i}", priority=priority)))
    got = q.dispatch(50)
    assert got["count"] == 5
    rank = {"critical": 0, "high": 1, "medium": 2, "low": 3}
    expected = [pr_id for _, pr_id in sorted(order, key=lambda p: rank[p[0]])][:5]
    assert [pr["id"] for pr in got["prs"]] == expected
    assert q.dispatch(2)["count"] == 2
    assert q.dispatch(0)["count"] == 0
    with pytest.raises(InvalidInput):
        q.dispatch(-1)


def test_duplicates_are_queued_source_agent_task(vault: Path, clock: Any) -> None:
    q = open_q(vault)
    first = add(q, "same", agent="dev")
    again = q.enqueue({"task": "same", "agent": "dev"})
    assert again == {"status": "duplicate", "message": "Identical PR already in queue",
                     "existing": first}
    add(q, "same", agent="other")
    q.start(first)
    add(q, "same", agent="dev")  # the first is no longer queued


def test_full_queue_purges_the_oldest_low_priority_pr(vault: Path, clock: Any) -> None:
    set_queue(vault, max_active=3)
    q = open_q(vault)
    old_low = add(q, "old low", priority="low")
    add(q, "new low", priority="low")
    add(q, "high", priority="high")
    result = q.enqueue({"task": "urgent", "priority": "critical"})
    assert result["purged"] == [old_low]
    purge = [r for r in records(vault) if r.get("op") == "purge"]
    assert [(r["pr"], r["status"], r["result"]) for r in purge] == [(old_low, "purged", "queue_full")]
    assert q.stats()["byStatus"] == {"queued": 3, "purged": 1}


def test_full_queue_with_nothing_to_purge_is_refused(vault: Path, clock: Any) -> None:
    set_queue(vault, max_active=2)
    q = open_q(vault)
    add(q, "one", priority="high")
    add(q, "two", priority="low")
    kept = add(q, "three", priority="medium")  # purges "two"
    before = log_bytes(vault)
    with pytest.raises(Conflict, match=r"the queue is full: 2 active .* only 0 queued at low"):
        q.enqueue({"task": "four"})
    assert log_bytes(vault) == before
    assert q.state().status(kept) == "queued"


def test_lock_limit(vault: Path, clock: Any) -> None:
    set_queue(vault, max_locks=2)
    q = open_q(vault)
    ids = [add(q, f"t{i}", affectedFiles=[f"app:f{i}"]) for i in range(3)]
    lockless = add(q, "no files")
    q.start(ids[0])
    q.start(ids[1])
    assert [pr["id"] for pr in q.dispatch()["prs"]] == [lockless]  # no file PR while full
    before = log_bytes(vault)
    with pytest.raises(Conflict, match=r"2 locks are held \(queue.max_locks is 2\)"):
        q.start(ids[2])
    assert log_bytes(vault) == before
    q.start(lockless)
    q.complete(ids[0])
    q.start(ids[2])
    assert q.stats()["activeLocks"] == 2


def test_dag_limits_and_checks(vault: Path, clock: Any) -> None:
    q = open_q(vault)
    tasks = [{"key": f"k{i}", "task": f"t{i}"} for i in range(21)]
    before = log_bytes(vault)
    with pytest.raises(InvalidInput, match="has 21 tasks"):
        q.create_dag(parse_dag(json.dumps({"dagId": "big", "tasks": tasks}).encode(), "big.json"))
    q.create_dag(parse_dag(json.dumps({"dagId": "big", "tasks": tasks[:20]}).encode(), "b.json"))
    with pytest.raises(InvalidInput, match="DAG big already has 20"):
        q.enqueue({"task": "one more", "dagId": "big"})
    with pytest.raises(InvalidInput, match="unknown dependency: pr-nope"):
        q.enqueue({"task": "x", "dependsOn": ["pr-nope"]})
    spec = parse_dag(b'{"dagId": "d", "tasks": [{"key": "a", "task": "A", "dependsOn": ["zz"]}]}',
                     "d.json")
    with pytest.raises(InvalidInput, match=r"d\.json: task 'a': unknown dependency: zz"):
        q.create_dag(spec)
    assert len(q.state().dags["big"]) == 20 and "d" not in q.state().dags
    again = q.create_dag(parse_dag(json.dumps({"dagId": "big", "tasks": tasks[:2]}).encode(), "b"))
    assert again["status"] == "duplicate"
    assert before != log_bytes(vault)


@pytest.mark.parametrize(("text", "message"), [
    ("[1, 2]", "a DAG file is a mapping"),
    ('{"tasks": [{"key": "a", "task": "A"}]}', "dagId must be non-empty text"),
    ('{"dagId": "d", "tasks": []}', "tasks must be a non-empty list"),
    ('{"dagId": "d", "tasks": [{"key": "a", "task": "A", "depends_on": ["b"]}]}',
     "tasks[0] (key 'a'): unknown key 'depends_on'"),
    ('{"dagId": "d", "tasks": [{"key": "a", "task": "A"}, {"key": "a", "task": "B"}]}',
     "tasks[1] (key 'a'): the key is used twice"),
    ('{"dagId": "d", "tasks": [{"key": "a", "task": "A", "priority": "urgent"}]}',
     "unknown priority 'urgent'"),
    ('{"dagId": "d", "tasks": [{"key": "a", "task": "A", "dependsOn": ["a"]}]}',
     "dependency cycle: a -> a"),
    ('{"dagId": "d", "tasks": [{"key": "a", "task": "A", "dependsOn": ["c"]}, '
     '{"key": "b", "task": "B", "dependsOn": ["a"]}, {"key": "c", "task": "C", "dependsOn": ["b"]}]}',
     "dependency cycle: a -> c -> b -> a"),
    ("dagId: d\ntasks: [\n", "invalid YAML at line 3"),
    ('{"dagId": "d", "tasks": [', "invalid JSON"),
])
def test_bad_dag_files_name_the_problem(text: str, message: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_dag(text.encode(), "dag.yaml")
    assert str(caught.value).startswith("dag.yaml: ")
    assert message in str(caught.value)


def test_yaml_dag_files_and_find_cycle() -> None:
    spec = parse_dag(b"dagId: d\ntasks:\n  - key: a\n    task: A\n    files: [r:x]\n"
                     b"  - {key: b, task: B, dependsOn: [a], priority: high}\n", "d.yaml")
    assert spec.keys == ["a", "b"] and spec.depends == [[], ["a"]]
    assert spec.tasks[0]["affectedFiles"] == ["r:x"] and spec.tasks[0]["source"] == "dag"
    assert find_cycle({"a": ["b"], "b": ["c"], "c": []}) is None
    assert find_cycle({"a": ["b"], "b": ["c"], "c": ["b"]}) == ["b", "c", "b"]
    deep = {str(i): [str(i + 1)] for i in range(5000)}
    deep["5000"] = ["0"]
    assert len(find_cycle(deep) or []) == 5002


def test_start_is_refused_unless_queued_and_dependencies_done(vault: Path, clock: Any) -> None:
    q = open_q(vault)
    first = add(q, "first")
    second = add(q, "second", dependsOn=[first])
    with pytest.raises(Conflict, match=rf"dependencies are not done: {first} \(queued\)"):
        q.start(second)
    q.start(first)
    with pytest.raises(Conflict, match="is running, not queued"):
        q.start(first)
    q.complete(first)
    with pytest.raises(Conflict, match="is done, not queued"):
        q.start(first)
    with pytest.raises(Conflict, match="already done"):
        q.complete(first)
    with pytest.raises(NotFound, match="no prompt request 'pr-missing'"):
        q.start("pr-missing")
    with pytest.raises(NotFound):
        q.fail("pr-missing")
    with pytest.raises(NotFound, match="no DAG 'nope'"):
        q.dag("nope")
    assert q.start(second)["pr"]["status"] == "running"


def test_expired_deadlines_are_reported(vault: Path, clock: Any) -> None:
    q = open_q(vault)
    now = add(q, "now", deadline="immediate")
    day = add(q, "day", deadline="24h")
    week = add(q, "week", deadline="week-end")
    fixed = add(q, "fixed", deadline="2026-03-19T00:00:00Z")
    add(q, "never", deadline="none")
    add(q, "cycle", deadline="next-cycle")
    assert q.dispatch(5)["expired"] == [] and q.stats()["expired"] == 0
    clock("2026-03-18T08:00:01.000Z")
    assert q.dispatch()["expired"] == [now]
    clock("2026-03-19T08:00:01.000Z")
    assert q.dispatch()["expired"] == [now, day, fixed]
    q.complete(now)
    clock("2026-03-26T08:00:01.000Z")
    assert q.dispatch()["expired"] == [day, week, fixed]
    assert q.stats()["expired"] == 3
    with pytest.raises(InvalidInput, match="unknown deadline 'tomorrow'"):
        q.enqueue({"task": "x", "deadline": "tomorrow"})


# -- the fold and its cache -----------------------------------------------------------

def test_a_warm_cache_reads_no_history_and_a_changed_log_is_refolded(vault: Path, clock: Any) -> None:
    q = open_q(vault)
    for i in range(60):
        pr_id = add(q, f"history {i}")
        q.complete(pr_id)
    live = add(q, "live")
    fresh = open_q(vault)
    fresh.state()
    assert fresh.log.parsed < SAVE_LAG  # the cache lags the logs by fewer than SAVE_LAG
    fresh.log.save(fresh.state(), force=True)
    fresh.state()
    assert fresh.log.parsed == 0  # 121 records, none read again
    # A line another node wrote (arriving by a sync, the cache knows nothing of it).
    other = vault / "logs" / "queue" / "2026-03" / "other-node.jsonl"
    other.write_text(json.dumps({"id": "pr-9-00000009", "ts": "2026-03-18T09:00:00.000Z",
                                 "task": "from another node", "node": "other-node"}) + "\n")
    state = fresh.state()
    assert fresh.log.parsed == 1
    assert state.status("pr-9-00000009") == "queued"
    # Edit a line in place (same size): the digest catches it and the fold starts over.
    path = next((vault / "logs" / "queue").rglob("test-node.jsonl"))
    data = path.read_bytes()
    line = next(x for x in data.split(b"\n") if live.encode() in x)
    path.write_bytes(data.replace(line, line.replace(b'"task":"live"', b'"task":"evil"')))
    state = fresh.state()
    assert fresh.log.parsed == 122
    assert state.prs[live]["task"] == "evil"
    # A damaged cache is rebuilt, not trusted.
    cache = vault / ".git" / "gitvault" / "queue-state.cache"
    cache.write_bytes(cache.read_bytes()[:100])
    assert open_q(vault).stats() == {"total": 62, "byStatus": {"queued": 2, "done": 60},
                                     "activeLocks": 0, "expired": 0}


def test_a_long_history_is_parsed_only_when_a_look_up_needs_it(vault: Path, tmp_path: Path,
                                                                clock: Any) -> None:
    folder = tmp_path / "peer" / "skills" / "prompt-request-bus"
    folder.mkdir(parents=True)
    lines = [json.dumps({"id": f"pr-{i}-old", "ts": T0, "task": f"old {i}", "status": "done"})
             for i in range(600)]
    lines += [json.dumps({"id": f"pr-{i}-new", "ts": T0, "task": f"new {i}"}) for i in range(3)]
    (folder / "prompt-request-queue.jsonl").write_text("\n".join(lines) + "\n")
    import_bus_queue(tmp_path / "peer", VaultLayout(vault), "test-node")
    open_q(vault).state()  # fold once (600 closed PRs go to the history)
    q = open_q(vault)
    assert q.dispatch()["count"] == 3 and q.stats()["byStatus"] == {"queued": 3, "done": 600}
    state = q.state()
    assert q.log.parsed == 0 and not state.history_parsed
    dependent = add(q, "after an old one", dependsOn=["pr-7-old"])
    assert [pr["id"] for pr in q.dispatch()["prs"]][-1] == dependent
    assert q.state().status("pr-599-old") == "done"
    # A damaged history (CRC mismatch) is not trusted: the fold starts over.
    cache = vault / ".git" / "gitvault" / "queue-state.cache"
    data = bytearray(cache.read_bytes())
    data[data.index(b"pr-5-old") + 3] = ord("9")
    cache.write_bytes(bytes(data))
    again = open_q(vault)
    assert again.state().status("pr-5-old") == "done" and again.log.parsed == 604


def test_older_records_from_a_sync_are_folded_in_time_order(vault: Path, clock: Any) -> None:
    clock("2026-03-18T10:00:00.000Z")
    q = open_q(vault)
    pr_id = add(q, "work")
    q.state()
    # Another node started and finished it earlier; its file arrives later (a sync).
    other = vault / "logs" / "queue" / "2026-03" / "aaa-node.jsonl"
    other.write_text(json.dumps({"id": "01A", "ts": "2026-03-18T10:00:00.000Z", "op": "start",
                                 "pr": pr_id, "status": "running", "node": "aaa-node"}) + "\n")
    state = q.state()
    assert state.status(pr_id) == "running"  # equal ts: node id breaks the tie (aaa < test)
    other.write_text(other.read_text() + json.dumps({
        "id": "01B", "ts": "2026-03-18T09:00:00.000Z", "op": "complete", "pr": pr_id,
        "status": "done", "result": "ok", "node": "aaa-node"}) + "\n")
    state = q.state()  # an older record: folded from scratch, in ts order
    assert q.log.parsed == 3
    assert state.status(pr_id) == "running"


def test_bad_lines_are_reported_not_fatal(vault: Path, clock: Any) -> None:
    q = open_q(vault)
    pr_id = add(q, "fine")
    path = next((vault / "logs" / "queue").rglob("*.jsonl"))
    with open(path, "ab") as handle:
        handle.write(b'{"ts": "2026-03-18T08:00:00Z", "op": "start"}\nnot json\n{"half":')
    state = q.state()
    assert state.status(pr_id) == "queued"
    reasons = [(w.line, w.reason) for w in q.warnings]
    assert reasons == [(2, "queue event 'start' without a pr"), (3, "invalid JSON: Expecting value")]
    q.log.save(state, force=True)
    again = open_q(vault)
    again.state()
    assert again.log.parsed == 0 and [w.line for w in again.warnings] == [2, 3]
    second = add(again, "after the torn line")  # the torn tail gets a line of its own
    assert open_q(vault).state().status(second) == "queued"


# -- real processes -------------------------------------------------------------------

RACER = """
import fcntl, json, os, sys
from pathlib import Path
from gitvault.core import config
from gitvault.errors import GitvaultError
from gitvault.core.paths import VaultLayout
from gitvault.queue.commands import Queue
root, gate, ready, action, *ids = sys.argv[1:]
layout = VaultLayout(Path(root))
q = Queue(layout, f"node-{os.getpid()}", config.load(layout.config, layout.cache).queue)
fd = os.open(gate, os.O_RDONLY)
open(os.path.join(ready, str(os.getpid())), "w").close()
fcntl.flock(fd, fcntl.LOCK_SH)  # wait for the test to open the gate
out = []
for pr_id in ids:
    try:
        if action == "complete":
            out.append(q.complete(pr_id)["status"])
        elif action == "start":
            out.append(q.start(pr_id)["status"])
        else:
            out.append(q.enqueue({"task": pr_id, "agent": "racer"})["status"])
    except GitvaultError as exc:
        out.append(f"{exc.exit_code}: {exc}")
print(json.dumps(out))
"""


def race(root: Path, tmp_path: Path, jobs: list[tuple[str, list[str]]]) -> list[list[str]]:
    """Run each (action, ids) job in its own process, all released at the same moment."""
    gate, ready = tmp_path / "gate", tmp_path / "ready"
    gate.touch()
    ready.mkdir(exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("GITVAULT_NOW", None)
    fd = os.open(gate, os.O_RDWR)
    import fcntl
    fcntl.flock(fd, fcntl.LOCK_EX)
    procs = [subprocess.Popen([sys.executable, "-c", RACER, str(root), str(gate), str(ready),
                               action, *ids], stdout=subprocess.PIPE, env=env)
             for action, ids in jobs]
    deadline = time.monotonic() + 60
    while len(list(ready.iterdir())) < len(procs) and time.monotonic() < deadline:
        time.sleep(0.01)
    os.close(fd)  # open the gate
    outs = []
    for proc in procs:
        out, _ = proc.communicate(timeout=120)
        assert proc.returncode == 0
        outs.append(json.loads(out))
    return outs


def test_eight_processes_completing_forty_prs_lose_nothing(vault: Path, tmp_path: Path) -> None:
    q = open_q(vault)
    ids = [add(q, f"job {i}") for i in range(40)]
    outs = race(vault, tmp_path, [("complete", ids[i::8]) for i in range(8)])
    assert all(status == "completed" for out in outs for status in out)
    state = open_q(vault).state()
    assert [state.status(i) for i in ids] == ["done"] * 40
    assert sum(r.get("op") == "complete" for r in records(vault)) == 40


def test_enqueue_racing_complete_loses_nothing(vault: Path, tmp_path: Path) -> None:
    q = open_q(vault)
    ids = [add(q, f"old {i}") for i in range(24)]
    jobs = [("complete", ids[i::4]) for i in range(4)]
    jobs += [("enqueue", [f"new {w}-{i}" for i in range(6)]) for w in range(4)]
    race(vault, tmp_path, jobs)
    state = open_q(vault).state()
    assert [state.status(i) for i in ids] == ["done"] * 24
    new = [pr for pr in state.active() if pr["agent"] == "racer"]
    assert sorted(pr["task"] for pr in new) == sorted(f"new {w}-{i}" for w in range(4) for i in range(6))


def test_eight_starts_of_prs_touching_one_file_exactly_one_wins(vault: Path, tmp_path: Path) -> None:
    q = open_q(vault)
    ids = [add(q, f"edit {i}", affectedFiles=["app:src/shared.py"]) for i in range(8)]
    # Each process tries every PR (in its own order): many chances to race.
    outs = race(vault, tmp_path, [("start", ids[i:] + ids[:i]) for i in range(8)])
    results = [r for out in outs for r in out]
    assert results.count("running") == 1
    assert all(r.startswith(("3: Lock conflict: files [app:src/shared.py]", "3: pr-"))
               for r in results if r != "running")
    assert len(open_q(vault).locks()) == 1


# -- import from agent-skill-bus --------------------------------------------------------

def peer_folder(root: Path) -> Path:
    folder = root / "skills" / "prompt-request-bus"
    folder.mkdir(parents=True)
    prs = [
        {"id": "pr-1-aaaa0001", "ts": "2026-03-18T08:00:00.000Z", "source": "human",
         "priority": "high", "agent": "dev", "task": "Fix auth", "context": "401s",
         "affectedSkills": ["api"], "affectedFiles": ["app:src/auth.ts"], "deadline": "24h",
         "status": "running", "result": None, "dependsOn": [], "dagId": "dag-x"},
        {"id": "pr-2-aaaa0002", "ts": "2026-03-18T08:00:01.000Z", "source": "cron",
         "priority": "low", "agent": "ops", "task": "Rotate logs", "context": "",
         "affectedSkills": [], "affectedFiles": [], "deadline": "none", "status": "done",
         "result": "rotated", "dependsOn": [], "dagId": None},
        {"id": "pr-3-aaaa0003", "ts": "2026-03-18T08:00:02.000Z", "source": "dag",
         "priority": "medium", "agent": "dev", "task": "Test auth", "context": "",
         "affectedSkills": [], "affectedFiles": [], "deadline": "none", "status": "queued",
         "result": None, "dependsOn": ["pr-1-aaaa0001"], "dagId": "dag-x"},
    ]
    lines = [json.dumps(pr) for pr in prs]
    lines.insert(2, "{broken")
    (folder / "prompt-request-queue.jsonl").write_text("\n".join(lines) + "\n")
    (folder / "active-locks.jsonl").write_text(json.dumps(
        {"agent": "dev", "files": ["app:src/auth.ts"], "prId": "pr-1-aaaa0001",
         "lockedAt": "2026-03-18T08:05:00.000Z", "ttl": 7200}) + "\n")
    (folder / "dag-state.jsonl").write_text(json.dumps(
        {"dagId": "dag-x", "updated": "2026-03-18T08:05:00.000Z", "total": 2, "queued": 1,
         "running": 1, "done": 0, "failed": 0, "blocked": 0}) + "\n")
    return root


def test_import_keeps_ids_and_importing_twice_adds_nothing(vault: Path, tmp_path: Path,
                                                           clock: Any) -> None:
    peer = peer_folder(tmp_path / "peer")
    layout = VaultLayout(vault)
    result = import_bus_queue(peer, layout, "test-node")
    assert (result["prs"], result["locks"], result["dags"], result["skipped"]) == (3, 1, 1, 0)
    assert [(w.line, w.reason[:12]) for w in result["warnings"]] == [(3, "invalid JSON")]
    imported = records(vault)
    assert {r["importedFrom"]["line"] for r in imported if "task" in r} == {1, 2, 4}
    q = open_q(vault)
    state = q.state()
    assert {i: state.status(i) for i in ("pr-1-aaaa0001", "pr-2-aaaa0002", "pr-3-aaaa0003")} == \
        {"pr-1-aaaa0001": "running", "pr-2-aaaa0002": "done", "pr-3-aaaa0003": "queued"}
    assert q.locks() == [{"agent": "dev", "files": ["app:src/auth.ts"], "prId": "pr-1-aaaa0001",
                          "lockedAt": "2026-03-18T08:05:00.000Z", "ttl": 7200}]
    dag = q.dag("dag-x")
    assert (dag["total"], dag["running"], dag["queued"]) == (2, 1, 1)
    before = log_bytes(vault)
    again = import_bus_queue(peer, layout, "test-node")
    assert (again["prs"], again["locks"], again["dags"], again["skipped"]) == (0, 0, 0, 5)
    assert log_bytes(vault) == before
    # The imported queue works: completing the running PR frees its dependent.
    q.complete("pr-1-aaaa0001")
    assert [pr["id"] for pr in q.dispatch()["prs"]] == ["pr-3-aaaa0003"]


def test_import_of_a_missing_folder_adds_nothing(vault: Path, tmp_path: Path) -> None:
    result = import_bus_queue(tmp_path / "nothing", VaultLayout(vault), "test-node")
    assert (result["prs"], result["locks"], result["dags"], result["warnings"]) == (0, 0, 0, [])
    assert log_bytes(vault) == {}
