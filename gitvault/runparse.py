"""Run lines into per-skill columns (runlog.py), fast: msgspec decodes a piece of
lines at a time into typed records, building only the fields the analysis reads, and
a short loop appends them to their skill's columns. A piece the decoder refuses is
read again line by line, so each bad line is reported with its number and reason.
"""

from __future__ import annotations

import json
from array import array
from datetime import datetime
from itertools import islice
from typing import Annotated, Any, Literal

import msgspec

from gitvault.jsonl import LineWarning
from gitvault.runlog import EPOCH, ONE_MS, Runs, SkillColumns, check_run, id_key, ts_ms


class _Run(msgspec.Struct, gc=False):
    """The fields of a run line that the analysis reads; msgspec skips the others
    without building them, and checks these types in C."""

    skill: Annotated[str, msgspec.Meta(min_length=1)]
    ts: str
    score: float
    result: Literal["success", "partial", "fail"]
    id: Any = None


_decoder = msgspec.json.Decoder(_Run)
_PIECE = 64 << 10  # lines are decoded in pieces this size, so they stay in the CPU cache


def parse_block(data: bytes, path: str, first_line: int, runs: Runs,
                per_file: dict[str, SkillColumns]) -> int:
    """Parse complete lines (``data`` ends with ``\\n``) into ``per_file``; returns the
    number of lines read. Each piece is decoded in one call; a piece the decoder
    refuses is read again line by line, so every bad line is reported with its number."""
    view = memoryview(data)
    start, line = 0, first_line
    while start < len(data):
        end = data.find(b"\n", start + _PIECE) + 1 or len(data)
        try:
            records = _decoder.decode_lines(view[start:end])
        except msgspec.DecodeError:
            _parse_lines(data[start:end].split(b"\n"), path, line, runs, per_file)
        else:
            _parse_records(records, data[start:end], path, line, runs, per_file)
        line += data.count(b"\n", start, end)
        start = end
    return line - first_line


class _Batch:
    """The skills one piece of lines appends to, and whether its runs came in ts order
    (then each skill's new runs are in order too, and only the seams need a look)."""

    __slots__ = ("appenders", "last", "ordered")

    def __init__(self) -> None:
        self.appenders: dict[str, tuple[Any, ...]] = {}
        self.last = -(1 << 62)
        self.ordered = True


def _parse_records(records: list[_Run], piece: bytes, path: str, first_line: int,
                   runs: Runs, per_file: dict[str, SkillColumns]) -> None:
    """Append decoded records; one that decodes but is still not a run (an empty skill
    name, an unreadable ts) is reported with its line number and skipped."""
    batch = _Batch()
    done = 0
    while (bad := _append(records, done, per_file, batch)) < len(records):
        lines = [n for n, raw in enumerate(piece.split(b"\n"), first_line + 1) if raw.strip()]
        runs.warnings.append(LineWarning(path, lines[bad], _why(records[bad])))
        done = bad + 1
    _finish(batch)


def _parse_lines(lines: list[bytes], path: str, first_line: int, runs: Runs,
                 per_file: dict[str, SkillColumns]) -> None:
    """The slow path for a piece with a bad line: each line decoded on its own."""
    batch = _Batch()
    for lineno, raw in enumerate(lines, first_line + 1):
        if not raw or raw.isspace():
            continue
        try:
            record = [_decoder.decode(raw)]
        except msgspec.DecodeError:
            runs.warnings.append(LineWarning(path, lineno, _problem(raw)))
            continue
        if _append(record, 0, per_file, batch) == 0:
            runs.warnings.append(LineWarning(path, lineno, _why(record[0])))
    _finish(batch)


def _append(records: list[_Run], start: int, per_file: dict[str, SkillColumns],
            batch: _Batch) -> int:
    """The hot loop of ``health`` on a cold cache: append ``records[start:]`` to their
    skills' columns; returns the index of the first that is not a run (or the length).
    The decoder has already checked the types, that the skill name is not empty, and
    that the score is finite (it refuses numbers out of a float's range)."""
    fromiso, epoch, unit = datetime.fromisoformat, EPOCH, ONE_MS
    appenders, last, ordered = batch.appenders, batch.last, batch.ordered
    try:
        for record in islice(records, start, None) if start else records:
            ts = record.ts
            try:
                ms = (fromiso(ts) - epoch) // unit
            except (ValueError, TypeError):  # another ISO shape, or no zone
                slow = ts_ms(ts)
                if slow is None:  # an equal record before it would have failed first:
                    return records.index(record, start)
                ms = slow
            if ms < last:
                ordered = False
            last = ms
            add = appenders.get(record.skill)
            if add is None:
                add = appenders[record.skill] = _appender(per_file, record.skill)
            add[0](ms)
            add[1](record.score)
            failed = record.result == "fail"
            add[2](failed)
            if failed and ms >= add[3].last_fail_ms:
                add[3].last_fail, add[3].last_fail_ms = ts, ms
            if record.id:
                _add_id(add[3], record.id)
        return len(records)
    finally:
        batch.last, batch.ordered = last, ordered


def _appender(per_file: dict[str, SkillColumns], skill: str) -> tuple[Any, ...]:
    cols = per_file.get(skill)
    if cols is None:
        cols = per_file[skill] = SkillColumns()
    return cols.ts.append, cols.score.append, cols.fail.append, cols, len(cols)


def _add_id(cols: SkillColumns, ident: Any) -> None:
    """Key the run just appended (the id column is filled lazily: most runs have none)."""
    key = id_key(ident)
    if key:
        cols.ids.extend(array("q", bytes(8 * (len(cols.ts) - 1 - len(cols.ids)))))
        cols.ids.append(key)


def _finish(batch: _Batch) -> None:
    """Pad id columns to full length and note whether each skill's runs kept ts order."""
    for add in batch.appenders.values():
        cols, before = add[3], add[4]
        if cols.ids and len(cols.ids) < len(cols.ts):
            cols.ids.extend(array("q", bytes(8 * (len(cols.ts) - len(cols.ids)))))
        if not cols.ordered:
            continue
        if batch.ordered:  # the new runs are in order: only the seam with the older ones
            cols.ordered = before == 0 or cols.ts[before - 1] <= cols.ts[before]
        else:
            new = cols.ts[max(before - 1, 0):].tolist()
            cols.ordered = new == sorted(new)


def _why(record: _Run) -> str:
    """Why a decoded record is not a run."""
    return check_run(msgspec.structs.asdict(record)) or "not a run record"


def _problem(raw: bytes) -> str:
    """Why a line the decoder refused is not a run record."""
    try:
        record = msgspec.json.decode(raw)
    except msgspec.DecodeError:
        return _why_not_json(raw)
    return check_run(record) or "not a run record"


def _why_not_json(raw: bytes) -> str:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return "not UTF-8"
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        return f"invalid JSON: {exc.msg}"
    return "invalid JSON"  # pragma: no cover - msgspec and json disagree
