"""Learning from outcomes (SPEC §4.1): the prompts of injections that succeeded become
evidence for the skills they injected, failed ones weigh against.

The fold reads every node's files under ``logs/events/`` (synced history included)
into tables of the search index:

- ``injections``: each ``inject`` record's prompt terms, by id;
- ``outcomes``: each ``outcome`` of an injection, and whether it was applied yet
  (its injection may arrive later, from another node's file);
- ``evidence``: per skill and term, the term's count in prompts that succeeded
  (``pos``) and failed (``neg``) with it;
- ``learned``: per skill, usage / success / failure counts (the boost) and the
  evidence lengths (the field's length normalisation).

It is incremental: each file's inode, size and read offset are kept, and only the
bytes appended since are read (an append-only log only grows). A file that shrank,
was replaced or went away makes the fold start again from nothing. So a query reads
the evidence for its terms and pays nothing for the history behind it. The same code
runs on an in-memory database when there is no index, so both give the same answer.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from gitvault.core.records import LineWarning, stream_files, ts_sort_key
from gitvault.retrieval.tokens import tokenize

SCHEMA = """
CREATE TABLE IF NOT EXISTS event_files (
    path TEXT PRIMARY KEY, ino INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
    offset INTEGER NOT NULL, lines INTEGER NOT NULL, tail TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS injections (id TEXT PRIMARY KEY, terms TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS outcomes (
    id TEXT PRIMARY KEY, injection TEXT NOT NULL, success INTEGER NOT NULL,
    skills TEXT NOT NULL, applied INTEGER NOT NULL) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS outcomes_injection ON outcomes (injection, applied);
CREATE TABLE IF NOT EXISTS evidence (
    term TEXT NOT NULL, skill TEXT NOT NULL, pos INTEGER NOT NULL, neg INTEGER NOT NULL,
    PRIMARY KEY (term, skill)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS learned (
    skill TEXT PRIMARY KEY, usage INTEGER NOT NULL DEFAULT 0,
    success INTEGER NOT NULL DEFAULT 0, failure INTEGER NOT NULL DEFAULT 0,
    pos_len INTEGER NOT NULL DEFAULT 0, neg_len INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS event_warnings (
    path TEXT NOT NULL, line INTEGER NOT NULL, reason TEXT NOT NULL);
"""
TABLES = ("event_files", "injections", "outcomes", "evidence", "learned", "event_warnings")
_TAIL = 64  # bytes before the read offset whose hash shows the file was only appended to


@dataclass
class EventsRefresh:
    """What folding the events log did: files read, records folded, started over."""

    files: int = 0
    records: int = 0
    restarted: bool = False


def create(conn: sqlite3.Connection) -> None:
    for statement in SCHEMA.split(";"):
        if statement.strip():
            conn.execute(statement)


def _tail_hash(data: bytes) -> str:
    return hashlib.sha1(data).hexdigest()


def _state(path: Path) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_mtime_ns, st.st_size


def _stale(conn: sqlite3.Connection, files: list[Path]
           ) -> tuple[bool, list[tuple[Path, int, int]]]:
    """(start over?, [(file, offset, lines) to read on from]) against what is stored."""
    stored = {row[0]: row[1:] for row in conn.execute(
        "SELECT path, ino, mtime_ns, offset, lines, tail FROM event_files")}
    todo: list[tuple[Path, int, int]] = []
    for path in files:
        name = os.fspath(path)
        now = _state(path)
        if now is None:
            continue
        ino, mtime, size = now
        row = stored.pop(name, None)
        if row is None:
            todo.append((path, 0, 0))
            continue
        old_ino, old_mtime, offset, lines, tail = row
        if old_ino != ino or size < offset:
            return True, []
        if old_mtime == mtime and size == offset:
            continue
        try:
            with open(path, "rb") as fh:
                fh.seek(max(0, offset - _TAIL))
                before = fh.read(offset - max(0, offset - _TAIL))
        except OSError:
            continue
        if _tail_hash(before) != tail:
            return True, []  # rewritten, not appended to
        todo.append((path, offset, lines))
    if stored:  # a file went away: what it held no longer counts
        return True, []
    return False, todo


def refresh(conn: sqlite3.Connection, events_dir: Path | None) -> EventsRefresh:
    """Fold what the events files gained since the last refresh. Runs its own write
    transaction when something changed (checked again under it)."""
    files = stream_files(events_dir) if events_dir is not None else []
    restart, todo = _stale(conn, files)
    if not restart and not todo:
        return EventsRefresh()
    conn.execute("BEGIN IMMEDIATE")
    try:
        restart, todo = _stale(conn, files)
        report = EventsRefresh(restarted=restart)
        if restart:
            for table in TABLES:
                conn.execute(f"DELETE FROM {table}")
            todo = [(path, 0, 0) for path in files]
        for path, offset, lines in todo:
            report.files += 1
            report.records += _fold_file(conn, path, offset, lines)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return report


def _fold_file(conn: sqlite3.Connection, path: Path, offset: int, lines: int) -> int:
    name = os.fspath(path)
    try:
        with open(path, "rb") as fh:
            st = os.fstat(fh.fileno())
            fh.seek(max(0, offset - _TAIL))
            data = fh.read()
    except OSError as exc:
        conn.execute("INSERT INTO event_warnings VALUES (?, 0, ?)",
                     (name, f"cannot read: {exc.strerror or exc}"))
        return 0
    start = max(0, offset - _TAIL)  # the file position data[0] was read from
    head = offset - start
    end = max(head, data.rfind(b"\n") + 1)  # a last line without "\n": still being written
    folded = 0
    for raw in data[head:end].split(b"\n")[:-1]:
        lines += 1
        if not raw.strip():
            continue
        record, why = _parse(raw)
        if record is None:
            conn.execute("INSERT INTO event_warnings VALUES (?, ?, ?)", (name, lines, why))
            continue
        folded += fold_record(conn, record, f"@{name}:{lines}")
    new_offset = start + end
    window = data[:end][-_TAIL:]
    conn.execute("INSERT OR REPLACE INTO event_files VALUES (?, ?, ?, ?, ?, ?)",
                 (name, st.st_ino, st.st_mtime_ns, new_offset, lines, _tail_hash(window)))
    return folded


def _parse(raw: bytes) -> tuple[dict[str, object] | None, str]:
    try:
        value = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        return None, "not UTF-8"
    except json.JSONDecodeError as exc:
        return None, f"invalid JSON: {exc.msg}"
    except (ValueError, RecursionError):
        return None, "invalid JSON"
    if not isinstance(value, dict):
        return None, "not a JSON object"
    why = ts_sort_key(value.get("ts"))[1]
    if why is not None:
        return None, why
    return value, ""


def _names(refs: object) -> list[str]:
    if not isinstance(refs, list):
        return []
    names: list[str] = []
    for ref in refs:
        name = str(ref).split("@")[0]
        if name not in names:
            names.append(name)
    return names


def _bump(conn: sqlite3.Connection, skill: str, column: str, by: int = 1) -> None:
    conn.execute(f"INSERT INTO learned (skill, {column}) VALUES (?, ?) "
                 f"ON CONFLICT (skill) DO UPDATE SET {column} = {column} + excluded.{column}",
                 (skill, by))


def fold_record(conn: sqlite3.Connection, record: dict[str, object], where: str) -> int:
    """Fold one record (1 if it was an injection or outcome met for the first time)."""
    op, rid = record.get("op"), record.get("id")
    key = rid if isinstance(rid, str) and rid else None
    if op == "inject":
        if key is not None and conn.execute("SELECT 1 FROM injections WHERE id = ?",
                                            (key,)).fetchone():
            return 0  # a duplicate id: the first one read counts
        refs = record.get("skills")
        for skill in [str(r).split("@")[0] for r in refs] if isinstance(refs, list) else []:
            _bump(conn, skill, "usage")
        if key is None:
            return 1
        prompt = record.get("prompt")
        terms = " ".join(tokenize(prompt)) if isinstance(prompt, str) else ""
        conn.execute("INSERT INTO injections VALUES (?, ?)", (key, terms))
        waiting = conn.execute("SELECT id, success, skills FROM outcomes WHERE injection = ? "
                               "AND applied = 0", (key,)).fetchall()
        for outcome_id, success, skills in waiting:
            _apply(conn, terms, bool(success), skills.split("\n") if skills else [])
            conn.execute("UPDATE outcomes SET applied = 1 WHERE id = ?", (outcome_id,))
        return 1
    if op == "outcome":
        key = key or where
        if conn.execute("SELECT 1 FROM outcomes WHERE id = ?", (key,)).fetchone():
            return 0
        success = record.get("success") is True
        refs = record.get("skills")
        for skill in [str(r).split("@")[0] for r in refs] if isinstance(refs, list) else []:
            _bump(conn, skill, "success" if success else "failure")
        injection = record.get("injection")
        if not isinstance(injection, str) or not injection:
            return 1
        names = _names(refs)
        row = conn.execute("SELECT terms FROM injections WHERE id = ?", (injection,)).fetchone()
        if row is not None:
            _apply(conn, row[0], success, names)
        conn.execute("INSERT INTO outcomes VALUES (?, ?, ?, ?, ?)",
                     (key, injection, int(success), "\n".join(names), int(row is not None)))
        return 1
    return 0


def _apply(conn: sqlite3.Connection, terms: str, success: bool, skills: Iterable[str]) -> None:
    counts = Counter(terms.split())
    if not counts:
        return
    total = sum(counts.values())
    column = "pos" if success else "neg"
    for skill in skills:
        conn.executemany(
            f"INSERT INTO evidence (term, skill, pos, neg) VALUES (?, ?, ?, ?) "
            f"ON CONFLICT (term, skill) DO UPDATE SET {column} = {column} + excluded.{column}",
            [(term, skill, n if success else 0, 0 if success else n)
             for term, n in counts.items()])
        _bump(conn, skill, f"{column}_len", total)


def warnings(conn: sqlite3.Connection) -> list[LineWarning]:
    rows = conn.execute("SELECT path, line, reason FROM event_warnings ORDER BY path, line")
    return [LineWarning(path, int(line), reason) for path, line, reason in rows]


def in_memory(events_dir: Path | None) -> sqlite3.Connection:
    """The fold in a database of its own (no index to keep it in)."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    create(conn)
    refresh(conn, events_dir)
    return conn


# -- what the ranker reads ------------------------------------------------------------
def evidence_rows(conn: sqlite3.Connection, term: str) -> list[tuple[str, int, int, int, int]]:
    """(skill, pos, neg, pos_len, neg_len) of every skill with evidence for ``term``."""
    return conn.execute(
        "SELECT e.skill, e.pos, e.neg, l.pos_len, l.neg_len FROM evidence e "
        "JOIN learned l ON l.skill = e.skill WHERE e.term = ?", (term,)).fetchall()


def lengths(conn: sqlite3.Connection) -> dict[str, tuple[int, int]]:
    """skill -> (pos_len, neg_len), for skills with any evidence."""
    rows = conn.execute("SELECT skill, pos_len, neg_len FROM learned "
                        "WHERE pos_len > 0 OR neg_len > 0")
    return {skill: (int(p), int(n)) for skill, p, n in rows}


def stats(conn: sqlite3.Connection, skills: Iterable[str]) -> dict[str, dict[str, int]]:
    """usage / success / failure of the given skills (those with any)."""
    wanted = list(skills)
    found: dict[str, dict[str, int]] = {}
    for start in range(0, len(wanted), 500):
        chunk = wanted[start:start + 500]
        rows = conn.execute("SELECT skill, usage, success, failure FROM learned "
                            f"WHERE skill IN ({', '.join('?' * len(chunk))})", chunk)
        for skill, usage, success, failure in rows:
            found[skill] = {"usage": usage, "success": success, "failure": failure}
    return found
