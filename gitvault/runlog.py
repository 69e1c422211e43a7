"""Skill runs as per-skill columns: timestamps in epoch ms, scores, fail flags and
id keys, in reader order (``ts``, then file order, then line). This module parses
lines into columns and merges per-file columns; runcache.py reads the files and
keeps the parse cached.
"""

from __future__ import annotations

import hashlib
import json
import math
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from itertools import pairwise
from typing import Any

from gitvault.jsonl import LineWarning
from gitvault.runrecord import RESULTS

_loads: Callable[[bytes], Any]
try:  # orjson parses run lines several times faster than json; json is the fallback
    from orjson import loads as _loads
except ImportError:  # pragma: no cover - orjson is a dependency
    _loads = json.loads



# -- timestamps --------------------------------------------------------------------

_day_ms: dict[str, int] = {}  # "YYYY-MM-DD" -> epoch ms
_minute_ms: dict[str, int] = {}  # "YYYY-MM-DDTHH:MM" -> epoch ms
_second_ms: dict[str, int] = {}  # "SS.mmm" -> ms (at most 60,000 entries)
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def ts_ms(ts: Any) -> int | None:
    """Epoch milliseconds of an ISO 8601 timestamp (None if it is not one). A time
    without a zone is UTC. ``YYYY-MM-DDTHH:MM:SS.mmmZ`` is looked up in two small
    caches (minute, and second with milliseconds) that this fills."""
    if type(ts) is not str:
        return None
    if len(ts) == 24 and ts[23] == "Z" and ts[16] == ":" and ts[19] == ".":
        key, rest = ts[:16], ts[17:23]
        base = _minute_ms.get(key)
        if base is None:
            base = _minute_base(key)
        digits = rest[:2] + rest[3:]
        if base is not None and digits.isdigit() and digits.isascii() and digits < "60000":
            _minute_ms[key] = base
            _second_ms[rest] = int(digits)
            return base + int(digits)
    return _parse_ms(ts)


def _minute_base(key: str) -> int | None:
    """Epoch ms of ``YYYY-MM-DDTHH:MM`` (the day from a cache, the rest by arithmetic)."""
    day = _day_ms.get(key[:10])
    if day is None:
        day = _parse_ms(key[:10] + "T00:00:00Z")
        if day is None:
            return None
        _day_ms[key[:10]] = day
    hours, minutes = key[11:13], key[14:16]
    if key[10] != "T" or key[13] != ":" or not (hours + minutes).isdigit() \
            or not (hours + minutes).isascii() or hours > "23" or minutes > "59":
        return None
    return day + int(hours) * 3_600_000 + int(minutes) * 60_000


def _parse_ms(ts: str) -> int | None:
    from gitvault.clock import parse_iso

    try:
        moment = parse_iso(ts)
    except Exception:
        return None
    return (moment - _EPOCH) // _MS


_MS = datetime(1970, 1, 1, 0, 0, 0, 1000, tzinfo=timezone.utc) - _EPOCH


# -- columns -----------------------------------------------------------------------

@dataclass
class SkillColumns:
    """One skill's runs in reader order."""

    ts: array = field(default_factory=lambda: array("q"))
    score: array = field(default_factory=lambda: array("d"))
    fail: bytearray = field(default_factory=bytearray)
    ids: array = field(default_factory=lambda: array("q"))  # 0 = no id; empty = none has one
    last_fail: str | None = None  # ts text of the latest failed run
    last_fail_ms: int = -(1 << 62)
    ordered: bool = True  # ts never decreased

    def __len__(self) -> int:
        return len(self.ts)

    def compact(self) -> None:
        """Drop the id column when no run has an id (8 bytes a run at 10M runs)."""
        if self.ids and not any(self.ids):
            self.ids = array("q")

    def id_at(self, index: int) -> int:
        return self.ids[index] if self.ids else 0

    def extend(self, other: SkillColumns) -> None:
        """Append ``other``'s runs, which follow these in file order."""
        if len(self) and len(other) and other.ts[0] < self.ts[-1]:
            self.ordered = False
        self.ordered = self.ordered and other.ordered
        if self.ids or other.ids:
            if len(self.ids) < len(self.ts):
                self.ids = array("q", bytes(8 * len(self.ts)))
            self.ids.extend(other.ids if other.ids else array("q", bytes(8 * len(other))))
        self.ts.extend(other.ts)
        self.score.extend(other.score)
        self.fail.extend(other.fail)
        if other.last_fail is not None and other.last_fail_ms >= self.last_fail_ms:
            self.last_fail, self.last_fail_ms = other.last_fail, other.last_fail_ms


@dataclass
class FileState:
    """What the cache knows about one log file."""

    path: str
    dev: int
    ino: int
    mtime_ns: int
    ctime_ns: int
    size: int  # bytes parsed (up to the end of the last complete line)
    lines: int  # complete lines parsed
    tail: str  # sha256 of the _TAIL bytes before ``size``


@dataclass
class Runs:
    """Every run, per skill, plus the bad lines found."""

    skills: dict[str, SkillColumns] = field(default_factory=dict)  # first-appearance order
    warnings: list[LineWarning] = field(default_factory=list)
    files: list[FileState] = field(default_factory=list)


def _ident(ident: Any) -> int:
    """A 63-bit key for dedup of records with an id (0 when there is none)."""
    if not ident or type(ident) is not str:
        return 0
    try:
        return int(ident[-12:], 36) or 1
    except ValueError:
        return int.from_bytes(hashlib.blake2b(ident.encode(), digest_size=8).digest(), "big") >> 1 or 1


def check_run(record: Any) -> str | None:
    """Why a parsed line is not a run record the analysis can use (None if it is)."""
    if type(record) is not dict:
        return "not a JSON object"
    skill = record.get("skill")
    if type(skill) is not str or not skill:
        return "run without a skill name"
    score = record.get("score")
    if not isinstance(score, (float, int)) or isinstance(score, bool) or not math.isfinite(score):
        return f"score is not a number: {json.dumps(score)[:40]}"
    if record.get("result") not in RESULTS:
        return f"unknown result: {json.dumps(record.get('result'))[:40]}"
    ts = record.get("ts")
    if ts_ms(ts) is None:
        return "missing ts" if ts is None else f"bad ts: {json.dumps(ts)[:40]}"
    return None


_FAIL = {"success": 0, "partial": 0, "fail": 1}




def parse_block(data: bytes, path: str, first_line: int, runs: Runs,
                per_file: dict[str, SkillColumns]) -> int:
    """Parse complete lines (``data`` ends with ``\\n``) into ``per_file``; returns the
    number of lines read. (Parsing whole blocks as one array and grouping with
    C-level maps was measured slower than this streaming loop.)"""
    lines = data.split(b"\n")
    lines.pop()
    return _parse_lines(lines, path, first_line, runs, per_file)


def _check_order(appenders: dict[str, tuple[Any, ...]]) -> None:
    for add in appenders.values():
        cols, before = add[4], add[5]
        if cols.ordered:
            new = cols.ts[max(before - 1, 0):]
            cols.ordered = all(a <= b for a, b in pairwise(new))


def _parse_lines(lines: list[bytes], path: str, first_line: int, runs: Runs,
                 per_file: dict[str, SkillColumns]) -> int:
    """The hot loop of ``health`` on a cold cache: one orjson call and a handful of
    dict and array operations per line; every bad line is reported with its number."""
    warnings = runs.warnings
    loads, fail_of, minute, second = _loads, _FAIL, _minute_ms, _second_ms
    appenders: dict[str, tuple[Any, ...]] = {}
    lineno = first_line
    for raw in lines:
        lineno += 1
        try:
            record = loads(raw)
            skill, ts, score, failed = (record["skill"], record["ts"], record["score"],
                                        fail_of[record["result"]])
        except (ValueError, KeyError, TypeError, IndexError):
            if raw and not raw.isspace():
                warnings.append(LineWarning(path, lineno, _problem(raw)))
            continue
        kind = type(score)
        if (kind is not float and kind is not int) or type(skill) is not str or not skill \
                or type(ts) is not str or score - score != 0:
            warnings.append(LineWarning(path, lineno, check_run(record) or "not a run record"))
            continue
        base = minute.get(ts[:16]) if len(ts) == 24 and ts[23] == "Z" and ts[16] == ":" else None
        offset = second.get(ts[17:23]) if base is not None else None
        ms = base + offset if base is not None and offset is not None else ts_ms(ts)
        if ms is None:
            warnings.append(LineWarning(path, lineno, check_run(record) or "bad ts"))
            continue
        add = appenders.get(skill)
        if add is None:
            cols = per_file.get(skill)
            if cols is None:
                cols = per_file[skill] = SkillColumns()
            add = appenders[skill] = (cols.ts.append, cols.score.append, cols.fail.append,
                                      cols.ids.append, cols, len(cols))
        add[0](ms)
        add[1](score)
        add[2](failed)
        ident = record.get("id")
        add[3](_ident(ident) if ident else 0)
        if failed and ms >= add[4].last_fail_ms:
            add[4].last_fail, add[4].last_fail_ms = ts, ms
    for add in appenders.values():
        cols, before = add[4], add[5]
        if cols.ordered:
            new = cols.ts[max(before - 1, 0):].tolist()
            cols.ordered = new == sorted(new)
    return lineno - first_line


def _problem(raw: bytes) -> str:
    """Why a line that failed the fast path is not a run record."""
    try:
        record = _loads(raw)
    except ValueError:
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
    return "invalid JSON"  # pragma: no cover - orjson and json disagree


# -- merging parts into reader order ----------------------------------------------------

def _take(cols: SkillColumns, order: list[int]) -> SkillColumns:
    out = SkillColumns(last_fail=cols.last_fail, last_fail_ms=cols.last_fail_ms)
    out.ts = array("q", (cols.ts[i] for i in order))
    out.score = array("d", (cols.score[i] for i in order))
    out.fail = bytearray(cols.fail[i] for i in order)
    out.ids = array("q", (cols.ids[i] for i in order)) if cols.ids else array("q")
    return out


def _dedup(cols: SkillColumns) -> SkillColumns:
    """Drop repeated ids (a repeated record has the same ts, so only equal-ts runs of
    records are compared)."""
    if not any(cols.ids):
        return cols
    keep: list[int] = []
    group_ms, seen = None, set[int]()
    for i, ms in enumerate(cols.ts):
        if ms != group_ms:
            group_ms, seen = ms, set[int]()
        ident = cols.ids[i]
        if ident:
            if ident in seen:
                continue
            seen.add(ident)
        keep.append(i)
    return cols if len(keep) == len(cols) else _take(cols, keep)


def _keyed(cols: SkillColumns, part: int) -> Iterator[tuple[int, int, int]]:
    """(ts, part, position) of each run, for a k-way merge that keeps ties in order."""
    for position, ms in enumerate(cols.ts):
        yield ms, part, position


def merge(parts: list[dict[str, SkillColumns]]) -> dict[str, SkillColumns]:
    """Per-file columns (in file order) → per-skill columns in reader order: by ts,
    ties in file order then line order. Parts are consumed to bound memory."""
    import heapq

    names: dict[str, tuple[int, int]] = {}
    for index, part in enumerate(parts):
        for name, cols in part.items():
            key = (cols.ts[0] if len(cols) else 0, index)
            if name not in names or key < names[name]:
                names[name] = key
    merged: dict[str, SkillColumns] = {}
    for name in sorted(names, key=names.__getitem__) if len(parts) > 1 else list(names):
        pieces = [part.pop(name) for part in parts if name in part]
        pieces = [p if p.ordered else _take(p, sorted(range(len(p)), key=p.ts.__getitem__))
                  for p in pieces]
        if len(pieces) == 1:
            cols = pieces[0]
        else:
            cols = SkillColumns()
            streams = [_keyed(piece, k) for k, piece in enumerate(pieces)]
            for ms, k, i in heapq.merge(*streams):
                piece = pieces[k]
                cols.ts.append(ms)
                cols.score.append(piece.score[i])
                cols.fail.append(piece.fail[i])
                cols.ids.append(piece.id_at(i))
            best = max(pieces, key=lambda p: p.last_fail_ms)
            for piece in pieces:  # ties: the later file wins
                if piece.last_fail_ms == best.last_fail_ms and piece.last_fail:
                    best = piece
            cols.last_fail, cols.last_fail_ms = best.last_fail, best.last_fail_ms
        cols.ordered = True
        cols.compact()
        merged[name] = _dedup(cols)
    return merged
