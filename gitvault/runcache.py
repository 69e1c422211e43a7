"""Reading the runs logs, with an incremental cache under ``.git/gitvault/``.

``load_runs`` reads every ``*.jsonl`` under ``logs/runs/`` into per-skill columns
(runlog.py), reporting bad lines instead of crashing. The parse is cached and
validated against every file's identity, size, times and tail bytes: files that
only grew are read from where the cache stopped; anything else is read again.
Large files are split over the cores: the reading process parses one range,
forked workers the others.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import struct
from pathlib import Path
from typing import Any

from gitvault.jsonl import LineWarning
from gitvault.runlog import FileState, Runs, SkillColumns, merge, parse_block

CACHE_NAME = "runs-cache.bin"
_CACHE_VERSION = 2
_TAIL = 4096  # bytes before a cached size that must be unchanged for an append-only read
_BLOCK = 1 << 20
_PARALLEL_BYTES = 4 << 20  # files larger than this (about 25k runs) are split over the cores


def _tail_hash(fh: Any, size: int) -> str:
    start = max(0, size - _TAIL)
    fh.seek(start)
    return hashlib.sha256(fh.read(size - start)).hexdigest()


def _parse_range(path: str, start: int, end: int) -> tuple[dict[str, SkillColumns], Runs, int]:
    """Parse the complete lines in bytes [start, end) of ``path`` (both at line starts,
    except that an unterminated last line is left unparsed)."""
    part: dict[str, SkillColumns] = {}
    runs = Runs()
    lines, carry, offset = 0, b"", start
    with open(path, "rb") as fh:
        fh.seek(start)
        while offset < end:
            chunk = fh.read(min(_BLOCK, end - offset))
            if not chunk:
                break
            offset += len(chunk)
            buffer = carry + chunk
            cut = buffer.rfind(b"\n") + 1
            if cut:
                lines += parse_block(buffer[:cut], path, lines, runs, part)
            carry = buffer[cut:]
    for cols in part.values():
        cols.compact()
    return part, runs, lines


def _split_points(fh: Any, start: int, end: int, pieces: int) -> list[int]:
    points = [start]
    for k in range(1, pieces):
        fh.seek(start + (end - start) * k // pieces)
        fh.readline()
        points.append(max(fh.tell(), points[-1]))
    points.append(end)
    return points


def _read_file(path: Path, start: int, first_line: int, runs: Runs
               ) -> tuple[dict[str, SkillColumns], FileState]:
    """Parse the complete lines of ``path`` from byte ``start``; an unterminated last
    line (a write in progress) is left for the next read. A large file is split into
    one byte range per core (at most 4): forked workers parse all but the first,
    which this process parses meanwhile."""
    name = str(path)
    with open(path, "rb") as fh:
        info = os.fstat(fh.fileno())
        size = info.st_size
        fh.seek(max(start, size - _BLOCK))
        tail = fh.read()
        end = size - len(tail) + tail.rfind(b"\n") + 1 if b"\n" in tail else start
        end = max(end, start)
        workers = min(os.cpu_count() or 1, 4) if end - start > _PARALLEL_BYTES else 1
        points = _split_points(fh, start, end, workers)
    ranges = [(name, a, b) for a, b in itertools.pairwise(points) if b > a]
    if len(ranges) > 1:  # the others go to forked workers; this process parses the first
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(len(ranges) - 1,
                                 mp_context=multiprocessing.get_context("fork")) as pool:
            futures = [pool.submit(_parse_range, *r) for r in ranges[1:]]
            results = [_parse_range(*ranges[0])] + [f.result() for f in futures]
    else:
        results = [_parse_range(*r) for r in ranges]
    part: dict[str, SkillColumns] = {}
    lines = first_line
    for piece, found, count in results:
        runs.warnings.extend(LineWarning(w.file, w.line + lines, w.reason) for w in found.warnings)
        lines += count
        for skill, cols in piece.items():
            mine = part.get(skill)
            if mine is None:
                part[skill] = cols
                continue
            mine.extend(cols)
    with open(path, "rb") as fh:
        state = FileState(name, info.st_dev, info.st_ino, info.st_mtime_ns, info.st_ctime_ns,
                          end, lines, _tail_hash(fh, end))
    return part, state


def _unchanged_prefix(state: FileState) -> bool:
    """The file is the one cached and its cached bytes are still there (it may have grown)."""
    try:
        with open(state.path, "rb") as fh:
            info = os.fstat(fh.fileno())
            if (info.st_dev, info.st_ino) != (state.dev, state.ino) or info.st_size < state.size:
                return False
            return _tail_hash(fh, state.size) == state.tail
    except OSError:
        return False


def _untouched(state: FileState) -> bool:
    """Same file, same size, same modification and change times as when cached."""
    try:
        info = os.stat(state.path)
    except OSError:
        return False
    return (info.st_dev, info.st_ino, info.st_mtime_ns, info.st_ctime_ns, info.st_size) == \
        (state.dev, state.ino, state.mtime_ns, state.ctime_ns, state.size)


def load_runs(folder: Path, cache_file: Path | None = None) -> Runs:
    """Every run under ``folder``, in reader order, using and refreshing the cache."""
    from gitvault.jsonl import stream_files

    paths = [str(p) for p in stream_files(folder)]
    cached = _load_cache(cache_file) if cache_file is not None else None
    if cached is not None:
        runs = _refresh(cached, paths)
        if runs is not None:
            if runs is not cached and cache_file is not None:
                _save_cache(cache_file, runs)
            return runs
    runs = Runs()
    parts = []
    for path in paths:
        part, state = _read_file(Path(path), 0, 0, runs)
        parts.append(part)
        runs.files.append(state)
    runs.skills = merge(parts)
    if cache_file is not None:
        _save_cache(cache_file, runs)
    return runs


def _refresh(cached: Runs, paths: list[str]) -> Runs | None:
    """Bring a cached parse up to date by reading only appended bytes; None when the
    cache cannot be trusted that way (a file shrank, changed, vanished, or new runs are
    not later than the cached ones)."""
    known = {state.path: state for state in cached.files}
    if any(path not in paths for path in known):
        return None
    if all(path in known and _untouched(known[path]) for path in paths):
        return cached
    states, parts = [], []
    fresh = Runs(warnings=list(cached.warnings))
    for path in paths:
        state = known.get(path)
        if state is not None and _untouched(state):
            states.append(state)
            continue
        if state is not None and not _unchanged_prefix(state):
            return None
        part, new_state = _read_file(Path(path), state.size if state else 0,
                                     state.lines if state else 0, fresh)
        parts.append(part)
        states.append(new_state)
    added = merge(parts)
    skills = cached.skills
    for name, cols in added.items():
        old = skills.get(name)
        if old is None:
            skills[name] = cols
            continue
        if len(cols) and len(old) and cols.ts[0] <= old.ts[-1]:
            return None  # new runs interleave with cached ones: read everything again
        old.extend(cols)
    fresh.skills, fresh.files = skills, states
    fresh.warnings.sort(key=lambda w: (paths.index(w.file) if w.file in paths else -1, w.line))
    return fresh


_MAGIC = b"GVRUNS1\n"


def _save_cache(cache_file: Path, runs: Runs) -> None:
    header = json.dumps({
        "version": _CACHE_VERSION,
        "files": [vars(state) for state in runs.files],
        "skills": [[name, len(c), c.last_fail, c.last_fail_ms, bool(c.ids)]
                   for name, c in runs.skills.items()],
        "warnings": [[w.file, w.line, w.reason] for w in runs.warnings],
    }).encode("utf-8")
    try:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache_file.with_name(f"{cache_file.name}.{os.getpid()}.tmp")
        with open(tmp, "wb") as fh:
            fh.write(_MAGIC + struct.pack("<Q", len(header)) + header)
            for cols in runs.skills.values():
                cols.ts.tofile(fh)
                cols.score.tofile(fh)
                fh.write(cols.fail)
                if cols.ids:
                    cols.ids.tofile(fh)
        os.replace(tmp, cache_file)
    except OSError:
        pass  # the cache is an optimisation; without it the next run reads everything


def _load_cache(cache_file: Path) -> Runs | None:
    try:
        with open(cache_file, "rb") as fh:
            if fh.read(len(_MAGIC)) != _MAGIC:
                return None
            (length,) = struct.unpack("<Q", fh.read(8))
            header = json.loads(fh.read(length))
            if header.get("version") != _CACHE_VERSION:
                return None
            runs = Runs(files=[FileState(**state) for state in header["files"]],
                        warnings=[LineWarning(*w) for w in header["warnings"]])
            for name, count, last_fail, last_fail_ms, has_ids in header["skills"]:
                cols = SkillColumns(last_fail=last_fail, last_fail_ms=last_fail_ms)
                cols.ts.fromfile(fh, count)
                cols.score.fromfile(fh, count)
                cols.fail = bytearray(fh.read(count))
                if has_ids:
                    cols.ids.fromfile(fh, count)
                if len(cols.fail) != count:
                    return None
                runs.skills[name] = cols
            if fh.read(1):
                return None
            return runs
    except (OSError, ValueError, KeyError, TypeError, EOFError, struct.error):
        return None
