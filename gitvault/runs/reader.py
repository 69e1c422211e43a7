"""Reading the runs logs, with an incremental cache under ``.git/gitvault/``.

``load_runs`` reads every ``*.jsonl`` under ``logs/runs/`` into per-skill columns
(parse.py, columns.py), reporting bad lines instead of crashing. The parse is
cached and validated against every file's identity, size, times and tail bytes:
files that only grew are read from where the cache stopped; anything else is read
again.
Large files are split over the cores: the reading process parses one share of the
bytes, a forked child each other share.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import struct
from bisect import bisect_right
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gitvault.core.records import LineWarning
from gitvault.runs.columns import FileState, Runs, SkillColumns, merge
from gitvault.runs.parse import parse_block

CACHE_NAME = "runs-cache.bin"
_CACHE_VERSION = 4  # 4: no id column (runs are deduplicated before they are cached)
_TAIL = 4096  # bytes before a cached size that must be unchanged for an append-only read
_BLOCK = 1 << 20
_PARALLEL_BYTES = 4 << 20  # files larger than this (about 25k runs) are split over the cores
_JOB_BYTES = 16 << 20  # a child's job: its result (about 2 MB) is spilled on its own


def _tail_hash(fh: Any, size: int) -> str:
    start = max(0, size - _TAIL)
    fh.seek(start)
    return hashlib.sha256(fh.read(size - start)).hexdigest()


def _parse_range(path: str, start: int, end: int
                 ) -> tuple[dict[str, SkillColumns], Runs, int] | None:
    """Parse the lines in bytes [start, end) of ``path`` (both at line starts); None if
    the file is gone. A line longer than a block is gathered, not copied per block."""
    part: dict[str, SkillColumns] = {}
    runs = Runs()
    lines, offset, pending = 0, start, list[bytes]()
    try:
        with open(path, "rb") as fh:
            fh.seek(start)
            while offset < end:
                chunk = fh.read(min(_BLOCK, end - offset))
                if not chunk:
                    break
                offset += len(chunk)
                cut = chunk.rfind(b"\n") + 1
                if not cut:
                    pending.append(chunk)
                    continue
                block = b"".join([*pending, chunk[:cut]]) if pending else chunk[:cut]
                lines += parse_block(block, path, lines, runs, part)
                pending = [chunk[cut:]]
    except OSError:
        return None
    if offset < end:  # the file shrank since it was planned
        return None
    for cols in part.values():
        cols.compact()
    return part, runs, lines


@dataclass
class _Plan:
    """One file to read: bytes [start, end) (end: after its last complete line)."""

    path: str
    info: os.stat_result
    start: int
    end: int
    first_line: int  # lines before ``start``


def _plan(path: str, start: int, first_line: int) -> _Plan | None:
    """What to read of ``path`` from byte ``start`` (None if it vanished since listed):
    up to the end of its last complete line as of now, so that a write in progress is
    left for the next read."""
    try:
        with open(path, "rb") as fh:
            info = os.fstat(fh.fileno())
            end = info.st_size
            while end > start:  # back a block at a time to the last newline
                at = max(start, end - _BLOCK)
                fh.seek(at)
                cut = fh.read(end - at).rfind(b"\n")
                if cut >= 0:
                    return _Plan(path, info, start, at + cut + 1, first_line)
                end = at
    except OSError:
        return None
    return _Plan(path, info, start, start, first_line)


def _shares(plans: list[_Plan], workers: int) -> list[list[tuple[int, int, int]]]:
    """Split the bytes of all plans into ``workers`` shares of about equal size, cut at
    line starts; each share is a list of (plan index, start, end), with ranges of at
    most about _JOB_BYTES when there is more than one share (so that no worker holds
    much more than one range's columns, nor the reader the pickled bytes of more)."""
    total = sum(p.end - p.start for p in plans)
    cuts = [total * k // workers for k in range(1, workers)]
    shares: list[list[tuple[int, int, int]]] = [[] for _ in range(workers)]
    before = 0  # bytes of the plans before this one
    for index, plan in enumerate(plans):
        points = [plan.start]
        inside = [c - before + plan.start for c in cuts if plan.start < c - before + plan.start < plan.end]
        if workers > 1:
            inside = sorted({*inside, *range(plan.start + _JOB_BYTES, plan.end, _JOB_BYTES)})
        try:
            with open(plan.path, "rb") as fh:
                for local in inside:
                    fh.seek(local)
                    fh.readline()
                    points.append(min(max(fh.tell(), points[-1]), plan.end))
        except OSError:
            pass  # gone: its reader will find out
        points.append(plan.end)
        for a, b in itertools.pairwise(points):
            if b > a:
                shares[bisect_right(cuts, a - plan.start + before)].append((index, a, b))
        before += plan.end - plan.start
    return [share for share in shares if share]


def _read_files(requests: list[tuple[str, int, int]], runs: Runs
                ) -> list[tuple[dict[str, SkillColumns], FileState]]:
    """Parse each (path, start byte, lines before it) to the end of its last complete
    line; bad lines go to ``runs.warnings``. Returns per-file columns and the state to
    cache, for the files still there and not shrunk meanwhile. When there is more than
    a few MB to read, the bytes of all files together are split into one share per
    core (at most 4): forked workers parse all shares but the first, which this
    process parses meanwhile."""
    plans = [plan for plan in (_plan(*request) for request in requests) if plan is not None]
    total = sum(p.end - p.start for p in plans)
    workers = min(os.cpu_count() or 1, 4) if total > _PARALLEL_BYTES else 1
    shares = _shares(plans, workers)
    jobs_of = [[(index, plans[index].path, a, b) for index, a, b in share] for share in shares]
    if len(jobs_of) > 1 and hasattr(os, "fork"):
        results = _parse_forked(jobs_of)
    else:
        results = [_parse_range(*job[1:]) for share in jobs_of for job in share]
    pieces: list[list[tuple[int, tuple[dict[str, SkillColumns], Runs, int]]]] = [[] for _ in plans]
    gone = set()
    jobs = [job for share in jobs_of for job in share]
    for (index, _, a, _), result in zip(jobs, results, strict=True):
        if result is None:
            gone.add(index)
        else:
            pieces[index].append((a, result))
    del results
    combined = []
    for index, plan in enumerate(plans):
        mine, pieces[index] = pieces[index], []
        if index not in gone:
            mine.sort(key=lambda item: item[0])
            combined.append(_combine(plan, mine, runs))
    return [item for item in combined if item is not None]


def _parse_forked(shares: list[list[tuple[int, str, int, int]]]
                  ) -> list[tuple[dict[str, SkillColumns], Runs, int] | None]:
    """Parse each share's jobs (plan index, path, start, end) on its own core: a forked
    child per share but the first, which this process parses meanwhile. A child writes
    each job's result to an anonymous spill file as it goes (so it never holds more
    than one range's columns), and this process reads them back, in order, once its
    own share is done: no thread and no queue, so neither waits for the other while
    it parses. A child that fails leaves its share to this process: nothing is lost."""
    import pickle
    import tempfile
    from contextlib import ExitStack

    children = []
    with ExitStack() as spills:
        for share in shares[1:]:
            spill = spills.enter_context(tempfile.TemporaryFile())
            children.append((os.fork(), spill, share))
            if children[-1][0] == 0:  # the child: never returns into the caller's code
                code = 1
                try:
                    for job in share:
                        pickle.dump(_parse_range(*job[1:]), spill, pickle.HIGHEST_PROTOCOL)
                    spill.flush()
                    code = 0
                finally:
                    os._exit(code)
        results = [_parse_range(*job[1:]) for job in shares[0]]
        for pid, spill, share in children:
            _, status = os.waitpid(pid, 0)
            results += _spilled(spill, share) if os.waitstatus_to_exitcode(status) == 0 \
                else [_parse_range(*job[1:]) for job in share]
        return results


def _spilled(spill: Any, share: list[tuple[int, str, int, int]]
             ) -> list[tuple[dict[str, SkillColumns], Runs, int] | None]:
    """A child's results, read back from its spill file (parsed here if unreadable)."""
    import pickle

    spill.seek(0)
    try:
        return [pickle.load(spill) for _ in share]
    except (EOFError, pickle.UnpicklingError):
        return [_parse_range(*job[1:]) for job in share]


def _combine(plan: _Plan, pieces: list[tuple[int, tuple[dict[str, SkillColumns], Runs, int]]],
             runs: Runs) -> tuple[dict[str, SkillColumns], FileState] | None:
    """One file's ranges, in byte order, as one part and its cache state (None if the
    file is gone). ``pieces`` is emptied as they are added."""
    part: dict[str, SkillColumns] = {}
    lines = plan.first_line
    pieces.reverse()
    while pieces:
        _, (piece, found, count) = pieces.pop()
        runs.warnings.extend(LineWarning(w.file, w.line + lines, w.reason) for w in found.warnings)
        lines += count
        for skill, cols in piece.items():
            mine = part.get(skill)
            if mine is None:
                part[skill] = cols
                continue
            mine.extend(cols)
    info = plan.info
    try:
        with open(plan.path, "rb") as fh:
            tail = _tail_hash(fh, plan.end)
    except OSError:
        return None
    return part, FileState(plan.path, info.st_dev, info.st_ino, info.st_mtime_ns, info.st_ctime_ns,
                           plan.end, lines, tail)


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
    """Every run under ``folder``, in reader order, using and refreshing the cache. A
    symlink there is never followed: it is left out with a warning."""
    from gitvault.core.records import SYMLINK_SKIPPED, stream_files

    links: list[str] = []
    paths = [str(p) for p in stream_files(folder, links)]
    runs = _load(paths, cache_file)
    runs.warnings.extend(LineWarning(link, 0, SYMLINK_SKIPPED) for link in links)
    return runs


def _load(paths: list[str], cache_file: Path | None) -> Runs:
    cached = _load_cache(cache_file) if cache_file is not None else None
    if cached is not None:
        runs = _refresh(cached, paths)
        if runs is not None:
            if runs is not cached and cache_file is not None:
                _save_cache(cache_file, runs)
            return runs
    runs = Runs()
    read = _read_files([(path, 0, 0) for path in paths], runs)
    runs.files = [state for _, state in read]
    runs.skills = merge([part for part, _ in read])
    if cache_file is not None:
        _save_cache(cache_file, runs)
    return runs


def _refresh(cached: Runs, paths: list[str]) -> Runs | None:
    """Bring a cached parse up to date by reading only appended bytes; None when the
    cache cannot be trusted that way: a file appeared, vanished, shrank or changed, new
    runs are not later than the cached ones, or a skill is new (the order of skills,
    which the output keeps, is then the one a full read gives)."""
    known = {state.path: state for state in cached.files}
    if sorted(known) != sorted(paths):
        return None
    if all(_untouched(known[path]) for path in paths):
        return cached
    kept, requests = [], []
    for path in paths:
        state = known[path]
        if _untouched(state):
            kept.append(state)
        elif not _unchanged_prefix(state):
            return None
        else:
            requests.append((path, state.size, state.lines))
    fresh = Runs(warnings=list(cached.warnings))
    read = _read_files(requests, fresh)
    if len(read) < len(requests):
        return None  # a file went away while it was read
    order = {path: k for k, path in enumerate(paths)}
    states = sorted(kept + [state for _, state in read], key=lambda st: order[st.path])
    added = merge([part for part, _ in read])
    skills = cached.skills
    if any(name not in skills for name in added):
        return None
    for name, cols in added.items():
        old = skills[name]
        if len(cols) and len(old) and cols.ts[0] <= old.ts[-1]:
            return None  # new runs interleave with cached ones (or repeat one: ids are
            # not cached): read everything again
        old.extend(cols)
    fresh.skills, fresh.files = skills, states
    fresh.warnings.sort(key=lambda w: (order.get(w.file, -1), w.line))
    return fresh


_MAGIC = b"GVRUNS1\n"


def _save_cache(cache_file: Path, runs: Runs) -> None:
    header = json.dumps({
        "version": _CACHE_VERSION,
        "files": [vars(state) for state in runs.files],
        "skills": [[name, len(c), c.last_fail, c.last_fail_ms]
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
            for name, count, last_fail, last_fail_ms in header["skills"]:
                cols = SkillColumns(last_fail=last_fail, last_fail_ms=last_fail_ms)
                cols.ts.fromfile(fh, count)
                cols.score.fromfile(fh, count)
                cols.fail = bytearray(fh.read(count))
                if len(cols.fail) != count:
                    return None
                runs.skills[name] = cols
            if fh.read(1):
                return None
            return runs
    except (OSError, ValueError, KeyError, TypeError, EOFError, struct.error):
        return None
