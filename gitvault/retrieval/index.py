"""The derived search index: ``.git/gitvault/search.sqlite`` (never committed).

It holds each skill folder's fields as postings and, for each folder, the stat
signature and content hash (git blob ids) of the files it was built from. Every
use first checks the index against the files, as git checks its own index:

- one ``stat`` per skill: when every name and stat is as stored (one byte string
  compared), and no file is too recent to trust its timestamp, nothing else is read;
- else the folders whose stats changed are looked at: one whose signature changed
  (a patch, a hand edit, a pull, a checkout) is read again, a new folder is added,
  a vanished one dropped;
- a file changed too recently for its timestamp to tell ("racy") is compared by
  content hash.

So the index answers exactly what the files say, and costs one ``stat`` per skill
plus the work for what changed.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from gitvault.retrieval import embed, learning, tokens
from gitvault.retrieval.documents import FIELDS, Loaded, content_blob, load
from gitvault.retrieval.listing import Listing, Snapshot
from gitvault.retrieval.rank import DocInfo, Evidence, Posting, weighted_tf_sql
from gitvault.retrieval.sql import KEYS, select_in, writing

INDEX_FILE = "search.sqlite"
SCHEMA_ID = f"gitvault-search/6 learning/2 tokens/{tokens.VERSION} fields/{','.join(FIELDS)}"
# A file modified this close to (or after) the moment it was indexed is "racy":
# its timestamp cannot show a later change of the same size, so its hash is checked.
RACY_NS = 2_000_000_000
_LENS = ", ".join(f"l{i}" for i in range(len(FIELDS)))
_TFS = ", ".join(f"t{i}" for i in range(len(FIELDS)))
_P_TFS, _D_LENS = _TFS.replace("t", "p.t"), _LENS.replace("l", "d.l")
_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS docs (
    id INTEGER PRIMARY KEY, folder TEXT NOT NULL UNIQUE, signature TEXT NOT NULL,
    mtime_ns INTEGER NOT NULL, checked_ns INTEGER NOT NULL, blob TEXT NOT NULL,
    error TEXT, name TEXT, version INTEGER, state TEXT, kind TEXT, description TEXT,
    {", ".join(f"l{i} INTEGER NOT NULL DEFAULT 0" for i in range(len(FIELDS)))});
CREATE TABLE IF NOT EXISTS postings (
    term TEXT NOT NULL, doc INTEGER NOT NULL,
    {", ".join(f"t{i} INTEGER NOT NULL" for i in range(len(FIELDS)))},
    PRIMARY KEY (term, doc)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS postings_doc ON postings (doc);
CREATE INDEX IF NOT EXISTS docs_kind ON docs (kind);
"""


@dataclass
class Refresh:
    """What a refresh found: folders added, read again, dropped, hash-checked."""

    added: int = 0
    updated: int = 0
    removed: int = 0
    hashed: int = 0
    total: int = 0


class Index:
    """An open index over ``skills_dir``; a Corpus for the ranker once refreshed."""

    def __init__(self, path: Path, skills_dir: Path, events_dir: Path | None = None) -> None:
        self.path = path
        self.skills_dir = skills_dir
        self.events_dir = events_dir
        path.parent.mkdir(parents=True, exist_ok=True)
        self.conn = sqlite3.connect(str(path), timeout=30, isolation_level=None)
        try:
            self._prepare()
        except BaseException:
            self.conn.close()
            raise

    def _prepare(self) -> None:
        conn = self.conn
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
                     " WITHOUT ROWID")
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        if row is not None and row[0] == SCHEMA_ID:
            return
        with writing(conn):  # a new file, or one an older gitvault wrote: start over
            row = conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
            if row is not None and row[0] == SCHEMA_ID:  # another process just made it
                return
            for table in ("postings", "docs", *embed.VECTOR_TABLES, *learning.TABLES):
                conn.execute(f"DROP TABLE IF EXISTS {table}")
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    conn.execute(statement)
            learning.create(conn)
            for statement in embed.VECTOR_SCHEMA:
                conn.execute(statement)
            conn.execute("DELETE FROM meta")
            conn.execute("INSERT INTO meta (key, value) VALUES ('schema', ?)", (SCHEMA_ID,))

    def close(self) -> None:
        self.conn.close()

    @contextmanager
    def reading(self) -> Iterator[None]:
        """One read transaction: every query inside sees the same committed state."""
        self.conn.execute("BEGIN")
        try:
            yield
        finally:
            self.conn.execute("COMMIT")

    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- keeping it true to the files ----------------------------------------------
    def refresh(self) -> Refresh:
        """Bring the index in line with the skill folders on disk."""
        conn = self.conn
        code = {row[0] for row in conn.execute("SELECT folder FROM docs WHERE kind = 'code'")}
        listing = Listing.take(self.skills_dir, code)
        report = Refresh(total=len(listing.stats))
        stored, generation, checked = self._stored()
        snapshot = listing.snapshot()
        if snapshot is not None and snapshot == stored and listing.newest() < checked - RACY_NS:
            return report  # every name and stat as stored, none of them racy
        for attempt in range(3):
            report = Refresh(total=len(listing.stats))
            if attempt == 2:  # twice optimistic (files read outside the lock), then under it
                with writing(conn):
                    stored, generation, checked = self._stored()
                    plan = self._plan(self._suspects(listing, stored, checked), listing, report)
                    self._write(*plan, generation + 1, snapshot)
                break
            plan = self._plan(self._suspects(listing, stored, checked), listing, report)
            with writing(conn):
                current = self._stored()
                if current[1] == generation:  # else another process refreshed: nothing written
                    self._write(*plan, generation + 1, snapshot)
            if current[1] == generation:
                break
            stored, generation, checked = current
        return report

    def _suspects(self, listing: Listing, stored: Snapshot | None, checked: int) -> list[str]:
        """The folders that may have changed since the ``stored`` snapshot (all indexed
        ones too when there is none)."""
        changed = listing.changed_since(stored or Snapshot("", b""), checked - RACY_NS)
        if stored is None:
            changed |= {row[0] for row in self.conn.execute("SELECT folder FROM docs")}
        return sorted(changed)

    def _stored(self) -> tuple[Snapshot | None, int, int]:
        """The snapshot the rows were last brought in line with, its generation, when."""
        meta = dict(self.conn.execute("SELECT key, value FROM meta WHERE key IN "
                                      "('names', 'numbers', 'generation', 'checked_ns')"))
        snapshot = None
        if isinstance(meta.get("names"), str) and isinstance(meta.get("numbers"), bytes):
            snapshot = Snapshot(meta["names"], meta["numbers"])
        return snapshot, int(meta.get("generation") or 0), int(meta.get("checked_ns") or 0)

    def _plan(self, changed: list[str], listing: Listing, report: Refresh
              ) -> tuple[list[Loaded], list[int], list[tuple[int, int]], int]:
        """What to write for the ``changed`` folders: (documents read, ids to drop,
        (time, id) of racy rows whose content hash still matches, time)."""
        now = time.time_ns()
        rows = list(select_in(self.conn, "SELECT folder, id, signature, mtime_ns, checked_ns, "
                              f"blob, kind FROM docs WHERE folder IN ({KEYS})", changed))
        listed = {f for f in changed if f in listing.stats}
        reload: list[str] = []
        removed: list[int] = []
        confirmed: list[tuple[int, int]] = []
        for folder, doc_id, signature, mtime, checked, blob, kind in rows:
            listed.discard(folder)
            if folder not in listing.stats:
                removed.append(doc_id)
            elif listing.signature(folder) != signature:
                reload.append(folder)
            elif mtime >= checked - RACY_NS:
                report.hashed += 1
                if content_blob(self.skills_dir, folder, kind == "code") == blob:
                    confirmed.append((now, doc_id))
                else:
                    reload.append(folder)
        report.added, report.updated, report.removed = len(listed), len(reload), len(removed)
        loaded = [load(self.skills_dir, folder) for folder in sorted([*listed, *reload])]
        return loaded, removed, confirmed, now

    def _write(self, loaded: list[Loaded], removed: list[int], confirmed: list[tuple[int, int]],
               now: int, generation: int, snapshot: Snapshot | None) -> None:
        """Apply a plan inside the caller's write transaction, and record the listing it
        started from: a file changed since then shows a new stat next time."""
        conn = self.conn
        conn.executemany("DELETE FROM postings WHERE doc = ?", [(i,) for i in removed])
        conn.executemany("DELETE FROM docs WHERE id = ?", [(i,) for i in removed])
        conn.executemany("UPDATE docs SET checked_ns = ? WHERE id = ?", confirmed)
        postings: list[tuple[object, ...]] = []
        for item in loaded:
            doc_id = self._store(item, now)
            if item.doc is not None and doc_id is not None:
                doc = item.doc
                postings += [(term, doc_id, *counts) for term, counts in doc.counts.items()]
        conn.executemany(f"INSERT INTO postings (term, doc, {_TFS}) VALUES "
                         f"(?, ?{', ?' * len(FIELDS)})", postings)
        values: list[tuple[str, object]] = [("generation", str(generation)),
                                            ("checked_ns", str(now))]
        if snapshot is not None:
            values += [("names", snapshot.names), ("numbers", snapshot.numbers)]
        else:
            conn.execute("DELETE FROM meta WHERE key IN ('names', 'numbers')")
        conn.executemany("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", values)

    def _store(self, item: Loaded, now: int) -> int | None:
        """Replace ``item.folder``'s row (postings cleared); its id, None if it is gone."""
        conn = self.conn
        row = conn.execute("SELECT id FROM docs WHERE folder = ?", (item.folder,)).fetchone()
        if row is not None:
            conn.execute("DELETE FROM postings WHERE doc = ?", (row[0],))
            conn.execute("DELETE FROM docs WHERE id = ?", (row[0],))
        if item.doc is None and item.error is None:
            return None
        doc = item.doc
        values = (item.folder, item.signature, item.mtime_ns, now, item.blob, item.error,
                  *((doc.name, doc.version, doc.state, doc.kind, doc.description, *doc.lengths)
                    if doc is not None else (None,) * 5 + (0,) * len(FIELDS)))
        cursor = conn.execute(
            f"INSERT INTO docs (folder, signature, mtime_ns, checked_ns, blob, error, name, "
            f"version, state, kind, description, {_LENS}) VALUES "
            f"(?{', ?' * (10 + len(FIELDS))})", values)
        return cursor.lastrowid

    # -- the Corpus the ranker reads ----------------------------------------------
    def totals(self) -> tuple[int, tuple[int, ...]]:
        sums = ", ".join(f"coalesce(sum(l{i}), 0)" for i in range(len(FIELDS)))
        row = self.conn.execute(f"SELECT count(*), {sums} FROM docs WHERE error IS NULL").fetchone()
        return int(row[0]), tuple(int(v) for v in row[1:])

    def postings(self, term: str, averages: tuple[float, ...]) -> list[Posting]:
        weighted, params = weighted_tf_sql(averages)
        rows = self.conn.execute(
            f"SELECT d.folder, d.state, {weighted} FROM postings p JOIN docs d ON d.id = p.doc "
            "WHERE p.term = ?", [*params, term])
        return rows.fetchall()

    def infos(self, folders: Iterable[str]) -> dict[str, DocInfo]:
        rows = select_in(self.conn, f"SELECT folder, name, version, state, kind, description, "
                         f"{_LENS} FROM docs WHERE folder IN ({KEYS})", folders)
        return {row[0]: DocInfo(row[1], int(row[2]), row[3], row[4], row[5], row[0],
                                tuple(int(v) for v in row[6:])) for row in rows}

    def warnings(self) -> list[str]:
        rows = self.conn.execute(
            "SELECT error FROM docs WHERE error IS NOT NULL ORDER BY folder").fetchall()
        return [row[0] for row in rows]

    def every_info(self) -> list[tuple[DocInfo, str]]:
        rows = self.conn.execute(
            f"SELECT folder, name, version, state, kind, description, blob, {_LENS} FROM docs "
            "WHERE error IS NULL AND state IN ('active', 'stale') ORDER BY folder")
        return [(DocInfo(r[1], int(r[2]), r[3], r[4], r[5], r[0], tuple(int(v) for v in r[7:])),
                 r[6]) for r in rows]

    # -- learning from outcomes ---------------------------------------------------
    def refresh_events(self) -> learning.EventsRefresh:
        """Fold what the events log gained since the last refresh."""
        return learning.refresh(self.conn, self.events_dir)

    def event_warnings(self) -> list[str]:
        return [str(w) for w in learning.warnings(self.conn)]

    def evidence_totals(self) -> tuple[int, int]:
        row = self.conn.execute(
            "SELECT coalesce(sum(l.pos_len), 0), coalesce(sum(l.neg_len), 0) FROM learned l "
            "JOIN docs d ON d.folder = l.skill WHERE d.error IS NULL").fetchone()
        return int(row[0]), int(row[1])

    def evidence(self, term: str) -> list[Evidence]:
        rows = self.conn.execute(
            "SELECT d.folder, d.state, e.pos, e.neg, l.pos_len, l.neg_len FROM evidence e "
            "JOIN docs d ON d.folder = e.skill JOIN learned l ON l.skill = e.skill "
            "WHERE e.term = ? AND d.error IS NULL", (term,))
        return rows.fetchall()

    def learned(self, folders: Iterable[str]) -> dict[str, dict[str, int]]:
        return learning.stats(self.conn, folders)

    def evidence_prompts(self, per_skill: int) -> list[tuple[str, str, str]]:
        return learning.evidence_prompts(self.conn, per_skill)

    def field_counts(self, term: str, folders: list[str]
                     ) -> dict[str, tuple[tuple[int, ...], tuple[int, ...]]]:
        width = len(FIELDS)
        rows = select_in(self.conn, f"SELECT d.folder, {_P_TFS}, {_D_LENS} FROM postings p "
                         f" JOIN docs d ON d.id = p.doc "
                         f"WHERE p.term = ? AND d.folder IN ({KEYS})", folders, [term])
        return {row[0]: (tuple(row[1:1 + width]), tuple(row[1 + width:])) for row in rows}
