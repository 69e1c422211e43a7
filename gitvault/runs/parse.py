"""Run lines into per-skill columns (columns.py), fast: msgspec decodes a piece of
lines at a time into typed records, building only the fields the analysis reads, and
a short loop appends them to their skill's columns. A piece the decoder refuses is
read again line by line, so each bad line is reported with its number and reason.
"""

from __future__ import annotations

from array import array
from datetime import datetime
from itertools import islice
from typing import Annotated, Any, Literal

import msgspec

from gitvault.core.records import LineWarning, decode_line
from gitvault.runs.columns import EPOCH, ONE_MS, Runs, SkillColumns, check_run, id_key, ts_ms
from gitvault.runs.record import RESULTS


class _Run(msgspec.Struct, gc=False):
    """The fields of a run line that the analysis reads; msgspec skips the others
    without building them, and checks these types in C."""

    skill: Annotated[str, msgspec.Meta(min_length=1)]
    ts: str
    score: float
    result: Literal[RESULTS]  # type: ignore[valid-type]  # msgspec reads it at run time
    id: Any = None


_decoder = msgspec.json.Decoder(_Run)
_PIECE = 64 << 10  # lines are decoded in pieces this size, so they stay in the CPU cache


def parse_block(data: bytes, path: str, first_line: int, runs: Runs,
                per_file: dict[str, SkillColumns]) -> int:
    """Parse complete lines (``data`` ends with ``\n``) into ``per_file``; returns the
    number of lines read. A piece whose every line starts with ``{`` and ends with
    ``}`` is decoded in one call; it must give one record per line (decode_lines reads
    a stream of values, so two objects on a line, or one over two, would otherwise
    pass). Any other piece, or one the decoder refuses, is read line by line, so every
    bad line is reported with its number."""
    view = memoryview(data)
    start, line = 0, first_line
    while start < len(data):
        end = data.find(b"\n", start + _PIECE) + 1 or len(data)
        count = data.count(b"\n", start, end)
        records = _one_per_line(data, view, start, end, count)
        if records is None:
            _parse_lines(data[start:end].split(b"\n"), path, line, runs, per_file)
        else:
            _parse_records(records, path, line, runs, per_file)
        line += count
        start = end
    return line - first_line


def _one_per_line(data: bytes, view: memoryview, start: int, end: int, count: int
                  ) -> list[_Run] | None:
    """The records of lines [start, end), when each line is one object the decoder
    takes; else None. Every line must start with ``{`` and end with ``}``: then no
    value can span lines (it would need ``}`` then ``{`` with only a newline between),
    and as many records as lines means exactly one per line."""
    if not data.startswith(b"{", start):
        return None
    for newline in (b"\n", b"\r\n"):
        if data.endswith(b"}" + newline, start, end) \
                and data.count(b"}" + newline + b"{", start, end) == count - 1:
            break
    else:
        return None
    try:
        records = _decoder.decode_lines(view[start:end])
    except (msgspec.DecodeError, RecursionError):
        return None
    return records if len(records) == count else None


class _Batch:
    """The skills one piece of lines appends to, and whether its runs came in ts order
    (then each skill's new runs are in order too, and only the seams need a look)."""

    __slots__ = ("appenders", "last", "ordered")

    def __init__(self) -> None:
        self.appenders: dict[str, tuple[Any, ...]] = {}
        self.last = -(1 << 62)
        self.ordered = True


def _parse_records(records: list[_Run], path: str, first_line: int, runs: Runs,
                   per_file: dict[str, SkillColumns]) -> None:
    """Append the records of consecutive lines; one that decodes but is still not a run
    (a timestamp no parser reads) is reported with its line number and skipped."""
    batch = _Batch()
    done = 0
    while (bad := _append(records, done, per_file, batch)) < len(records):
        clamped = _clamp(records[bad])
        runs.warnings.append(LineWarning(path, first_line + 1 + bad, clamped or _why(records[bad])))
        done = bad if clamped else bad + 1
    _finish(batch)


def _parse_lines(lines: list[bytes], path: str, first_line: int, runs: Runs,
                 per_file: dict[str, SkillColumns]) -> None:
    """The slow path: each line decoded on its own. A line the typed decoder refuses
    is decoded again as plain JSON, and taken if it is a run all the same (a repeated
    key whose last value is good, say)."""
    batch = _Batch()
    for lineno, raw in enumerate(lines, first_line + 1):
        if not raw or raw.isspace():
            continue
        try:
            record = [_decoder.decode(raw)]
        except (msgspec.DecodeError, RecursionError):
            plain, problem = _plain(raw)
            if plain is None:
                runs.warnings.append(LineWarning(path, lineno, problem))
                continue
            record = [plain]
        if _append(record, 0, per_file, batch) == 0:
            clamped = _clamp(record[0])
            runs.warnings.append(LineWarning(path, lineno, clamped or _why(record[0])))
            if clamped:
                _append(record, 0, per_file, batch)
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
            score = record.score
            if score < 0.0 or score > 1.0:  # clamped by the caller, with a warning
                return records.index(record, start)
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
            add[1](score)
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


def _clamp(record: _Run) -> str | None:
    """Clamp a score outside [0, 1] (SPEC §3: a foreign writer's 1.5 counts as 1, and is
    reported); returns the warning, or None when the score was in range."""
    score = record.score
    if 0.0 <= score <= 1.0:
        return None
    record.score = min(1.0, max(0.0, score))
    return f"score {score:g} is outside [0, 1]: counted as {record.score:g}"


def _why(record: _Run) -> str:
    """Why a decoded record is not a run."""
    return check_run(msgspec.structs.asdict(record)) or "not a run record"


def _plain(raw: bytes) -> tuple[_Run | None, str]:
    """A line the typed decoder refused, as a record if plain JSON makes it a run;
    else None and why not."""
    try:
        record = msgspec.json.decode(raw)
    except (msgspec.DecodeError, RecursionError):
        return None, _why_not_json(raw)
    problem = check_run(record)
    if problem is not None:
        return None, problem
    return _Run(record["skill"], record["ts"], float(record["score"]), record["result"],
                record.get("id")), ""


def _why_not_json(raw: bytes) -> str:
    return decode_line(raw)[1] or \
        "not JSON that every reader takes (NaN, Infinity or a lone surrogate)"
