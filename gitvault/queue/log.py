"""The ``queue`` stream read incrementally: a folded-state cache that is checked, never
trusted blindly.

The cache (``.git/gitvault/queue-state.cache``, never committed) holds the fold of
every queue log file up to a byte offset, with each file's line count and a CRC of its
first and last bytes up to that offset. A load checks every file against it (the file
still exists, has not shrunk, and those bytes are unchanged) and folds only the lines
appended since; if any check fails, or a new record sorts before the last folded one
(a sync brought older records), the fold starts from scratch. So a long history of
finished PRs costs nothing per command, and a stale or damaged cache costs only time.

The cache is a JSON header line, then the state and its history in ``marshal`` form
(each with a CRC; the Python version is in the header). It is rewritten only when it
lags the logs by ``SAVE_LAG`` records: between rewrites a load folds those few lines.
"""

from __future__ import annotations

import json
import marshal
import os
import sys
import zlib

from gitvault.core import clock, records
from gitvault.core.paths import NOFOLLOW
from gitvault.queue.state import NeedRebuild, QueueState

TYPE_CHECKING = False  # typing is not imported at run time (the queue's hot path)
if TYPE_CHECKING:
    from typing import Any

    from gitvault.core.paths import VaultLayout
    from gitvault.queue.state import Key

CACHE_VERSION = 3
SAVE_LAG = 64  # rewrite the cache once it is this many records behind the logs
_FORMAT = f"{CACHE_VERSION}/{sys.version_info[0]}.{sys.version_info[1]}/{marshal.version}"
_WINDOW = 4096  # bytes digested at each end of the folded part of a file


def _digest(fd: int, size: int) -> int:
    """CRC-32 of the first and last bytes of a file's first ``size`` bytes."""
    head = os.pread(fd, min(size, _WINDOW), 0)
    tail = os.pread(fd, min(size, _WINDOW), max(0, size - _WINDOW))
    return zlib.crc32(tail, zlib.crc32(head))


class QueueLog:
    """The queue stream of one vault: load (folded), append, and the writers' lock."""

    def __init__(self, layout: VaultLayout) -> None:
        self.folder = layout.stream("queue")
        self.layout = layout
        self.lock_path = layout.lock_file("queue")
        self.cache_path = layout.cache / "queue-state.cache" if layout.cache else None
        # relative path -> [folded bytes, folded lines, digest]
        self.files: dict[str, list[Any]] = {}
        self.warnings: list[records.LineWarning] = []
        self.parsed = 0  # records read by the latest load (0 on a warm cache)
        self.lag = 0  # records folded since the state the cache file holds
        self._valid = True  # the fold matches self.files (else the cache is not saved)

    def locked(self) -> records.Lock:
        """The lock every read-decide-append of the queue holds (``with``)."""
        return records.locked(self.lock_path)

    # -- reading ------------------------------------------------------------------
    def _listing(self) -> list[str]:
        found: list[str] = []
        if os.path.islink(self.folder) or os.path.islink(os.path.dirname(self.folder)):
            return found  # never followed (SPEC §1); doctor names it
        for top, dirs, names in os.walk(self.folder):
            dirs.sort()
            rel = os.path.relpath(top, self.folder)
            for name in names:
                if name.endswith(".jsonl"):
                    found.append(name if rel == "." else f"{rel}/{name}".replace(os.sep, "/"))
        return sorted(found)

    def load(self) -> QueueState:
        """The folded queue: incremental on a valid cache, else from scratch."""
        self.parsed, self._valid = 0, True
        cached = self._read_cache()
        if cached is not None:
            state, self.files, self.warnings = cached
            try:
                batch = self._read_new(self.files)
                if batch is not None and (not batch or min(k for k, _, _ in batch) >= state.last_key):
                    self._fold(state, batch)
                    self.lag = len(batch)
                    return state
            except NeedRebuild:
                pass
        state, self.files, self.warnings = QueueState(), {}, []
        self.parsed = 0
        batch = self._read_new(self.files) or []
        self._fold(state, batch)
        self.lag = SAVE_LAG  # no usable cache: write one
        return state

    def _fold(self, state: QueueState, batch: list[tuple[Key, dict[str, Any], str]]) -> None:
        batch.sort(key=lambda item: item[0])
        for key, record, where in batch:
            why = state.apply(record, key)
            if why is not None:
                self.warnings.append(records.LineWarning(where, key[3], why))
        self.warnings.sort(key=lambda w: (w.file, w.line))
        state.compact()

    def _read_new(self, files: dict[str, list[Any]]
                  ) -> list[tuple[Key, dict[str, Any], str]] | None:
        """Records appended since ``files`` (updated in place); None if a file changed."""
        listing = self._listing()
        if set(files) - set(listing):
            return None
        batch: list[tuple[Key, dict[str, Any], str]] = []
        seen: set[str] = set()
        for rel in listing:
            offset, lines, digest = files.get(rel, [0, 0, None])
            path = os.path.join(self.folder, rel)
            try:
                fd = os.open(path, os.O_RDONLY | NOFOLLOW)
            except OSError as exc:  # gone since the listing, or unreadable
                if rel in files:
                    return None
                if os.path.islink(path):
                    self.warnings.append(records.LineWarning(path, 0, records.SYMLINK_SKIPPED))
                elif not isinstance(exc, FileNotFoundError):
                    self.warnings.append(records.LineWarning(path, 0, f"cannot read: {exc.strerror}"))
                continue
            try:
                size = os.fstat(fd).st_size
                if size < offset or (digest is not None and _digest(fd, offset) != digest):
                    return None
                data = os.pread(fd, size - offset, offset) if size > offset else b""
                end = data.rfind(b"\n") + 1  # a last line without \n is a write in progress
                if end:
                    lines = self._parse(data[:end], rel, path, lines, batch, seen)
                    offset += end
                    files[rel] = [offset, lines, _digest(fd, offset)]
                elif rel not in files:
                    files[rel] = [0, 0, None]
            finally:
                os.close(fd)
        return batch

    def _parse(self, data: bytes, rel: str, path: str, number: int,
               batch: list[tuple[Key, dict[str, Any], str]], seen: set[str]) -> int:
        for raw in data.split(b"\n")[:-1]:
            number += 1
            if not raw.strip():
                continue
            self.parsed += 1
            try:
                record = json.loads(raw)
            except (ValueError, RecursionError):
                why = records.decode_line(raw)[1] or "invalid JSON"
                self.warnings.append(records.LineWarning(path, number, why))
                continue
            if not isinstance(record, dict):
                self.warnings.append(records.LineWarning(path, number, "not a JSON object"))
                continue
            ts_key, bad_ts = records.ts_sort_key(record.get("ts"))
            if bad_ts is not None:
                self.warnings.append(records.LineWarning(path, number, bad_ts))
                continue
            if records.seen_before(record, seen):
                continue
            node = record.get("node")
            batch.append(((ts_key, node if isinstance(node, str) else "", rel, number),
                          record, path))
        return number

    def _read_cache(self) -> tuple[QueueState, dict[str, list[Any]], list[records.LineWarning]] | None:
        """The cache, if its format, Python version and CRCs check out (the history is
        only checked here; it is parsed when a look-up needs it)."""
        if self.cache_path is None:
            return None
        try:
            raw = self.cache_path.read_bytes()
            cut = raw.index(b"\n") + 1
            header = json.loads(raw[:cut])
            end = cut + header["headLen"]
            body, history = raw[cut:end], raw[end:]
            if header.get("format") != _FORMAT or header["headCrc"] != zlib.crc32(body) \
                    or header["historyCrc"] != zlib.crc32(history):
                return None
            data = marshal.loads(body)
            warnings = [records.LineWarning(*w) for w in data["warnings"]]
            return QueueState.from_cache(data["state"], history), data["files"], warnings
        except (OSError, ValueError, KeyError, TypeError, AttributeError, EOFError):
            return None  # missing or damaged: fold from scratch

    def save(self, state: QueueState, *, force: bool = False) -> None:
        """Write the cache once it lags ``SAVE_LAG`` records (or ``force``): temp file +
        rename; it is not fsynced, since a torn cache fails its CRCs and is rebuilt.
        Silently skipped when it cannot be written."""
        if self.cache_path is None or not self._valid or not self.lag or \
                (self.lag < SAVE_LAG and not force):
            return
        history = state.history_bytes()
        body = marshal.dumps({"files": self.files, "state": state.to_cache(),
                              "warnings": [[w.file, w.line, w.reason] for w in self.warnings]})
        header = json.dumps({"format": _FORMAT, "headLen": len(body), "headCrc": zlib.crc32(body),
                             "historyCrc": zlib.crc32(history)})
        tmp = self.cache_path.with_name(f"{self.cache_path.name}.{os.getpid()}.tmp")
        try:
            self.cache_path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_bytes(header.encode() + b"\n" + body + history)
            os.replace(tmp, self.cache_path)
            self.lag = 0
        except OSError:
            tmp.unlink(missing_ok=True)

    # -- writing ------------------------------------------------------------------
    def append(self, state: QueueState, node: str, new: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Append ``new`` (ids, ts and node filled in, secrets redacted) to this
        node's file in one ``os.write``, fold them into ``state`` and return them as
        written. The caller holds :meth:`locked`."""
        if not new:
            return []
        stamped = [records.stamp(record, node) for record in new]
        path = self.layout.log_file("queue", node, stamped[0]["ts"])  # its own month
        rel = path.relative_to(self.folder).as_posix()
        before = self.files.get(rel, [0, 0, None])
        try:
            size = os.stat(path).st_size
            in_step = size == before[0] and not (size and records.has_torn_tail(path))
        except FileNotFoundError:
            in_step = before[0] == 0
        written = records.append_records(path, stamped, root=self.layout.root)
        if in_step:  # the file grew by exactly our lines: the cache can follow it
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
            try:
                end = os.fstat(fd).st_size
                added = os.pread(fd, end - before[0], before[0])
                in_step = added.count(b"\n") == len(written) and added.endswith(b"\n")
                if in_step:
                    self.files[rel] = [end, before[1] + len(written), _digest(fd, end)]
            finally:
                os.close(fd)
        previous = state.last_key
        for i, record in enumerate(written):
            key = (clock.ts_key(record["ts"]), node, rel, before[1] + i + 1)
            if not in_step or key < previous:
                self._valid = False  # folded out of order: the next load folds from scratch
            previous = key
            state.apply(record, key, new_id=True)
        state.compact()
        self.lag += len(written)
        return written

    def next_ts(self, state: QueueState) -> str:
        """Now, or the latest folded time if the clock is behind it: this node's records
        then fold in the order they were written."""
        now = records.now_iso()
        if state.last_ts and clock.ts_key(now) < state.last_key[0]:
            return state.last_ts
        return now

