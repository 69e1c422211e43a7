"""Ranking: BM25F over a skill's fields, boosted by usage and success rate.

The same code scores the derived index and the in-memory corpus built straight
from the files: both hand it the same integers (document count, field lengths,
term frequencies) and it sums in one fixed order, so the results are identical
with and without the index.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from gitvault.retrieval.documents import FIELDS, DocInfo, Document

# name and trigger weigh most, then description, tags and body (SPEC §4.1).
WEIGHTS = {"name": 3.0, "trigger": 3.0, "description": 2.0, "tags": 1.5, "body": 1.0}
# Length normalisation per field: short fields barely, the body fully.
LENGTH_B = {"name": 0.3, "trigger": 0.5, "description": 0.6, "tags": 0.3, "body": 0.75}
K1 = 1.2
_W = tuple(WEIGHTS[f] for f in FIELDS)
_B = tuple(LENGTH_B[f] for f in FIELDS)
RETURNED_STATES = ("active", "stale")



@dataclass(frozen=True)
class Hit:
    name: str
    version: int
    state: str
    kind: str
    description: str
    folder: str
    score: float  # BM25F times the usage and success boost
    relevance: float  # BM25F alone


# (folder, state, weighted term frequency) of a document holding a term
Posting = tuple[str, str, float]


def weighted_tf(counts: tuple[int, ...], lengths: tuple[int, ...],
                averages: tuple[float, ...]) -> float:
    """BM25F's pseudo term frequency: each field's count, weighted and normalised by
    the field's length against its average. The index computes the same expression
    in SQL (:func:`weighted_tf_sql`), operation for operation."""
    weighted = 0.0
    for i, tf in enumerate(counts):
        if tf:  # a zero count adds exactly 0.0, as it does in SQL
            weighted += _W[i] * tf / (1.0 - _B[i] + _B[i] * (lengths[i] / (averages[i] or 1.0)))
    return weighted


def weighted_tf_sql(averages: tuple[float, ...], counts: str = "p.t", lengths: str = "d.l"
                    ) -> tuple[str, list[float]]:
    """:func:`weighted_tf` as an SQL expression over columns ``p.t0..`` and ``d.l0..``,
    with its parameters."""
    parts, params = [], []
    for i, avg in enumerate(averages):
        parts.append(f"(? * {counts}{i} / (1.0 - ? + ? * ({lengths}{i} / ?)))")
        params += [_W[i], _B[i], _B[i], avg or 1.0]
    return " + ".join(parts), params


class Corpus(Protocol):
    """What the ranker reads: the derived index, or documents held in memory."""

    def totals(self) -> tuple[int, tuple[int, ...]]:
        """(number of documents, total terms per field)."""

    def postings(self, term: str, averages: tuple[float, ...]) -> list[Posting]:
        """Every document holding ``term``, with its weighted term frequency."""

    def infos(self, folders: Iterable[str]) -> dict[str, DocInfo]:
        """DocInfo of the given folders."""


class MemoryCorpus:
    """Documents read from the files just now (no index)."""

    def __init__(self, docs: Iterable[Document]) -> None:
        self.docs = {d.folder: d for d in docs}
        self._counts: dict[str, list[tuple[Document, tuple[int, ...]]]] = {}
        for doc in self.docs.values():
            for term, counts in doc.counts.items():
                self._counts.setdefault(term, []).append((doc, counts))

    def totals(self) -> tuple[int, tuple[int, ...]]:
        sums = tuple(sum(d.lengths[i] for d in self.docs.values()) for i in range(len(FIELDS)))
        return len(self.docs), sums

    def postings(self, term: str, averages: tuple[float, ...]) -> list[Posting]:
        return [(doc.folder, doc.state, weighted_tf(counts, doc.lengths, averages))
                for doc, counts in self._counts.get(term, [])]

    def infos(self, folders: Iterable[str]) -> dict[str, DocInfo]:
        found = (self.docs[f] for f in folders)
        return {d.folder: d for d in found}  # a Document is a DocInfo


def boost(stats: Mapping[str, int] | None) -> float:
    """Usage adds up to about a quarter; the smoothed success rate scales by 0.8-1.2."""
    if not stats:
        return 1.0
    usage = max(0, int(stats.get("usage", 0)))
    success = max(0, int(stats.get("success", 0)))
    failure = max(0, int(stats.get("failure", 0)))
    rate = (success + 1) / (success + failure + 2)
    return (1.0 + 0.05 * math.log1p(usage)) * (0.8 + 0.4 * rate)


def rank(corpus: Corpus, terms: list[str], stats: Mapping[str, Mapping[str, int]] | None = None,
         limit: int | None = None) -> tuple[list[Hit], dict[str, float]]:
    """Score every returnable skill holding at least one of ``terms`` (sorted, distinct).

    Returns the best ``limit`` hits (all when None) -- active before stale, then by
    score, then by folder -- and the score of every match by folder. ``stats`` maps
    a folder (a skill's name) to its usage, success and failure counts."""
    count, totals = corpus.totals()
    if count == 0 or not terms:
        return [], {}
    averages = tuple(t / count for t in totals)
    matched: dict[str, list[Any]] = {}  # folder -> [state, relevance]
    for term in terms:  # sorted: every corpus sums in the same order
        postings = corpus.postings(term, averages)
        df = len(postings)
        idf = math.log(1.0 + (count - df + 0.5) / (df + 0.5))
        for folder, state, weighted in postings:
            if state not in RETURNED_STATES:
                continue
            part = idf * weighted / (K1 + weighted)
            entry = matched.get(folder)
            if entry is None:
                matched[folder] = [state, part]
            else:
                entry[1] += part
    scored = sorted((state != "active", -relevance * boost((stats or {}).get(folder)), folder,
                     relevance) for folder, (state, relevance) in matched.items())
    scores = {folder: -neg for _, neg, folder, _ in scored}
    top = scored if limit is None else scored[:limit]
    infos = corpus.infos(folder for _, _, folder, _ in top)
    hits = [Hit(i.name, i.version, i.state, i.kind, i.description, folder, -neg, relevance)
            for _, neg, folder, relevance in top for i in [infos[folder]]]
    return hits, scores
