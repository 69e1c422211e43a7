"""Parsing, timestamps and rounding of the runs analysis, checked against slower
references: json with check_run line by line, Python's own ISO parser, and
JavaScript's toFixed run by node."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from gitvault.runs import columns, reader
from gitvault.runs.columns import Runs, SkillColumns, _parse_ms, check_run, id_key, ts_ms
from gitvault.runs.health import fixed3
from gitvault.runs.parse import parse_block


def _reference(lines: list[bytes]) -> tuple[dict[str, list[tuple[int, float, int, int]]], list[int]]:
    """Per skill (ts ms, score, failed, id key) in file order, and the bad line numbers:
    each line on its own through json and check_run."""
    skills: dict[str, list[tuple[int, float, int, int]]] = {}
    bad = []
    for number, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
        except ValueError:
            bad.append(number)
            continue
        if check_run(record) is not None:
            bad.append(number)
            continue
        ms = ts_ms(record["ts"])
        assert ms is not None
        skills.setdefault(record["skill"], []).append(
            (ms, float(record["score"]), int(record["result"] == "fail"), id_key(record.get("id"))))
    return skills, bad


_DECODABLE_BUT_BAD = [  # the decoder takes these; the timestamp check refuses them
    b"", b"   ", b'{"ts":"yesterday","skill":"s","result":"fail","score":0.1}',
    b'{"ts":"2026-11-29T24:00:00Z","skill":"s","result":"fail","score":0.1}']


_BAD_LINES = [
    b"", b"   ", b"null", b"[1]", b'{"ts": "2026-11-29T10:', b"\xff\xfe",
    b'{"ts":"2026-11-29T10:00:00Z","skill":"","result":"fail","score":0.1}',
    b'{"ts":"yesterday","skill":"s","result":"fail","score":0.1}',
    b'{"ts":"2026-11-29T10:00:00Z","skill":"s","result":"FAIL","score":0.1}',
    b'{"ts":"2026-11-29T10:00:00Z","skill":"s","result":"fail","score":"0.1"}',
    b'{"ts":"2026-11-29T10:00:00Z","skill":"s","result":"fail","score":true}',
    b'{"ts":"2026-11-29T10:00:00Z","skill":"s","result":"fail","score":1' + b"0" * 400 + b"}",
    b'{"ts":"2026-11-29T24:00:00Z","skill":"s","result":"fail","score":0.1}',
    b'{"ts":5,"skill":"s","result":"fail","score":0.1}',
    b'{"skill":"s","result":"fail","score":0.1}']


def _mixed_lines(seed: int, count: int, bad_lines: list[bytes]) -> list[bytes]:
    """Good run lines in many shapes (ids or none, other zones, no zone, int scores,
    escaped and raw UTF-8), with about 2% bad lines."""
    rng = random.Random(seed)
    names = ["web-search", "db", "constructor", "__proto__", "é-skill"]
    stamps = ["2026-11-29T10:00:%02d.%03dZ", "2026-11-29T11:00:%02d.%03d+02:00",
              "2026-11-29T12:00:%02d.%03d", "2026-11-29 13:00:%02d.%03dZ"]
    lines = []
    for n in range(count):
        if rng.random() < 0.02:
            lines.append(rng.choice(bad_lines))
            continue
        record = {"ts": rng.choice(stamps) % (n % 60, n % 1000), "agent": "a",
                  "skill": rng.choice(names), "task": "t " * rng.randrange(0, 60),
                  "result": rng.choice(["success", "partial", "fail"]),
                  "score": rng.choice([rng.random(), 1, 0])}
        if rng.random() < 0.3:
            record["id"] = f"r{n:011x}"
        lines.append(json.dumps(record, ensure_ascii=rng.random() < 0.5).encode())
    return lines


@pytest.mark.parametrize("only_decodable", [False, True])
def test_block_parser_equals_a_line_by_line_reference(only_decodable: bool) -> None:
    """Over several decoder pieces, the fast path and the line-by-line fallback give
    what json and check_run give one line at a time."""
    lines = _mixed_lines(11, 6000, _DECODABLE_BUT_BAD if only_decodable else _BAD_LINES)
    data = b"\n".join(lines) + b"\n"
    assert len(data) > 4 * (64 << 10)
    runs, per_file = Runs(), dict[str, SkillColumns]()
    assert parse_block(data, "f", 0, runs, per_file) == len(lines)
    expected, bad = _reference(lines)
    assert [w.line for w in runs.warnings] == bad
    got = {name: list(zip(cols.ts, cols.score, cols.fail, cols.ids or [0] * len(cols), strict=True))
           for name, cols in per_file.items()}
    assert got == expected
    for name, cols in per_file.items():
        fails = [r[0] for r in expected[name] if r[2]]
        assert cols.last_fail_ms == (max(fails) if fails else -(1 << 62))


def test_fast_timestamp_path_equals_the_full_parser() -> None:
    rng = random.Random(5)
    for _ in range(20_000):
        ms = rng.randrange(0, 4_102_444_800_000)  # 1970 .. 2100
        from datetime import datetime, timezone

        moment = datetime.fromtimestamp(ms / 1000, timezone.utc)
        text = moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"
        assert ts_ms(text) == _parse_ms(text) == ms, text
    for bad in ("2026-11-30T24:00:00.000Z", "2026-11-30T12:60:00.000Z", "2026-02-29T12:00:00.000Z",
                "2026-11-30T1a:00:00.000Z", "2026-11-30T12:00:6x.000Z", "yesterday", ""):
        assert ts_ms(bad) is None, bad


def test_fixed3_rounds_like_javascript_tofixed() -> None:
    node = shutil.which("node")
    assert node, "node is needed (.ci/run installs it)"
    rng = random.Random(9)
    values = [0.0625, 0.8125, 1.0005, 0.0005, 2.5e-4, 0.1 + 0.2, -0.0004, 0.9995, 1 / 3]
    values += [round(rng.random(), rng.randrange(2, 6)) for _ in range(300)]
    values += [sum(rng.randrange(0, 101) / 100 for _ in range(n)) / n for n in range(1, 200)]
    script = "const v = JSON.parse(require('fs').readFileSync(0, 'utf8'));" \
             "console.log(JSON.stringify(v.map(x => +x.toFixed(3))));"
    out = subprocess.run([node, "-e", script], input=json.dumps(values), capture_output=True,
                         text=True, check=True).stdout
    assert [fixed3(v) for v in values] == json.loads(out)


def test_parallel_read_equals_one_process_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A large file is split over forked workers (real processes) reading small
    blocks: the runs, their order and every bad line's number are those of one
    process reading the file in one block."""
    folder = tmp_path / "runs"
    folder.mkdir()
    lines = _mixed_lines(3, 5000, _BAD_LINES)
    (folder / "a.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    (folder / "b.jsonl").write_bytes(b"\n".join(_mixed_lines(4, 3000, _BAD_LINES)) + b"\n")

    def read(parallel: bool) -> tuple[dict[str, tuple[list[Any], ...]], list[Any]]:
        monkeypatch.setattr(reader, "_PARALLEL_BYTES", 1000 if parallel else 1 << 40)
        monkeypatch.setattr(reader, "_BLOCK", 5000 if parallel else 1 << 30)
        monkeypatch.setattr(reader, "_JOB_BYTES", 20_000 if parallel else 1 << 40)
        monkeypatch.setattr(reader.os, "cpu_count", lambda: 3)
        runs = reader.load_runs(folder)
        return ({name: (list(c.ts), list(c.score), list(c.fail), list(c.ids), c.last_fail)
                 for name, c in runs.skills.items()}, runs.warnings)

    parallel, one = read(True), read(False)
    assert parallel == one
    assert [w.line for w in one[1] if w.file.endswith("a.jsonl")] == _reference(lines)[1]
    assert sum(len(c[0]) for c in one[0].values()) > 7000


def test_a_child_killed_mid_read_leaves_its_share_to_the_reader(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A forked child that dies (SIGKILL, as the OOM killer does) loses nothing: the
    reading process parses that share itself, and the result is a one-process read."""
    import os
    import signal

    folder = tmp_path / "runs"
    folder.mkdir()
    (folder / "a.jsonl").write_bytes(b"\n".join(_mixed_lines(3, 6000, _BAD_LINES)) + b"\n")
    one = reader.load_runs(folder)
    parent, parse = os.getpid(), reader._parse_range
    children: list[int] = []

    def die_in_a_child(*args: Any) -> Any:
        if os.getpid() != parent:
            os.kill(os.getpid(), signal.SIGKILL)
        return parse(*args)

    real_fork = os.fork

    def fork() -> int:
        pid = real_fork()
        children.append(pid)
        return pid

    monkeypatch.setattr(reader, "_PARALLEL_BYTES", 1000)
    monkeypatch.setattr(reader, "_JOB_BYTES", 20_000)
    monkeypatch.setattr(reader.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(reader, "_parse_range", die_in_a_child)
    monkeypatch.setattr(reader.os, "fork", fork)
    again = reader.load_runs(folder)
    assert len(children) == 1  # it did fork, and the child died
    assert {n: list(c.ts) for n, c in again.skills.items()} == \
        {n: list(c.ts) for n, c in one.skills.items()}
    assert again.warnings == one.warnings


def test_merge_orders_by_ts_then_file_then_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """Per-file columns, some out of order and full of equal timestamps, merged a few
    runs at a time: the result is one stable sort by ts of the files in order, and the
    last failure is the latest one (the later file's on a tie)."""
    monkeypatch.setattr(columns, "_CHUNK", 7)
    rng = random.Random(8)
    parts: list[dict[str, SkillColumns]] = []
    rows: dict[str, list[tuple[int, float, int]]] = {}
    for _ in range(5):
        part: dict[str, SkillColumns] = {}
        for name in rng.sample(["a", "b", "c"], rng.randrange(1, 4)):
            cols = part[name] = SkillColumns()
            stamps = [rng.randrange(0, 40) for _ in range(rng.randrange(1, 120))]
            if rng.random() < 0.6:
                stamps.sort()
            for ms in stamps:
                score, failed = rng.random(), rng.random() < 0.3
                cols.ts.append(ms)
                cols.score.append(score)
                cols.fail.append(failed)
                if failed and ms >= cols.last_fail_ms:
                    cols.last_fail, cols.last_fail_ms = f"t{ms}-{len(parts)}", ms
                rows.setdefault(name, []).append((ms, score, failed))
            cols.ordered = stamps == sorted(stamps)
        parts.append(part)
    last_fail = {name: max(((c.last_fail_ms, k, c.last_fail) for k, p in enumerate(parts)
                            for n, c in p.items() if n == name and c.last_fail), default=None)
                 for name in rows}
    merged = columns.merge(parts)
    assert set(merged) == set(rows)
    for name, cols in merged.items():
        assert list(zip(cols.ts, cols.score, cols.fail, strict=True)) == \
            sorted(rows[name], key=lambda row: row[0]), name
        best = last_fail[name]
        assert cols.last_fail == (best[2] if best else None)


_GOOD = b'{"ts":"2026-11-29T10:00:00.000Z","skill":"s","result":"success","score":0.5}'
_BAD_TS = b'{"ts":"2026-11-29T24:00:00Z","skill":"s","result":"fail","score":0.1}'


@pytest.mark.parametrize("padding", [0, 3000])
def test_a_line_holds_exactly_one_record(padding: int) -> None:
    """Two objects on one line, or one object over two lines, are bad lines, and the
    lines after them keep their numbers (alone in a piece, or among many good lines)."""
    cases = [
        ([_GOOD + b" " + _GOOD, _GOOD, _BAD_TS, _GOOD], [1, 3]),
        ([_GOOD + b" " + _GOOD, _BAD_TS], [1, 2]),
        ([_GOOD[:29], _GOOD[29:], _GOOD], [1, 2]),
        ([_GOOD + _GOOD, _GOOD[:29], _GOOD[29:]], [1, 2, 3]),
    ]
    for lines, bad in cases:
        data = b"\n".join([_GOOD] * padding + lines) + b"\n"
        runs, per_file = Runs(), dict[str, SkillColumns]()
        assert parse_block(data, "f", 0, runs, per_file) == padding + len(lines)
        assert [w.line - padding for w in runs.warnings] == bad, lines
        assert len(per_file.get("s", ())) == padding + len(lines) - len(bad)


def test_hostile_lines_are_reported_not_raised() -> None:
    """Deep nesting, a score longer than Python converts, NaN: a warning each. A repeated
    key counts with its last value; a huge number or invalid UTF-8 in a field the
    analysis does not read does not stop the run from counting (agent-skill-bus reads
    all three that way)."""
    head = _GOOD[:-1]
    lines = [head + b',"notes":' + b"[" * 5000 + b"]" * 5000 + b"}",
             head.replace(b'"score":0.5', b'"score":1' + b"0" * 5000) + b"}",
             head + b',"n":1' + b"0" * 5000 + b"}",
             head.replace(b"0.5", b"NaN") + b"}",
             b'{"skill":"","ts":"2026-11-29T10:00:00Z","result":"fail","score":0.1,"skill":"s"}',
             head + b',"notes":"\xff\xfe"}']
    runs, per_file = Runs(), dict[str, SkillColumns]()
    parse_block(b"\n".join(lines) + b"\n", "f", 0, runs, per_file)
    assert [w.line for w in runs.warnings] == [1, 2, 4]
    assert runs.warnings[0].reason == "invalid JSON: nested too deeply"
    assert list(per_file["s"].fail) == [0, 1, 0]


def _run_line(skill: str, ts: str, ident: str | None = None) -> str:
    record = {"ts": ts, "skill": skill, "result": "success", "score": 0.5}
    if ident:
        record["id"] = ident
    return json.dumps(record) + "\n"


def test_a_long_write_in_progress_hides_only_itself(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reader, "_BLOCK", 64)
    folder = tmp_path / "runs"
    folder.mkdir()
    done = "".join(_run_line("s", f"2026-11-29T10:00:0{i}Z") for i in range(3))
    (folder / "a.jsonl").write_text(done + '{"ts":"2026-11-29T10:00:09Z","notes":"' + "x" * 500)
    runs = reader.load_runs(folder)
    assert len(runs.skills["s"]) == 3 and runs.warnings == []
    assert runs.files[0].size == len(done) and runs.files[0].lines == 3


def test_a_file_that_vanishes_while_read_is_left_out(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "runs"
    folder.mkdir()
    (folder / "a.jsonl").write_text(_run_line("a", "2026-11-29T10:00:00Z"))
    (folder / "b.jsonl").write_text(_run_line("b", "2026-11-29T10:00:00Z"))
    plan = reader._plan

    def plan_then_delete(path: str, start: int, first_line: int) -> Any:
        planned = plan(path, start, first_line)
        if path.endswith("b.jsonl"):
            Path(path).unlink()
        return planned

    monkeypatch.setattr(reader, "_plan", plan_then_delete)
    runs = reader.load_runs(folder)
    assert list(runs.skills) == ["a"] and [Path(f.path).name for f in runs.files] == ["a.jsonl"]


def test_distinct_ids_with_a_common_tail_both_count(tmp_path: Path) -> None:
    folder = tmp_path / "runs"
    folder.mkdir()
    ts = "2026-11-29T10:00:00Z"
    (folder / "a.jsonl").write_text(_run_line("s", ts, "agentA-000000000001"))
    (folder / "b.jsonl").write_text(_run_line("s", ts, "agentB-000000000001") +
                                    _run_line("s", ts, "agentA-000000000001"))
    assert len(reader.load_runs(folder).skills["s"]) == 2


def test_skill_order_is_the_same_from_the_cache_and_from_scratch(tmp_path: Path) -> None:
    folder, cache = tmp_path / "runs", tmp_path / "cache.bin"
    folder.mkdir()
    log = folder / "a.jsonl"
    log.write_text(_run_line("late", "2026-11-29T12:00:00Z"))
    reader.load_runs(folder, cache)
    with log.open("a") as fh:
        fh.write(_run_line("early", "2026-11-29T09:00:00Z"))
    (folder / "b.jsonl").write_text(_run_line("other", "2026-11-29T08:00:00Z"))
    warm = list(reader.load_runs(folder, cache).skills)
    assert warm == list(reader.load_runs(folder).skills)
    with log.open("a") as fh:
        fh.write(_run_line("newest", "2026-11-29T13:00:00Z") + _run_line("late", "2026-11-29T14:00:00Z"))
    assert list(reader.load_runs(folder, cache).skills) == list(reader.load_runs(folder).skills)


def _ulid_lines(node: str, skill: str, stamps: list[str], seed: int) -> list[str]:
    """Run lines as record-run writes them: a ULID, the record, the node."""
    rng = random.Random(seed)
    lines = []
    for ts in stamps:
        record = {"id": "01KB" + "".join(rng.choice("0123456789ABCDEFGHJKMNPQRSTVWXYZ")
                                         for _ in range(22)),
                  "ts": ts, "skill": skill, "result": rng.choice(["success", "fail"]),
                  "score": rng.random(), "node": node}
        lines.append(json.dumps(record) + "\n")
    return lines


def _counts(folder: Path, cache: Path | None = None) -> dict[str, int]:
    return {name: len(cols) for name, cols in reader.load_runs(folder, cache).skills.items()}


def test_a_copied_file_adds_no_runs(tmp_path: Path) -> None:
    """The same records in two files (a node's file copied, under its own name in
    another folder or under another node's name) count once, from the cache too."""
    folder, cache = tmp_path / "runs", tmp_path / "cache.bin"
    stamps = [f"2026-11-29T10:00:0{i % 3}.000Z" for i in range(9)]  # equal ts in groups
    lines = _ulid_lines("n1", "s", stamps, 1)
    (folder / "2026-11").mkdir(parents=True)
    (folder / "2026-11" / "n1.jsonl").write_text("".join(lines))
    assert _counts(folder, cache) == {"s": 9}
    (folder / "copy").mkdir()
    (folder / "copy" / "n1.jsonl").write_text("".join(lines))
    (folder / "2026-11" / "n2.jsonl").write_text("".join(lines[3:]) + "".join(
        _ulid_lines("n2", "s", stamps[:2], 2)))
    assert _counts(folder) == _counts(folder, cache) == {"s": 11}


def test_repeated_ids_are_dropped_wherever_they_are(tmp_path: Path) -> None:
    """Ids that are not ULIDs dedup the same way; a repeat in the same file, or one
    appended after the cache was written, is dropped; equal ts with other ids count."""
    folder, cache = tmp_path / "runs", tmp_path / "cache.bin"
    folder.mkdir()
    log = folder / "a.jsonl"
    ts = "2026-11-29T10:00:00Z"
    log.write_text(_run_line("s", ts, "run-1") + _run_line("s", ts, "run-2") +
                   _run_line("s", ts, "run-1") + _run_line("s", ts) + _run_line("s", ts) +
                   _run_line("t", ts, "run-1"))
    assert _counts(folder, cache) == {"s": 4, "t": 1}
    with log.open("a") as fh:
        fh.write(_run_line("s", ts, "run-2") + _run_line("s", "2026-11-29T11:00:00Z", "run-3"))
    assert _counts(folder, cache) == _counts(folder) == {"s": 5, "t": 1}
    (folder / "b.jsonl").write_text(_run_line("s", "2026-11-29T11:00:00Z", "run-3") +
                                    _run_line("s", "2026-11-29T11:00:00.000+00:00", "run-4"))
    assert _counts(folder, cache) == _counts(folder) == {"s": 6, "t": 1}


def test_dedup_keeps_the_first_of_each_id_in_reader_order() -> None:
    """Among runs of equal ts, the first of each id stays, in place; the others go."""
    cols = SkillColumns()
    rows = [(1, 0.1, 7), (2, 0.2, 7), (2, 0.3, 8), (2, 0.4, 7), (2, 0.5, 0), (2, 0.6, 0),
            (2, 0.7, 8), (3, 0.8, 7), (3, 0.9, 7), (4, 1.0, 9)]
    for ms, score, key in rows:
        cols.ts.append(ms)
        cols.score.append(score)
        cols.fail.append(0)
        cols.ids.append(key)
    out = columns._dedup(cols)
    assert list(out.score) == [0.1, 0.2, 0.3, 0.5, 0.6, 0.8, 1.0]
    assert list(out.ts) == [1, 2, 2, 2, 2, 3, 4] and len(out.ids) == len(out.fail) == 7
