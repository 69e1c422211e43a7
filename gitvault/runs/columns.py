"""Skill runs as per-skill columns: timestamps in epoch ms, scores, fail flags and
id keys, in reader order (``ts``, then file order, then line). This module holds the
columns, what makes a record a run, and the merge of per-file columns; runparse.py
turns lines into columns, and reader.py reads the files and keeps the parse cached.
"""

from __future__ import annotations

import json
import math
from array import array
from bisect import bisect_left
from dataclasses import dataclass, field
from datetime import datetime, timezone
from itertools import compress, count, islice
from operator import eq
from typing import Any

from gitvault.core.records import LineWarning
from gitvault.runs.record import RESULTS

# -- timestamps --------------------------------------------------------------------

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
ONE_MS = datetime(1970, 1, 1, 0, 0, 0, 1000, tzinfo=timezone.utc) - EPOCH
_fromiso = datetime.fromisoformat


def ts_ms(ts: Any) -> int | None:
    """Epoch milliseconds of an ISO 8601 timestamp (None if it is not one); a time
    without a zone is UTC. Python's C parser takes the common shapes directly (from
    3.11); the rest go through clock.parse_iso."""
    if type(ts) is not str:
        return None
    try:
        return (_fromiso(ts) - EPOCH) // ONE_MS
    except (ValueError, TypeError):  # a shape fromisoformat refuses, or no zone
        return _parse_ms(ts)


def _parse_ms(ts: str) -> int | None:
    from gitvault.core.clock import parse_iso

    try:
        moment = parse_iso(ts)
    except Exception:
        return None
    return (moment - EPOCH) // ONE_MS


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


def id_key(ident: Any) -> int:
    """The key by which records with an id are deduplicated (0 when there is none):
    the string's hash, so a key costs no more than the id the decoder already built.
    Keys live only while one process tree reads (forked workers share the hash
    seed); they are never cached."""
    return hash(ident) if ident and type(ident) is str else 0


def check_run(record: Any) -> str | None:
    """Why a parsed line is not a run record the analysis can use (None if it is)."""
    if type(record) is not dict:
        return "not a JSON object"
    skill = record.get("skill")
    if type(skill) is not str or not skill:
        return "run without a skill name"
    score = record.get("score")
    if not isinstance(score, (float, int)) or isinstance(score, bool) or not _finite(score):
        return f"score is not a number: {json.dumps(score)[:40]}"
    if record.get("result") not in RESULTS:
        return f"unknown result: {json.dumps(record.get('result'))[:40]}"
    ts = record.get("ts")
    if ts_ms(ts) is None:
        return "missing ts" if ts is None else f"bad ts: {json.dumps(ts)[:40]}"
    return None


def _finite(number: float) -> bool:
    try:
        return math.isfinite(number)
    except OverflowError:  # an integer too large for a float
        return False


# -- merging parts into reader order ----------------------------------------------------

def _take(cols: SkillColumns, order: list[int]) -> SkillColumns:
    out = SkillColumns(last_fail=cols.last_fail, last_fail_ms=cols.last_fail_ms)
    out.ts = array("q", map(cols.ts.__getitem__, order))
    out.score = array("d", map(cols.score.__getitem__, order))
    out.fail = bytearray(map(cols.fail.__getitem__, order))
    out.ids = array("q", map(cols.ids.__getitem__, order)) if cols.ids else array("q")
    return out


def _dedup(cols: SkillColumns) -> SkillColumns:
    """Drop repeated ids, keeping the first in reader order. A repeated record has the
    same ts, so only runs whose ts equals the one before are looked at: they are
    found in C (rare at millisecond resolution), and only their groups are compared."""
    ids, ts = cols.ids, cols.ts
    if not ids:
        return cols
    drop: list[int] = []
    previous, seen = -2, set[int]()
    for i in compress(count(1), map(eq, ts, islice(ts, 1, None))):  # ts[i] == ts[i - 1]
        if i != previous + 1:  # a new group of equal ts, from i - 1
            seen = {ids[i - 1]}
        previous = i
        key = ids[i]
        if key:
            if key in seen:
                drop.append(i)
            else:
                seen.add(key)
    return _without(cols, drop) if drop else cols


def _without(cols: SkillColumns, drop: list[int]) -> SkillColumns:
    """``cols`` less the runs at the (ascending) indexes ``drop``."""
    out = SkillColumns(last_fail=cols.last_fail, last_fail_ms=cols.last_fail_ms)
    start = 0
    for index in [*drop, len(cols)]:
        out.ts.extend(cols.ts[start:index])
        out.score.extend(cols.score[start:index])
        out.fail.extend(cols.fail[start:index])
        out.ids.extend(cols.ids[start:index])
        start = index + 1
    return out


def _sorted(cols: SkillColumns) -> SkillColumns:
    """The runs by ts; a stable sort, so ties keep their order."""
    out = _take(cols, sorted(range(len(cols)), key=cols.ts.tolist().__getitem__))
    out.ordered = True
    return out


def _slice(cols: SkillColumns, start: int, end: int) -> SkillColumns:
    return SkillColumns(ts=cols.ts[start:end], score=cols.score[start:end],
                        fail=cols.fail[start:end], ids=cols.ids[start:end])


_CHUNK = 1 << 14


def _merge_sorted(pieces: list[SkillColumns]) -> SkillColumns:
    """Pieces sorted by ts (in file order) → one, by ts, ties in piece order. It goes
    a range of ts values at a time (a stable sort of about _CHUNK runs from each
    piece), which keeps the work in cache and the index lists small."""
    bounds = sorted({piece.ts[i] for piece in pieces for i in range(_CHUNK, len(piece), _CHUNK)})
    out = SkillColumns()
    starts = [0] * len(pieces)
    for bound in [*bounds, None]:
        chunk = SkillColumns()
        for k, piece in enumerate(pieces):
            end = len(piece) if bound is None else bisect_left(piece.ts, bound, starts[k])
            if end > starts[k]:
                chunk.extend(_slice(piece, starts[k], end))
            starts[k] = end
        out.extend(chunk if chunk.ordered else _sorted(chunk))
    for piece in pieces:  # the later file's last failure wins a tie
        if piece.last_fail is not None and piece.last_fail_ms >= out.last_fail_ms:
            out.last_fail, out.last_fail_ms = piece.last_fail, piece.last_fail_ms
    return out


def merge(parts: list[dict[str, SkillColumns]]) -> dict[str, SkillColumns]:
    """Per-file columns (in file order) → per-skill columns in reader order: by ts,
    ties in file order then line order. Parts are consumed to bound memory."""
    names: dict[str, tuple[int, int]] = {}
    for index, part in enumerate(parts):
        for name, cols in part.items():
            key = (cols.ts[0] if len(cols) else 0, index)
            if name not in names or key < names[name]:
                names[name] = key
    merged: dict[str, SkillColumns] = {}
    for name in sorted(names, key=names.__getitem__) if len(parts) > 1 else list(names):
        pieces = [piece if piece.ordered else _sorted(piece)
                  for piece in (part.pop(name) for part in parts if name in part)]
        cols = pieces[0] if len(pieces) == 1 else _merge_sorted(pieces)
        cols.compact()
        cols = _dedup(cols)
        cols.ids = array("q")  # keys are per process; appended runs are later (reader.py)
        merged[name] = cols
    return merged
