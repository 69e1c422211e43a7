"""Learning from outcomes (SPEC §4.1): the prompts of injections that succeeded become
evidence for the skills they injected, failed ones weigh against.

The fold reads every node's files under ``logs/events/`` (synced history included)
into tables of the search index:

- ``injections``: each ``inject`` record's prompt and its terms, by id;
- ``outcomes``: each ``outcome`` of an injection, and whether it was applied yet
  (its injection may arrive later, from another node's file);
- ``evidence``: per skill and term, the term's count in prompts that succeeded
  (``pos``) and failed (``neg``) with it;
- ``evidence_prompts``: per skill, the injections that succeeded with it, in the
  order they were folded (dense retrieval compares a query with their prompts);
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
import os
import sqlite3
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gitvault.core.records import LineWarning, decode_line, stream_files, ts_sort_key
from gitvault.retrieval.sql import KEYS, select_in, writing
from gitvault.retrieval.tokens import tokenize

SCHEMA = """
CREATE TABLE IF NOT EXISTS event_files (
    path TEXT PRIMARY KEY, ino INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
    offset INTEGER NOT NULL, lines INTEGER NOT NULL, tail TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS injections (
    id TEXT PRIMARY KEY, terms TEXT NOT NULL, prompt TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS outcomes (
    id TEXT PRIMARY KEY, injection TEXT NOT NULL, success INTEGER NOT NULL,
    skills TEXT NOT NULL, applied INTEGER NOT NULL) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS outcomes_injection ON outcomes (injection, applied);
CREATE TABLE IF NOT EXISTS evidence (
    term TEXT NOT NULL, skill TEXT NOT NULL, pos INTEGER NOT NULL, neg INTEGER NOT NULL,
    PRIMARY KEY (term, skill)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS evidence_prompts (
    seq INTEGER PRIMARY KEY, skill TEXT NOT NULL, injection TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS evidence_prompts_skill ON evidence_prompts (skill, seq);
CREATE TABLE IF NOT EXISTS learned (
    skill TEXT PRIMARY KEY, usage INTEGER NOT NULL DEFAULT 0,
    success INTEGER NOT NULL DEFAULT 0, failure INTEGER NOT NULL DEFAULT 0,
    pos_len INTEGER NOT NULL DEFAULT 0, neg_len INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS event_warnings (
    path TEXT NOT NULL, line INTEGER NOT NULL, reason TEXT NOT NULL);
"""
TABLES = ("event_files", "injections", "outcomes", "evidence", "evidence_prompts", "learned",
          "event_warnings")
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
    transaction when something changed (checked again under it). Without an
    ``events_dir`` nothing is read and what was folded stays."""
    if events_dir is None:
        return EventsRefresh()
    files = stream_files(events_dir)
    restart, todo = _stale(conn, files)
    if not restart and not todo:
        return EventsRefresh()
    with writing(conn):
        restart, todo = _stale(conn, files)
        if restart:
            for table in TABLES:
                conn.execute(f"DELETE FROM {table}")
            todo = [(path, 0, 0) for path in files]
        fold = _Fold(conn)
        for path, offset, lines in todo:
            fold.read(path, offset, lines)
        fold.run()
    return EventsRefresh(len(todo), fold.folded, restart)


def _parse(raw: bytes) -> tuple[dict[str, object] | None, str]:
    value, bad = decode_line(raw)  # the same reasons every reader gives
    if bad is not None:
        return None, bad
    if not isinstance(value, dict):
        return None, "not a JSON object"
    why = ts_sort_key(value.get("ts"))[1]
    if why is not None:
        return None, why
    return value, ""


def _names(refs: object) -> list[str]:
    """Distinct skill names of ``name@vN`` references."""
    if not isinstance(refs, list):
        return []
    return list(dict.fromkeys(str(ref).split("@")[0] for ref in refs))


def _each(refs: object) -> list[str]:
    """Every reference's skill name, repeats kept (as the usage counts take them)."""
    return [str(ref).split("@")[0] for ref in refs] if isinstance(refs, list) else []


class _Fold:
    """One refresh: the new lines of some files, folded in memory in read order (files
    sorted, lines in order; the first record of an id wins), then written in a few
    statements."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.items: list[tuple[str, dict[str, object]]] = []  # (where, record)
        self.files: list[tuple[str, int, int, int, int, str]] = []
        self.warnings: list[tuple[str, int, str]] = []
        self.folded = 0

    def read(self, path: Path, offset: int, lines: int) -> None:
        name = os.fspath(path)
        try:
            with open(path, "rb") as fh:
                st = os.fstat(fh.fileno())
                fh.seek(max(0, offset - _TAIL))
                data = fh.read()
        except OSError as exc:
            self.warnings.append((name, 0, f"cannot read: {exc.strerror or exc}"))
            return
        start = max(0, offset - _TAIL)  # the file position data[0] was read from
        head = offset - start
        end = max(head, data.rfind(b"\n") + 1)  # a last line without "\n": still being written
        for raw in data[head:end].split(b"\n")[:-1]:
            lines += 1
            if not raw.strip():
                continue
            record, why = _parse(raw)
            if record is None:
                self.warnings.append((name, lines, why))
            elif record.get("op") in ("inject", "outcome"):
                self.items.append((f"@{name}:{lines}", record))
        self.files.append((name, st.st_ino, st.st_mtime_ns, start + end, lines,
                           _tail_hash(data[:end][-_TAIL:])))

    def _existing(self, table: str, ids: list[str]) -> set[str]:
        return {row[0] for row in select_in(self.conn, f"SELECT id FROM {table} "
                                            f"WHERE id IN ({KEYS})", ids)}

    def run(self) -> None:
        conn = self.conn
        inject_ids = [str(r["id"]) for _, r in self.items if r.get("op") == "inject"
                      and isinstance(r.get("id"), str) and r.get("id")]
        outcome_ids = [str(r.get("id") or w) for w, r in self.items if r.get("op") == "outcome"]
        old_injections, old_outcomes = (self._existing("injections", inject_ids),
                                        self._existing("outcomes", outcome_ids))
        wanted = sorted({str(r["injection"]) for _, r in self.items
                         if r.get("op") == "outcome" and isinstance(r.get("injection"), str)})
        # injection id -> its prompt's terms
        terms_of: dict[str, str] = dict(select_in(
            conn, f"SELECT id, terms FROM injections WHERE id IN ({KEYS})", wanted))
        waiting: dict[str, list[list[Any]]] = {}  # injection -> [outcome id, success, skills, applied, old]
        for oid, injection, success, skills in select_in(
                conn, "SELECT id, injection, success, skills FROM outcomes WHERE applied = 0 "
                f"AND injection IN ({KEYS})", sorted(set(inject_ids))):
            waiting.setdefault(injection, []).append(
                [oid, bool(success), skills.split("\n") if skills else [], 0, True])
        seen_injections, seen_outcomes = set(old_injections), set(old_outcomes)
        new_injections: list[tuple[str, str, str]] = []  # (id, terms, prompt)
        successes: list[tuple[str, str]] = []  # (skill, injection) of each success
        new_outcomes: list[tuple[str, list[Any]]] = []  # (injection, its entry)
        counts: dict[str, list[int]] = {}  # skill -> usage, success, failure, pos_len, neg_len
        prompts: dict[tuple[str, bool], list[str]] = {}  # (skill, success) -> prompts' terms

        def bump(skill: str, column: int, by: int = 1) -> None:
            counts.setdefault(skill, [0, 0, 0, 0, 0])[column] += by

        def apply(injection: str, terms: str, success: bool, skills: list[str]) -> None:
            for skill in skills:
                prompts.setdefault((skill, success), []).append(terms)
                if success:
                    successes.append((skill, injection))

        for where, record in self.items:
            rid = record.get("id")
            key = rid if isinstance(rid, str) and rid else None
            if record.get("op") == "inject":
                if key is not None and key in seen_injections:
                    continue  # a duplicate id: the first one read counts
                self.folded += 1
                for skill in _each(record.get("skills")):
                    bump(skill, 0)
                if key is None:
                    continue
                seen_injections.add(key)
                prompt = record.get("prompt")
                prompt = prompt if isinstance(prompt, str) else ""
                terms = " ".join(tokenize(prompt))
                terms_of[key] = terms
                new_injections.append((key, terms, prompt))
                for entry in waiting.pop(key, []):
                    apply(key, terms, entry[1], entry[2])
                    entry[3] = 1
                    if entry[4]:
                        conn.execute("UPDATE outcomes SET applied = 1 WHERE id = ?", (entry[0],))
                continue
            key = key or where
            if key in seen_outcomes:
                continue
            seen_outcomes.add(key)
            self.folded += 1
            success = record.get("success") is True
            for skill in _each(record.get("skills")):
                bump(skill, 1 if success else 2)
            injection = record.get("injection")
            if not isinstance(injection, str) or not injection:
                continue
            names = _names(record.get("skills"))
            entry = [key, success, names, 0, False]
            if injection in terms_of:
                apply(injection, terms_of[injection], success, names)
                entry[3] = 1
            else:
                waiting.setdefault(injection, []).append(entry)
            new_outcomes.append((injection, entry))
        conn.executemany("INSERT INTO injections VALUES (?, ?, ?)", new_injections)
        conn.executemany("INSERT INTO evidence_prompts (skill, injection) VALUES (?, ?)",
                         successes)
        conn.executemany("INSERT INTO outcomes VALUES (?, ?, ?, ?, ?)",
                         [(key, injection, int(success), "\n".join(names), applied)
                          for injection, (key, success, names, applied, _) in new_outcomes])
        evidence: dict[tuple[str, str], list[int]] = {}  # (term, skill) -> [pos, neg]
        for (skill, success), texts in prompts.items():
            found = Counter(" ".join(texts).split())  # counted in C: the bulk of a big fold
            column = 0 if success else 1
            for term, n in found.items():
                evidence.setdefault((term, skill), [0, 0])[column] += n
            bump(skill, 3 + column, sum(found.values()))
        conn.executemany(
            "INSERT INTO learned (skill, usage, success, failure, pos_len, neg_len) "
            "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (skill) DO UPDATE SET "
            "usage = usage + excluded.usage, success = success + excluded.success, "
            "failure = failure + excluded.failure, pos_len = pos_len + excluded.pos_len, "
            "neg_len = neg_len + excluded.neg_len",
            [(skill, *values) for skill, values in counts.items()])
        conn.executemany(
            "INSERT INTO evidence (term, skill, pos, neg) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (term, skill) DO UPDATE SET pos = pos + excluded.pos, "
            "neg = neg + excluded.neg",
            [(term, skill, pos, neg) for (term, skill), (pos, neg) in evidence.items()])
        conn.executemany("INSERT INTO event_warnings VALUES (?, ?, ?)", self.warnings)
        conn.executemany("INSERT OR REPLACE INTO event_files VALUES (?, ?, ?, ?, ?, ?)",
                         self.files)


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
    """usage / success / failure of the given skills (those with any): one pass over the
    skills with history, not one look-up per match."""
    wanted = skills if isinstance(skills, (set, dict)) else set(skills)
    return {skill: {"usage": usage, "success": success, "failure": failure}
            for skill, usage, success, failure in conn.execute(
                "SELECT skill, usage, success, failure FROM learned "
                "WHERE usage > 0 OR success > 0 OR failure > 0")
            if skill in wanted}


def evidence_prompts(conn: sqlite3.Connection, per_skill: int) -> list[tuple[str, str, str]]:
    """(skill, injection id, prompt) of the last ``per_skill`` successful injections of
    each skill with any, in skill order."""
    return conn.execute(
        "SELECT e.skill, e.injection, i.prompt FROM (SELECT skill, injection, seq, "
        "row_number() OVER (PARTITION BY skill ORDER BY seq DESC) AS n FROM evidence_prompts"
        ") e JOIN injections i ON i.id = e.injection WHERE e.n <= ? ORDER BY e.skill, e.seq",
        (per_skill,)).fetchall()
