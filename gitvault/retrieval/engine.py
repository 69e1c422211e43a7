"""Ranking skills for a query: through the derived index when there is one, else
straight from the files. Both give the same hits; the index is only faster.

The index is rebuilt when it is missing, from an older schema, or corrupt; when
it cannot be used at all (no ``.git`` folder, a read-only cache, a lock held
past the timeout) the files are read directly.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from gitvault.core.records import locked
from gitvault.retrieval import learning
from gitvault.retrieval.documents import load
from gitvault.retrieval.embed import Embedder, dense_scores
from gitvault.retrieval.index import INDEX_FILE, Index, Refresh
from gitvault.retrieval.learning import EventsRefresh
from gitvault.retrieval.listing import list_folders
from gitvault.retrieval.rank import Hit, MemoryCorpus, rank
from gitvault.retrieval.tokens import query_terms

Stats = Mapping[str, Mapping[str, int]]
T = TypeVar("T")


@dataclass
class Ranking:
    """Every returnable skill matching a query, best first."""

    hits: list[Hit]  # the best ones (all of them unless a limit was given)
    scores: dict[str, float] = field(default_factory=dict)  # every match: folder -> score
    warnings: list[str] = field(default_factory=list)  # unreadable skill files, skipped
    indexed: bool = False  # answered by the derived index
    refresh: Refresh | None = None  # what the index refresh did
    rebuilt: bool = False  # the index was corrupt and built again
    events: EventsRefresh | None = None  # what folding the events log did


def rank_skills(skills_dir: Path, query: str, stats: Stats | None = None, *,
                cache_dir: Path | None = None, use_index: bool = True,
                limit: int | None = None, events_dir: Path | None = None,
                explain: bool = False, embedder: Embedder | None = None) -> Ranking:
    """Rank the skills under ``skills_dir`` for ``query``. ``stats`` maps a skill name
    to its ``usage``/``success``/``failure`` counts (None: folded from ``events_dir``,
    the ``logs/events`` folder, whose outcomes also teach the ranking); ``cache_dir``
    is where the index lives (``.git/gitvault/``), None to read the files directly;
    ``limit`` caps the hits described in full (every match is still scored);
    ``explain`` says per hit which fields and terms scored; ``embedder`` turns on
    dense retrieval, fused with the lexical score."""
    terms = query_terms(query)
    if cache_dir is None or not use_index:
        return rank_from_files(skills_dir, terms, stats, limit, events_dir, explain,
                               embedder, query)

    def answer(index: Index) -> Ranking:
        report = index.refresh()
        events = index.refresh_events()
        dense = None if embedder is None else dense_scores(index, embedder, query, index.conn)
        with index.reading():
            hits, scores = rank(index, terms, stats, limit, explain, dense)
            warnings = [*index.warnings(), *index.event_warnings()]
        return Ranking(hits, scores, warnings, True, report, False, events)

    try:
        ranking, rebuilt = _with_index(cache_dir / INDEX_FILE, skills_dir, events_dir, answer)
    except (sqlite3.DatabaseError, OSError):  # busy, still corrupt, or no room for it
        return rank_from_files(skills_dir, terms, stats, limit, events_dir, explain, embedder,
                               query)
    ranking.rebuilt = rebuilt
    return ranking


def rank_from_files(skills_dir: Path, terms: list[str], stats: Stats | None = None,
                    limit: int | None = None, events_dir: Path | None = None,
                    explain: bool = False, embedder: Embedder | None = None,
                    query: str = "") -> Ranking:
    """The same ranking without the index: every skill file read and tokenised, the
    events log folded in memory."""
    loaded = [load(skills_dir, folder) for folder in sorted(list_folders(skills_dir))]
    fold = learning.in_memory(events_dir)
    try:
        corpus = MemoryCorpus((item.doc for item in loaded if item.doc is not None), fold)
        warnings = [item.error for item in loaded if item.error is not None]
        warnings += [str(w) for w in learning.warnings(fold)]
        dense = None if embedder is None else dense_scores(corpus, embedder, query)
        hits, scores = rank(corpus, terms, stats, limit, explain, dense)
    finally:
        fold.close()
    return Ranking(hits, scores, warnings)


def refresh_index(skills_dir: Path, cache_dir: Path, events_dir: Path | None = None) -> Refresh:
    """Bring the index up to date now (building it if missing); what it did."""
    def refreshed(index: Index) -> Refresh:
        report = index.refresh()
        index.refresh_events()
        return report

    return _with_index(cache_dir / INDEX_FILE, skills_dir, events_dir, refreshed)[0]


def _with_index(path: Path, skills_dir: Path, events_dir: Path | None,
                use: Callable[[Index], T]) -> tuple[T, bool]:
    """``use`` the index at ``path``, once more on a new file when it was corrupt:
    (what ``use`` gave, whether the index was rebuilt). A busy or still-corrupt index
    raises its sqlite3.DatabaseError."""
    for attempt in range(2):
        try:
            with Index(path, skills_dir, events_dir) as index:
                return use(index), attempt == 1
        except sqlite3.DatabaseError as exc:
            if _busy(exc) or attempt == 1 or not discard_if_corrupt(path, skills_dir):
                raise
    raise AssertionError("unreachable: the second attempt returns or raises")


def _busy(exc: sqlite3.DatabaseError) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def discard_if_corrupt(path: Path, skills_dir: Path) -> bool:
    """Delete the index file (and its WAL) if it is still unusable once this process
    holds the rebuild lock; True when the caller should try again."""
    try:
        with locked(path.parent / "locks" / "search.lock"):
            try:  # another process may have rebuilt it meanwhile
                with Index(path, skills_dir) as index:
                    row = index.conn.execute("PRAGMA quick_check").fetchone()
                    if row is not None and row[0] == "ok":
                        return True
            except sqlite3.DatabaseError as exc:
                if _busy(exc):
                    return False
            for suffix in ("", "-wal", "-shm", "-journal"):
                try:
                    os.unlink(f"{path}{suffix}")
                except FileNotFoundError:
                    pass
    except OSError:
        return False
    return True
