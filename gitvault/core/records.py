"""The append-only record store: append, scan, repair, dedup (SPEC §3).

A record is one JSON object on one line of ``logs/<stream>/<YYYY-MM>/<node>.jsonl``.
An append is one ``os.write`` of one whole line on an ``O_APPEND`` descriptor, so
concurrent writers on one machine never interleave; a torn tail left by a crash is
moved aside to ``<file>.torn`` (kept, ignored by git) before the next append, so
every line that can be committed is a whole record and nothing is dropped. Readers
stream files line by line, ignore a last line without ``\\n`` (a write in progress),
report bad lines as :class:`LineWarning` and never raise on bad content; no symlink
below the vault is followed (SPEC §1).
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from pathlib import Path

from gitvault.core.paths import NOFOLLOW, SymlinkRefused, find_git_dir, open_below
from gitvault.core.redact import redact_record
from gitvault.errors import InvalidInput

TYPE_CHECKING = False  # typing is not imported at run time: record-run starts fast
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator
    from datetime import datetime
    from typing import Any

    from gitvault.core.paths import VaultLayout

    PathLike = str | os.PathLike[str]

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_SETTLE = 0.2  # seconds a torn tail must stay unchanged before it is repaired
_SETTLE_MAX = 2.0  # never wait longer than this for a tail to settle
TORN_SUFFIX = ".torn"  # <file>.jsonl.torn: lines a log could not keep, kept aside
TORN_PATTERN = "*.jsonl.torn"
_SHOWN_MAX = 60  # characters of a bad value quoted in a warning
_TS_KEY: list[Callable[[str], str]] = []  # clock.ts_key, once a reader needs it
# [milliseconds, random part] of this process's latest id.
_last_id = [-1, 0]


def new_id(moment: datetime | None = None) -> str:
    """A unique, time-sortable id: a ULID (26 Crockford base32 characters).

    10 characters of milliseconds since the epoch (*moment*, else the system clock)
    then 16 characters of randomness. Ids made in a later millisecond sort after
    earlier ones; within one process, ids of the same millisecond increase too.
    """
    if moment is None:
        ms = time.time_ns() // 1_000_000
    else:
        from datetime import datetime, timedelta, timezone

        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=timezone.utc)
        ms = (moment - datetime(1970, 1, 1, tzinfo=timezone.utc)) // timedelta(milliseconds=1)
    if not 0 <= ms < 1 << 48:
        raise InvalidInput(f"time out of range for an id: {moment!r}")
    last_ms, last_rand = _last_id
    if ms == last_ms and last_rand < (1 << 80) - 1:
        rand = last_rand + 1
    else:
        rand = int.from_bytes(os.urandom(10), "big")
    _last_id[:] = [ms, rand]
    value = (ms << 80) | rand
    chars = []
    for _ in range(26):
        chars.append(_CROCKFORD[value & 31])
        value >>= 5
    return "".join(reversed(chars))


def now_iso() -> str:
    """Now (the clock's, SPEC §1) as a record's ``ts``: ISO 8601 UTC with milliseconds
    and ``Z``. On the system clock it is formatted from ``time``, without loading
    ``datetime`` (a millisecond of record-run's start)."""
    if os.environ.get("GITVAULT_NOW"):
        from gitvault.core.clock import iso, now

        return iso(now())
    ms = time.time_ns() // 1_000_000
    t = time.gmtime(ms // 1000)
    return (f"{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d}T{t.tm_hour:02d}:{t.tm_min:02d}:"
            f"{t.tm_sec:02d}.{ms % 1000:03d}Z")


def stamp(record: dict[str, Any], node: str) -> dict[str, Any]:
    """A copy of *record* with ``id``, ``ts`` and ``node`` filled in where missing.

    Key order: ``id``, ``ts``, the record's other keys, ``node``.
    """
    stamped: dict[str, Any] = {
        "id": record.get("id") or new_id(),
        "ts": record.get("ts") or now_iso(),
    }
    for key, value in record.items():
        if key not in ("id", "ts", "node"):
            stamped[key] = value
    stamped["node"] = record.get("node") or node
    return stamped


def append_to_stream(layout: VaultLayout, stream: str, node: str,
                     batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Stamp ``batch`` and append it (one write) to ``node``'s file of ``stream`` for the
    month of its first record's ``ts``, so a record's own time names its file; no
    symlink below the vault is followed. Returns the records as written."""
    if not batch:
        return []
    stamped = [stamp(record, node) for record in batch]
    return append_records(layout.log_file(stream, node, stamped[0]["ts"]), stamped,
                          root=layout.root)


def append_record(path: PathLike, record: dict[str, Any], *,
                  root: PathLike | None = None) -> dict[str, Any]:
    """Append *record*, secrets redacted, as one line; return the record as written.

    Raises InvalidInput for a record JSON cannot hold (NaN, infinity, objects), and
    SymlinkRefused for a path through a symlink (see :func:`append_records`).
    """
    return append_records(path, [record], root=root)[0]


def _line(record: dict[str, Any]) -> tuple[dict[str, Any], bytes]:
    written = redact_record(record)
    try:
        text = json.dumps(written, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        reason = "non-finite number (NaN or infinity)" if "Out of range" in str(exc) else exc
        raise InvalidInput(f"record cannot be written as JSON: {reason}") from None
    return written, text.encode("utf-8") + b"\n"


def append_records(path: PathLike, records: list[dict[str, Any]],
                   batch_bytes: int = 1 << 20, *, root: PathLike | None = None) -> list[dict[str, Any]]:
    """Append many records: each write is one ``os.write`` of whole lines (up to
    ``batch_bytes`` at a time), so readers and other writers never see a partial
    record. Every record is checked before anything is written.

    No symlink is followed: with ``root`` (the vault root) none anywhere below it,
    else not the file itself (SymlinkRefused, exit 2). A torn tail a crash left is
    moved aside to ``<file>.torn`` first (:func:`move_torn_tail`). Writers hold a
    shared ``flock`` while they write, so a repair (an exclusive one) never sees a
    line half written, and a file replaced by a repair is opened again."""
    lines = [_line(record) for record in records]
    fd = _open_log(path, root)
    try:
        while _tail(fd)[1]:
            _move_tail(fd, path)  # trades the shared lock for the exclusive one and back
            if _is_current(fd, path):
                break
            os.close(fd)  # a repair replaced the file while the lock was traded
            fd = -1
            fd = _open_log(path, root)
        batch: list[bytes] = []
        size = 0
        for _, data in lines:
            if batch and size + len(data) > batch_bytes:
                _write_all(fd, b"".join(batch))
                batch, size = [], 0
            batch.append(data)
            size += len(data)
        if batch:
            _write_all(fd, b"".join(batch))
    finally:
        if fd >= 0:
            os.close(fd)  # closing the last descriptor releases the lock
    return [written for written, _ in lines]


def _is_current(fd: int, path: PathLike) -> bool:
    """Whether ``fd`` is still the file at ``path`` (no repair replaced it)."""
    try:
        return os.stat(path, follow_symlinks=False).st_ino == os.fstat(fd).st_ino
    except FileNotFoundError:
        return False


def _open_log(path: PathLike, root: PathLike | None) -> int:
    """The log file opened for appending, no symlink followed, under a shared lock, and
    still the file at ``path`` (a repair may have replaced it meanwhile)."""
    flags = os.O_RDWR | os.O_APPEND | os.O_CREAT
    while True:
        if root is not None:
            fd = open_below(root, path, flags, 0o644, make_dirs=True)
        else:
            try:
                fd = _open_file(path, flags)
            except FileNotFoundError:
                os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
                fd = _open_file(path, flags)
        fcntl.flock(fd, fcntl.LOCK_SH)
        if _is_current(fd, path):
            return fd
        os.close(fd)


def _open_file(path: PathLike, flags: int) -> int:
    try:
        return os.open(path, flags | NOFOLLOW, 0o644)
    except OSError:
        if os.path.islink(path):
            raise SymlinkRefused(f"{os.fspath(path)}: is a symlink; gitvault never follows "
                                 "symlinks under skills/ or logs/") from None
        raise


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _tail(fd: int) -> tuple[int, bool]:
    """The file's size, and whether it is non-empty and not ending with a newline."""
    size = os.fstat(fd).st_size
    return size, size > 0 and os.pread(fd, 1, size - 1) != b"\n"


def _settled(fd: int) -> bool:
    """Whether the file (whose exclusive lock the caller holds) still has a torn tail
    once that tail stayed unchanged for ``_SETTLE`` seconds: a crash's tear never
    changes, a writer that takes no lock (another program, an older gitvault) may still
    be copying its line in (the size grows page by page, and that writer may be
    descheduled). Gives up after ``_SETTLE_MAX`` seconds of growth: still torn."""
    size, torn = _tail(fd)
    start = settled = time.monotonic()
    pause = 0.0005
    while torn and time.monotonic() - settled < _SETTLE:
        if time.monotonic() - start > _SETTLE_MAX:
            break
        time.sleep(pause)
        pause = min(pause * 2, 0.02)
        seen = size
        size, torn = _tail(fd)
        if size != seen:  # someone is still writing: wait for them again
            settled = time.monotonic()
    return torn


def _move_tail(fd: int, path: PathLike) -> Path | None:
    """Under an exclusive lock (the shared one of an appender is traded for it), move a
    settled torn tail to ``<file>.torn`` (appended, fsynced) and cut it from the log.
    The fragment is never turned into a line of the log: a committed line is always a
    whole record. Returns the ``.torn`` path, or None when there was nothing to move."""
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        if not _settled(fd):
            return None
        size = os.fstat(fd).st_size
        keep = _last_newline(fd, size)
        aside = _put_aside(path, os.pread(fd, size - keep, keep))
        os.ftruncate(fd, keep)
        os.fsync(fd)
        return aside
    finally:
        fcntl.flock(fd, fcntl.LOCK_SH)


def _put_aside(path: PathLike, data: bytes) -> Path:
    """Append ``data`` (lines a log cannot keep) to ``<file>.torn``, fsynced, and make
    sure git ignores such files."""
    aside = Path(os.fspath(path) + TORN_SUFFIX)
    out = _open_file(aside, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        _write_all(out, data if data.endswith(b"\n") else data + b"\n")
        os.fsync(out)
    finally:
        os.close(out)
    _ignore_torn(aside)
    return aside


def _ignore_torn(aside: Path) -> None:
    """Add ``*.torn`` to the repository's ``info/exclude`` when git does not ignore it
    yet (only after a crash: never on the path of a normal append)."""
    git_dir = find_git_dir(aside.parent)
    if git_dir is None:
        return
    exclude = git_dir / "info" / "exclude"
    try:
        text = exclude.read_text("utf-8")
    except FileNotFoundError:
        text = ""
    except OSError:
        return
    if TORN_PATTERN in text.splitlines():
        return
    try:
        exclude.parent.mkdir(parents=True, exist_ok=True)
        with open(exclude, "a", encoding="utf-8") as fh:
            fh.write(("" if not text or text.endswith("\n") else "\n")
                     + "# gitvault: torn log lines moved aside (kept, never committed)\n"
                     + TORN_PATTERN + "\n")
    except OSError:
        pass


def has_torn_tail(path: PathLike) -> bool:
    """True when the file ends in a line without ``\\n`` (a crash, or a write in progress)."""
    fd = _open_file(path, os.O_RDONLY)
    try:
        return _tail(fd)[1]
    finally:
        os.close(fd)


def _last_newline(fd: int, size: int) -> int:
    """Offset just after the last ``\\n`` before ``size`` (0 if none), read backwards."""
    end = size
    while end > 0:
        start = max(0, end - 65536)
        chunk = os.pread(fd, end - start, start)
        found = chunk.rfind(b"\n")
        if found >= 0:
            return start + found + 1
        end = start
    return 0


def move_torn_tail(path: PathLike) -> Path | None:
    """Move an unterminated last line to ``<file>.torn`` (appended and fsynced), then cut
    it from the log. Takes the exclusive lock appenders trade for (and waits for a tail
    still growing to settle), so no concurrent append is lost. Returns the ``.torn``
    path, or None when there was nothing to move."""
    fd = _open_file(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        if not _tail(fd)[1]:
            return None
        return _move_tail(fd, path)
    finally:
        os.close(fd)


def bad_line(raw: bytes) -> str | None:
    """Why a whole line (without its ``\\n``) cannot stay in a log: blank, not JSON, not
    an object, a missing or bad ``ts``; None for a record."""
    if not raw.strip():
        return "blank line"
    value, why = decode_line(raw)
    if why is not None:
        return why
    if not isinstance(value, dict):
        return "not a JSON object"
    return ts_sort_key(value.get("ts"))[1]


def move_bad_lines(path: PathLike, keep: int) -> list[tuple[int, str]]:
    """Move every bad line (:func:`bad_line`) after the first ``keep`` bytes (the
    committed ones, never edited) to ``<file>.torn``; blank lines are dropped. The
    file is replaced (temp file, fsync, rename) under the exclusive lock, the lines
    aside are fsynced first, and appenders waiting for the lock open the new file, so
    nothing is lost. A torn tail is moved aside too. Returns (line number, why) of
    each line moved or dropped."""
    fd = _open_file(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        if _tail(fd)[1] and _settled(fd):
            _move_tail(fd, path)
            fcntl.flock(fd, fcntl.LOCK_EX)
        if not _is_current(fd, path):  # another repair replaced it meanwhile: start again
            return move_bad_lines(path, keep)
        size = os.fstat(fd).st_size
        data = os.pread(fd, size, 0)
        if len(data) < keep:
            return []
        first = data[:keep].count(b"\n")
        good, bad, moved = [data[:keep]], [], []
        for offset, raw in enumerate(data[keep:].split(b"\n")[:-1]):
            why = bad_line(raw)
            if why is None:
                good.append(raw + b"\n")
                continue
            moved.append((first + offset + 1, why))
            if raw.strip():
                bad.append(raw + b"\n")
        if not moved:
            return []
        if bad:
            _put_aside(path, b"".join(bad))
        tmp = f"{os.fspath(path)}.{os.getpid()}.tmp"
        out = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | NOFOLLOW, 0o644)
        try:
            _write_all(out, b"".join(good))
            os.fsync(out)
        finally:
            os.close(out)
        os.replace(tmp, path)
        folder = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)
        return moved
    finally:
        os.close(fd)


def locked(path: PathLike) -> Lock:
    """Hold an exclusive ``flock`` on the lock file *path*, created with parents (a
    context manager; a class rather than ``contextlib``, which the hot path would pay
    for at import)."""
    return Lock(path)


class Lock:
    """An exclusive ``flock`` held for a ``with`` block (see :func:`locked`)."""

    __slots__ = ("fd", "path")

    def __init__(self, path: PathLike) -> None:
        self.path, self.fd = path, -1

    def __enter__(self) -> None:
        os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX)
        except BaseException:
            os.close(self.fd)
            raise

    def __exit__(self, *exc: object) -> None:
        os.close(self.fd)  # closing the last descriptor releases the lock


class LineWarning:
    """A line that is not a valid record: where it is and why."""

    __slots__ = ("file", "line", "reason")

    def __init__(self, file: str, line: int, reason: str) -> None:
        self.file, self.line, self.reason = file, line, reason

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LineWarning) and \
            (self.file, self.line, self.reason) == (other.file, other.line, other.reason)

    def __hash__(self) -> int:
        return hash((self.file, self.line, self.reason))

    def __repr__(self) -> str:
        return f"LineWarning({self.file!r}, {self.line!r}, {self.reason!r})"

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.reason}"

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "reason": self.reason}


class Scan:
    """The valid records of some files, ordered, and the warnings for the rest."""

    def __init__(self, records: list[dict[str, Any]] | None = None,
                 warnings: list[LineWarning] | None = None) -> None:
        self.records: list[dict[str, Any]] = records if records is not None else []
        self.warnings: list[LineWarning] = warnings if warnings is not None else []

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Scan) and \
            (self.records, self.warnings) == (other.records, other.warnings)

    def __repr__(self) -> str:
        return f"Scan({self.records!r}, {self.warnings!r})"


def decode_line(raw: bytes) -> tuple[Any, str | None]:
    """``(value, None)`` for a line holding one JSON value, else ``(None, why not)``:
    not UTF-8, or invalid JSON with json's reason. Readers with a faster decoder call
    it to explain a line that decoder refused."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None, "not UTF-8"
    try:
        return json.loads(text), None
    except json.JSONDecodeError as exc:
        return None, f"invalid JSON: {exc.msg}"
    except RecursionError:
        return None, "invalid JSON: nested too deeply"
    except ValueError:  # an integer longer than Python converts (4,300 digits)
        return None, "invalid JSON: a number too long to read"


def iter_file(
    path: PathLike,
) -> Iterator[tuple[int, dict[str, Any] | None, str | None]]:
    """Yield ``(line_number, record, None)`` or ``(line_number, None, why)`` per line.

    Streams the file; skips blank lines; ignores a last line without ``\\n``.
    Raises OSError when the file cannot be opened, SymlinkRefused for a symlink.
    """
    with open(_open_file(path, os.O_RDONLY), "rb") as handle:
        for number, raw in enumerate(handle, 1):
            if not raw.endswith(b"\n"):
                return  # a write in progress
            if raw.isspace():
                continue
            value, why = decode_line(raw)
            if why is not None:
                yield number, None, why
            elif isinstance(value, dict):
                yield number, value, None
            else:
                yield number, None, "not a JSON object"


def stream_files(folder: PathLike, symlinks: list[str] | None = None) -> list[Path]:
    """Every ``*.jsonl`` file below *folder*, recursively, sorted by path. Symlinks are
    never followed (SPEC §1): the folder itself, its parent (``logs/``), a folder or a
    file below it that is one is left out and named in ``symlinks``, if given."""
    root = Path(folder)
    for link in (root.parent, root):
        if os.path.islink(link):
            if symlinks is not None:
                symlinks.append(os.fspath(link))
            return []
    if not root.is_dir():
        return []
    found = []
    for top, dirs, names in os.walk(root):
        for name in [*dirs]:
            if os.path.islink(os.path.join(top, name)):
                dirs.remove(name)
                if symlinks is not None:
                    symlinks.append(os.path.join(top, name))
        for name in names:
            if not name.endswith(".jsonl"):
                continue
            path = Path(top, name)
            if path.is_symlink():
                if symlinks is not None:
                    symlinks.append(os.fspath(path))
            elif path.is_file():
                found.append(path)
    if symlinks:
        symlinks.sort()
    return sorted(found)


SYMLINK_SKIPPED = "a symlink: skipped (gitvault never follows symlinks under logs/)"


def scan(
    folder_or_files: PathLike | Iterable[PathLike],
    *,
    check: Callable[[dict[str, Any]], str | None] | None = None,
) -> Scan:
    """Read records from a folder (every ``*.jsonl`` below it) or from given files.

    A record needs a valid ``ts``; *check* may refuse it by returning a reason.
    Refused and malformed lines become warnings; duplicate ids are dropped (the
    first read wins). Records come ordered by ``ts``, then node id, then file and
    line (SPEC §4.0). Never raises on bad content.
    """
    keyed: list[tuple[str, str, int, int, dict[str, Any]]] = []
    warnings: list[LineWarning] = []
    seen: set[str] = set()
    links: list[str] = []
    for index, path in enumerate(_files(folder_or_files, links)):
        name = os.fspath(path)
        try:
            for number, record, problem in iter_file(path):
                if record is None:
                    warnings.append(LineWarning(name, number, problem or "invalid"))
                    continue
                key, why = ts_sort_key(record.get("ts"))
                if why is None and check is not None:
                    why = check(record)
                if why is not None:
                    warnings.append(LineWarning(name, number, why))
                    continue
                if seen_before(record, seen):
                    continue
                node = record.get("node")
                node_key = node if isinstance(node, str) else "" if node is None else str(node)
                keyed.append((key, node_key, index, number, record))
        except SymlinkRefused:
            warnings.append(LineWarning(name, 0, SYMLINK_SKIPPED))
        except OSError as exc:
            warnings.append(LineWarning(name, 0, f"cannot read: {exc.strerror or exc}"))
    warnings += [LineWarning(link, 0, SYMLINK_SKIPPED) for link in links]
    keyed.sort(key=lambda item: item[:4])
    return Scan([item[4] for item in keyed], warnings)


def _files(folder_or_files: PathLike | Iterable[PathLike], links: list[str]) -> list[PathLike]:
    if isinstance(folder_or_files, (str, os.PathLike)):
        if os.path.isfile(folder_or_files) and not os.path.islink(folder_or_files):
            return [folder_or_files]
        return list(stream_files(folder_or_files, links))
    return list(folder_or_files)


def seen_before(record: dict[str, Any], seen: set[str]) -> bool:
    """Whether ``record``'s id was met already (first wins); records without an id are
    never repeats. Adds the id to ``seen``."""
    rid = record.get("id")
    if not isinstance(rid, str) or not rid:
        return False
    if rid in seen:
        return True
    seen.add(rid)
    return False


def ts_sort_key(ts: object) -> tuple[str, str | None]:
    """``(sort key, None)`` for a valid timestamp, else ``("", reason)``: the check every
    reader of records applies before ordering them."""
    if ts is None:
        return "", "missing ts"
    if isinstance(ts, str):
        if not _TS_KEY:  # the clock (and datetime) load on the first read, not on append
            from gitvault.core.clock import ts_key

            _TS_KEY.append(ts_key)
        try:
            return _TS_KEY[0](ts), None
        except InvalidInput:
            pass
    shown = repr(ts)
    if len(shown) > _SHOWN_MAX:
        shown = shown[: _SHOWN_MAX - 3] + "..."
    return "", f"bad ts: {shown}"
