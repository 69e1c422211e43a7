"""The append-only record store: real files, real processes, real kills."""

from __future__ import annotations

import fcntl
import json
import os
import random
import signal
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from gitvault.core.records import (
    LineWarning,
    Scan,
    append_record,
    iter_file,
    locked,
    move_bad_lines,
    new_id,
    scan,
    stamp,
    stream_files,
)
from gitvault.errors import InvalidInput

REPO = Path(__file__).resolve().parents[2]
TS = "2026-01-01T00:00:00.000Z"
CROCKFORD = set("0123456789ABCDEFGHJKMNPQRSTVWXYZ")

# Starts WRITERS writer processes (fork: one interpreter start for many writers);
# each signals it is ready, waits for the gate's lock to be released, appends COUNT.
LAUNCHER = """
import fcntl, os, sys
from gitvault.core.records import append_record
path, gate, ready, first, writers, count = sys.argv[1:7]
children = []
for writer in range(int(first), int(first) + int(writers)):
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            fd = os.open(gate, os.O_RDONLY)
            open(os.path.join(ready, str(writer)), "w").close()
            fcntl.flock(fd, fcntl.LOCK_SH)  # blocks until the test lets all go
            for seq in range(int(count)):
                append_record(path, {"ts": "2026-01-01T00:00:00.000Z", "writer": writer,
                                     "seq": seq, "pad": "x" * (seq * 37 % 700)})
            code = 0
        except BaseException:
            import traceback
            traceback.print_exc()
        finally:
            os._exit(code)
    children.append(pid)
sys.exit(max(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) != 0 for pid in children))
"""

# A writer appending in a tight loop until killed; some records span many pages.
ENDLESS_WRITER = """
import sys
from gitvault.core.records import append_record
path, writer = sys.argv[1], int(sys.argv[2])
seq = 0
while True:
    size = 150_000 if seq % 4 == 3 else seq * 53 % 900
    append_record(path, {"ts": "2026-01-01T00:00:00.000Z", "writer": writer,
                         "seq": seq, "pad": "x" * size})
    seq += 1
"""

ONE_APPEND = """
import sys, json
from gitvault.core.records import append_record
append_record(sys.argv[1], json.loads(sys.argv[2]))
"""


def python(code: str, *args: str) -> list[str]:
    return [sys.executable, "-c", code, *args]


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return env


def run_python(code: str, *args: str) -> None:
    subprocess.run(python(code, *args), cwd=REPO, env=child_env(), check=True, timeout=60)


def write_lines(path: Path, *lines: str | bytes, tail: bytes = b"") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = b"".join((x if isinstance(x, bytes) else x.encode()) + b"\n" for x in lines)
    path.write_bytes(data + tail)


def rec(**fields: object) -> str:
    return json.dumps({"ts": TS, **fields})


def run_writers(path: Path, launchers: int, per_launcher: int, count: int) -> None:
    """Run launchers x per_launcher writer processes, all released at one moment."""
    work = path.parent.parent / f"gate-{time.monotonic_ns()}"
    gate, ready = work / "gate", work / "ready"
    ready.mkdir(parents=True)
    gate.touch()
    writers = launchers * per_launcher
    gate_fd = os.open(gate, os.O_RDONLY)
    fcntl.flock(gate_fd, fcntl.LOCK_EX)
    procs = [
        subprocess.Popen(
            python(LAUNCHER, *map(str, [path, gate, ready, first, per_launcher, count])),
            cwd=REPO,
            env=child_env(),
        )
        for first in range(0, writers, per_launcher)
    ]
    try:
        deadline = time.monotonic() + 120
        while len(os.listdir(ready)) < writers:
            assert time.monotonic() < deadline, "writers did not start"
            assert all(p.poll() is None for p in procs), "a writer died at start"
            time.sleep(0.01)
        os.close(gate_fd)  # releases the gate: every writer starts at once
        assert [p.wait(timeout=120) for p in procs] == [0] * launchers
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()


# --- concurrency -----------------------------------------------------------------


def test_fifty_processes_appending_to_one_file_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "logs" / "runs" / "2026-01" / "node.jsonl"
    writers, count = 50, 1000
    run_writers(path, launchers=5, per_launcher=10, count=count)

    data = path.read_bytes()
    assert data.endswith(b"\n")
    lines = data.split(b"\n")[:-1]
    assert len(lines) == writers * count
    pairs = [(r["writer"], r["seq"]) for r in map(json.loads, lines)]
    assert len(set(pairs)) == writers * count
    assert set(pairs) == {(w, s) for w in range(writers) for s in range(count)}

    result = scan(path.parent.parent)
    assert result.warnings == []
    assert len(result.records) == writers * count
    for w in range(writers):  # equal ts: append order within the file
        seqs = [r["seq"] for r in result.records if r["writer"] == w]
        assert seqs == list(range(count))


def test_writer_killed_mid_append_leaves_earlier_lines_intact(tmp_path: Path) -> None:
    path = tmp_path / "logs" / "runs" / "2026-01" / "node.jsonl"
    aside = path.with_name(path.name + ".torn")
    fragments: list[bytes] = []  # torn tails, moved aside in order
    for round_ in range(5):
        proc = subprocess.Popen(python(ENDLESS_WRITER, str(path), str(round_)), cwd=REPO, env=child_env())
        start = path.stat().st_size if path.exists() else 0
        deadline = time.monotonic() + 60
        while not path.exists() or path.stat().st_size <= start:
            assert time.monotonic() < deadline, "writer wrote nothing"
            assert proc.poll() is None, "writer died"
            time.sleep(0.002)
        time.sleep(random.uniform(0.0, 0.05))
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(timeout=30) == -signal.SIGKILL

        snapshot = path.read_bytes()
        cut = snapshot.rfind(b"\n") + 1
        complete, tail = snapshot[:cut], snapshot[cut:]
        lines = complete.split(b"\n")[:-1]
        seqs = []
        for line in lines:
            record = json.loads(line)  # every complete line is a whole record
            if record.get("writer") == round_:
                seqs.append(record["seq"])
        assert seqs == list(range(len(seqs))), "the killed writer lost or repeated a line"
        assert seqs, "the writer was killed before its first append"

        # Another process appends after the kill: complete lines stay, a torn tail is
        # moved aside byte for byte, the new line reads.
        run_python(ONE_APPEND, str(path), json.dumps({"ts": TS, "marker": round_}))
        markers = round_ + 1
        after = path.read_bytes()
        assert after.startswith(complete)
        assert after[len(complete):].count(b"\n") == 1
        if tail:
            fragments.append(tail)
        if fragments:
            assert aside.read_bytes() == b"".join(f + b"\n" for f in fragments)
        result = scan(path)
        assert result.warnings == []
        assert [r["marker"] for r in result.records if "marker" in r] == list(range(markers))
        assert len(result.records) == len(after.split(b"\n")) - 1


def test_concurrent_appends_move_a_torn_tail_aside_exactly_once(tmp_path: Path) -> None:
    path = tmp_path / "logs" / "node.jsonl"
    torn = b'{"id":"x","ts":"2026-01-01T00:00:00Z","a":'
    write_lines(path, rec(id="a"), tail=torn)
    run_writers(path, launchers=1, per_launcher=12, count=1)
    data = path.read_bytes()
    assert torn not in data
    assert b"\n\n" not in data
    assert path.with_name("node.jsonl.torn").read_bytes() == torn + b"\n"
    result = scan(path)
    assert result.warnings == []
    assert sorted(r["writer"] for r in result.records if "writer" in r) == list(range(12))


def test_locked_excludes_another_process(tmp_path: Path) -> None:
    lock = tmp_path / "deep" / "er" / "queue.lock"
    probe = (
        "import fcntl, os, sys\n"
        "fd = os.open(sys.argv[1], os.O_RDWR)\n"
        "try:\n"
        "    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)\n"
        "except BlockingIOError:\n"
        "    sys.exit(3)\n"
    )
    with locked(lock):
        assert lock.exists()
        held = subprocess.run(python(probe, str(lock)), timeout=60)
        assert held.returncode == 3
    free = subprocess.run(python(probe, str(lock)), timeout=60)
    assert free.returncode == 0


# --- torn tails ------------------------------------------------------------------


def test_torn_tail_is_ignored_then_moved_aside_by_the_next_append(tmp_path: Path) -> None:
    path = tmp_path / "runs" / "node.jsonl"
    torn = b'{"id":"x","ts":"2026-01-01T00:00:00Z","a":'
    write_lines(path, rec(id="r1", n=1), rec(id="r2", n=2), tail=torn)

    before = scan(path)
    assert before.warnings == []  # a write in progress, not a problem
    assert [r["n"] for r in before.records] == [1, 2]

    written = append_record(path, {"id": "r3", "ts": TS, "n": 3})
    assert written == {"id": "r3", "ts": TS, "n": 3}
    assert torn not in path.read_bytes()
    assert path.read_bytes().endswith(b'"n": 2}\n{"id":"r3","ts":"' + TS.encode() + b'","n":3}\n')
    assert path.with_name("node.jsonl.torn").read_bytes() == torn + b"\n"

    after = scan(path.parent)  # readers of *.jsonl never read the .torn file
    assert [r["n"] for r in after.records] == [1, 2, 3]
    assert after.warnings == []


def test_iter_file_numbers_lines_skips_blanks_and_ignores_unfinished_tail(
    tmp_path: Path,
) -> None:
    path = tmp_path / "a.jsonl"
    write_lines(path, '{"a":1}', "", "   \t", '{"a":2}', "[1]", tail=b'{"a":3}')
    assert list(iter_file(path)) == [
        (1, {"a": 1}, None),
        (4, {"a": 2}, None),
        (5, None, "not a JSON object"),
    ]


# --- scan ------------------------------------------------------------------------


def test_scan_reports_bad_lines_with_file_and_line_and_returns_the_rest(
    tmp_path: Path,
) -> None:
    path = tmp_path / "logs" / "runs" / "2026-01" / "n1.jsonl"
    write_lines(
        path,
        rec(id="1"),
        "null",
        "[]",
        "{broken",
        b"\xff\xfe{}",
        "",
        '"x"',
        '{"id":"7"}',
        '{"id":"8","ts":"yesterday"}',
        '{"id":"9","ts":5}',
        rec(id="10"),
    )
    result = scan(tmp_path / "logs" / "runs")
    assert [r["id"] for r in result.records] == ["1", "10"]
    assert [str(w) for w in result.warnings] == [
        f"{path}:2: not a JSON object",
        f"{path}:3: not a JSON object",
        f"{path}:4: invalid JSON: Expecting property name enclosed in double quotes",
        f"{path}:5: not UTF-8",
        f"{path}:7: not a JSON object",
        f"{path}:8: missing ts",
        f"{path}:9: bad ts: 'yesterday'",
        f"{path}:10: bad ts: 5",
    ]


def test_scan_drops_duplicate_ids_first_read_wins(tmp_path: Path) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    write_lines(a, rec(id="dup", v="first"), rec(id="u1"), rec(v="no id"))
    write_lines(b, rec(id="dup", v="second"), rec(id="u1"), rec(v="no id"))
    result = scan(tmp_path)
    assert result.warnings == []
    assert [(r.get("id"), r.get("v")) for r in result.records] == [
        ("dup", "first"),
        ("u1", None),
        (None, "no id"),
        (None, "no id"),  # records without an id are never deduplicated
    ]


def test_scan_orders_equal_ts_by_node_then_append_order(tmp_path: Path) -> None:
    # File paths sort opposite to node ids, so only the node id can order them.
    zeta = tmp_path / "logs" / "2026-01" / "1.jsonl"
    alpha = tmp_path / "logs" / "2026-01" / "2.jsonl"
    write_lines(
        zeta,
        json.dumps({"id": "z1", "ts": "2026-01-01T00:00:01Z", "node": "zeta"}),
        json.dumps({"id": "z2", "ts": "2026-01-01T00:00:00Z", "node": "zeta"}),
        json.dumps({"id": "z3", "ts": "2026-01-01T00:00:00.000Z", "node": "zeta"}),
        json.dumps({"id": "z4", "ts": "2025-12-31T23:59:59Z", "node": "zeta"}),
    )
    write_lines(
        alpha,
        json.dumps({"id": "a2", "ts": "2026-01-01T01:00:00+01:00", "node": "alpha"}),
        json.dumps({"id": "a1", "ts": "2026-01-01T00:00:00Z", "node": "alpha"}),
        json.dumps({"id": "a3", "ts": "2026-01-01T00:00:00.500Z", "node": "alpha"}),
    )
    result = scan(tmp_path / "logs")
    assert result.warnings == []
    assert [r["id"] for r in result.records] == ["z4", "a2", "a1", "z2", "z3", "a3", "z1"]
    # Files given in the other order: the node id, not the file order, breaks ties.
    again = scan([alpha, zeta])
    assert [r["id"] for r in again.records] == [r["id"] for r in result.records]


def test_scan_check_refuses_records_with_its_reason(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    write_lines(path, rec(id="1", result="success"), rec(id="2", result="meh"))

    def check(record: dict[str, object]) -> str | None:
        return None if record["result"] == "success" else f"unknown result {record['result']!r}"

    result = scan(str(path), check=check)
    assert [r["id"] for r in result.records] == ["1"]
    assert result.warnings == [LineWarning(str(path), 2, "unknown result 'meh'")]


def test_scan_of_a_missing_folder_is_empty(tmp_path: Path) -> None:
    assert scan(tmp_path / "nope") == Scan([], [])
    assert stream_files(tmp_path / "nope") == []


def test_stream_files_finds_jsonl_recursively_sorted(tmp_path: Path) -> None:
    for name in ["b/2026-02/n.jsonl", "a.jsonl", "b/2026-01/z.jsonl", "b/notes.txt", "c.json"]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    assert [p.relative_to(tmp_path).as_posix() for p in stream_files(tmp_path)] == [
        "a.jsonl",
        "b/2026-01/z.jsonl",
        "b/2026-02/n.jsonl",
    ]


# --- append, ids, stamps ---------------------------------------------------------


def test_append_record_writes_one_compact_line_in_new_folders(tmp_path: Path) -> None:
    path = tmp_path / "logs" / "events" / "2026-01" / "n.jsonl"
    old = os.umask(0o022)
    try:
        append_record(path, {"ts": TS, "note": "café\nnext line\u2028", "n": [1, 2.5]})
        append_record(str(path), {"ts": TS, "n": 2})
    finally:
        os.umask(old)
    assert path.stat().st_mode & 0o777 == 0o644
    assert path.read_bytes() == (
        b'{"ts":"2026-01-01T00:00:00.000Z","note":"caf\xc3\xa9\\nnext line\xe2\x80\xa8",'
        b'"n":[1,2.5]}\n{"ts":"2026-01-01T00:00:00.000Z","n":2}\n'
    )


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_append_record_refuses_non_finite_numbers(tmp_path: Path, bad: float) -> None:
    path = tmp_path / "n.jsonl"
    append_record(path, {"ts": TS, "score": 1})
    with pytest.raises(InvalidInput, match="non-finite number"):
        append_record(path, {"ts": TS, "score": bad})
    assert path.read_bytes() == b'{"ts":"2026-01-01T00:00:00.000Z","score":1}\n'


def test_append_record_refuses_what_json_cannot_hold(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="cannot be written as JSON"):
        append_record(tmp_path / "n.jsonl", {"ts": TS, "when": datetime.now()})
    assert not (tmp_path / "n.jsonl").exists()


def test_new_id_is_a_ulid_sorted_by_time() -> None:
    base = datetime(2026, 1, 1, tzinfo=timezone.utc)
    ids = [new_id(base + timedelta(milliseconds=ms)) for ms in (5, 0, 3, 1000, 2)]
    assert all(len(i) == 26 and set(i) <= CROCKFORD for i in ids)
    assert sorted(ids) == [ids[1], ids[4], ids[2], ids[0], ids[3]]
    assert new_id(datetime(1970, 1, 1, 0, 0, 0, 1000, tzinfo=timezone.utc))[:10] == "0000000001"
    assert new_id(base)[:10] == new_id(base.replace(tzinfo=None))[:10]

    burst = [new_id() for _ in range(5000)]  # many in one millisecond still increase
    assert len(set(burst)) == 5000
    assert burst == sorted(burst)
    time.sleep(0.002)
    assert new_id() > burst[-1]


def test_new_ids_from_separate_processes_differ(tmp_path: Path) -> None:
    code = "from gitvault.core.records import new_id\nprint(*(new_id() for _ in range(200)))"
    out = [
        subprocess.run(
            python(code), cwd=REPO, env=child_env(), capture_output=True, text=True, check=True
        ).stdout.split()
        for _ in range(2)
    ]
    assert len(set(out[0]) | set(out[1])) == 400
    assert max(out[0]) < min(out[1])  # the second process ran later


def test_stamp_adds_id_ts_and_node_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITVAULT_NOW", "2026-03-04T05:06:07Z")
    record = {"skill": "deploy", "result": "success"}
    stamped = stamp(record, "laptop")
    assert list(stamped) == ["id", "ts", "skill", "result", "node"]
    assert stamped["ts"] == "2026-03-04T05:06:07.000Z"
    assert stamped["node"] == "laptop"
    assert len(stamped["id"]) == 26
    assert record == {"skill": "deploy", "result": "success"}  # not modified

    kept = stamp({"node": "other", "skill": "x", "ts": TS, "id": "given"}, "laptop")
    assert list(kept.items()) == [("id", "given"), ("ts", TS), ("skill", "x"), ("node", "other")]


def test_appended_records_come_back_from_scan(tmp_path: Path) -> None:
    folder = tmp_path / "logs" / "runs"
    written = [append_record(folder / "2026-01" / "n.jsonl", stamp({"i": i}, "n")) for i in range(3)]
    assert scan(folder) == Scan(written, [])


def test_moving_bad_lines_aside_while_processes_append_loses_nothing(tmp_path: Path) -> None:
    """doctor --repair replaces a log file while other processes append to it: every
    appended record ends up in the new file exactly once, bad lines only in .torn."""
    import threading

    path = tmp_path / "logs" / "runs" / "2026-01" / "node.jsonl"
    write_lines(path, rec(id="a"), "{broken", "", rec(id="b"))
    moved: list[tuple[int, str]] = []
    stop = threading.Event()

    def repair() -> None:
        while not stop.is_set():
            moved.extend(move_bad_lines(path, 0))
            with open(path, "ab") as fh:  # a bad line appears again (a hand edit)
                fcntl.flock(fh.fileno(), fcntl.LOCK_SH)
                fh.write(b"not json\n")
            time.sleep(0.002)

    repairer = threading.Thread(target=repair)
    repairer.start()
    try:
        run_writers(path, launchers=2, per_launcher=5, count=150)
    finally:
        stop.set()
        repairer.join()
    moved.extend(move_bad_lines(path, 0))
    assert moved and all(why for _, why in moved)
    result = scan(path)
    assert result.warnings == []
    pairs = sorted((r["writer"], r["seq"]) for r in result.records if "writer" in r)
    assert pairs == [(w, s) for w in range(10) for s in range(150)]
    assert {r.get("id") for r in result.records} >= {"a", "b"}
    aside = path.with_name("node.jsonl.torn").read_bytes().split(b"\n")[:-1]
    assert aside[0] == b"{broken" and set(aside[1:]) == {b"not json"}


def test_now_iso_is_the_clocks_now_in_the_written_shape(monkeypatch: pytest.MonkeyPatch) -> None:
    """A record's ts: GITVAULT_NOW when set (through the clock), else the system clock
    formatted without datetime, in the same shape (ms, Z) and within the same second."""
    from gitvault.core import clock, records

    monkeypatch.setenv("GITVAULT_NOW", "2026-03-04T05:06:07.891234+02:00")
    assert records.now_iso() == "2026-03-04T03:06:07.891Z"
    monkeypatch.delenv("GITVAULT_NOW")
    before = clock.now()
    text = records.now_iso()
    after = clock.now()
    assert len(text) == 24 and text.endswith("Z")
    assert clock.iso(before)[:19] <= text[:19] <= clock.iso(after)[:19]
    assert before.replace(microsecond=before.microsecond // 1000 * 1000) <= clock.parse_iso(text) <= after


def test_append_to_stream_files_a_record_by_its_own_month(tmp_path: Path) -> None:
    """The record's ts, not a second reading of the clock, names the month folder (a
    write at a month's end never lands in the other month's file)."""
    from gitvault.core import records
    from gitvault.core.paths import VaultLayout

    layout = VaultLayout(tmp_path)
    (written,) = records.append_to_stream(layout, "events", "n1",
                                          [{"op": "x", "ts": "2025-03-31T23:59:59.999Z"}])
    assert written["ts"] == "2025-03-31T23:59:59.999Z" and written["node"] == "n1"
    path = tmp_path / "logs" / "events" / "2025-03" / "n1.jsonl"
    assert [json.loads(line)["id"] for line in path.read_text().splitlines()] == [written["id"]]
    assert records.append_to_stream(layout, "events", "n1", []) == []
