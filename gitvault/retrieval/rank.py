"""Ranking: BM25F over a skill's fields, boosted by usage and success rate.

The same code scores the derived index and the in-memory corpus built straight
from the files: both hand it the same integers (document count, field lengths,
term frequencies) and it sums in one fixed order, so the results are identical
with and without the index.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from gitvault.retrieval import embed, learning
from gitvault.retrieval.documents import FIELDS, DocInfo, Document, SkillInfo

# name and trigger weigh most, then description, tags and body (SPEC §4.1). Tuned on
# MetaTool's dev split (bench/bench_retrieval.py): a skill's name says most.
WEIGHTS = {"name": 9.0, "trigger": 3.0, "description": 2.0, "tags": 1.5, "body": 1.0}
# Length normalisation per field: short fields barely, the body fully.
LENGTH_B = {"name": 0.3, "trigger": 0.5, "description": 0.5, "tags": 0.3, "body": 0.75}
# Saturation: high, so that a term met in several short fields keeps adding (MetaTool
# dev MRR@5 0.58 at 1.2, 0.62 at 8; the labelled set in tests/ is unchanged).
K1 = 8.0
_W = tuple(WEIGHTS[f] for f in FIELDS)
_B = tuple(LENGTH_B[f] for f in FIELDS)
RETURNED_STATES = ("active", "stale")



# The evidence field (prompts of injections that succeeded, SPEC §4.1): weighted below
# name and trigger; failed prompts take their part back from a term's score.
EVIDENCE_WEIGHT = 2.0
EVIDENCE_B = 0.5
FAILURE_WEIGHT = 1.0
EVIDENCE_FIELD, FAILURE_FIELD = "evidence", "failures"


@dataclass(frozen=True)
class TermScore:
    """What one query term added to a hit: its score, split over the fields it was
    found in (``evidence`` for successful prompts), and what failed prompts took back."""

    term: str
    score: float
    fields: tuple[tuple[str, float], ...]
    against: float = 0.0


@dataclass(frozen=True)
class Hit(SkillInfo):
    score: float  # BM25F times the usage and success boost
    relevance: float  # BM25F alone
    boost: float = 1.0  # the usage and success factor
    explain: tuple[TermScore, ...] | None = None  # filled when asked for
    dense: float | None = None  # cosine similarity, when dense retrieval is on


# (folder, state, weighted term frequency) of a document holding a term
Posting = tuple[str, str, float]
# (folder, state, pos, neg, pos_len, neg_len): a document's evidence for a term
Evidence = tuple[str, str, int, int, int, int]


def weighted_tf(counts: tuple[int, ...], lengths: tuple[int, ...],
                averages: tuple[float, ...]) -> float:
    """BM25F's pseudo term frequency: each field's count, weighted and normalised by
    the field's length against its average. The index computes the same expression
    in SQL (:func:`weighted_tf_sql`), operation for operation."""
    weighted = 0.0
    for part in field_parts(counts, lengths, averages):
        weighted += part
    return weighted


def field_parts(counts: tuple[int, ...], lengths: tuple[int, ...],
                averages: tuple[float, ...]) -> list[float]:
    """Each field's share of :func:`weighted_tf` (0.0 where the term is absent)."""
    return [_W[i] * tf / (1.0 - _B[i] + _B[i] * (lengths[i] / (averages[i] or 1.0))) if tf
            else 0.0 for i, tf in enumerate(counts)]


def evidence_tf(count: int, length: int, average: float) -> float:
    if not count:
        return 0.0
    return EVIDENCE_WEIGHT * count / (1.0 - EVIDENCE_B + EVIDENCE_B * (length / (average or 1.0)))


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

    def every_info(self) -> list[tuple[DocInfo, str]]:
        """Every returnable document and its content hash ("" when unknown)."""

    def evidence_totals(self) -> tuple[int, int]:
        """Total evidence terms (successful, failed) over the documents."""

    def evidence(self, term: str) -> list[Evidence]:
        """Every document with learned evidence for ``term``."""

    def learned(self, folders: Iterable[str]) -> dict[str, dict[str, int]]:
        """usage / success / failure of the given folders, from the events log."""

    def evidence_prompts(self, per_skill: int) -> list[tuple[str, str, str]]:
        """(skill, injection id, prompt) of each skill's last successful injections."""

    def field_counts(self, term: str, folders: list[str]
                     ) -> dict[str, tuple[tuple[int, ...], tuple[int, ...]]]:
        """(counts per field, lengths per field) of ``term`` in the given folders."""


class MemoryCorpus:
    """Documents read from the files just now (no index), and the events fold in a
    database of its own."""

    def __init__(self, docs: Iterable[Document], learning: sqlite3.Connection | None = None
                 ) -> None:
        self.docs = {d.folder: d for d in docs}
        self.learning = learning
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

    def every_info(self) -> list[tuple[DocInfo, str]]:
        return [(d, "") for d in self.docs.values() if d.state in RETURNED_STATES]

    def evidence_totals(self) -> tuple[int, int]:
        if self.learning is None:
            return 0, 0
        known = [v for k, v in learning.lengths(self.learning).items() if k in self.docs]
        return sum(p for p, _ in known), sum(n for _, n in known)

    def evidence(self, term: str) -> list[Evidence]:
        if self.learning is None:
            return []
        return [(skill, self.docs[skill].state, pos, neg, pl, nl)
                for skill, pos, neg, pl, nl in learning.evidence_rows(self.learning, term)
                if skill in self.docs]

    def learned(self, folders: Iterable[str]) -> dict[str, dict[str, int]]:
        return learning.stats(self.learning, folders) if self.learning is not None else {}

    def evidence_prompts(self, per_skill: int) -> list[tuple[str, str, str]]:
        if self.learning is None:
            return []
        return learning.evidence_prompts(self.learning, per_skill)

    def field_counts(self, term: str, folders: list[str]
                     ) -> dict[str, tuple[tuple[int, ...], tuple[int, ...]]]:
        wanted = set(folders)
        return {doc.folder: (counts, doc.lengths) for doc, counts in self._counts.get(term, [])
                if doc.folder in wanted}


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
         limit: int | None = None, explain: bool = False,
         dense: Mapping[str, float] | None = None) -> tuple[list[Hit], dict[str, float]]:
    """Score every returnable skill holding at least one of ``terms`` (sorted, distinct)
    in its fields or its evidence.

    Returns the best ``limit`` hits (all when None) -- active before stale, then by
    score, then by folder -- and the score of every match by folder. ``stats`` maps
    a folder (a skill's name) to its usage, success and failure counts; None takes
    them from the corpus (the events log). ``explain`` fills each hit's ``explain``.
    ``dense`` (folder -> cosine similarity to the query, every returnable document)
    is fused with the lexical relevance (:func:`embed.fuse`)."""
    count, totals = corpus.totals()
    if count == 0 or not terms:
        return [], {}
    averages = tuple(t / count for t in totals)
    pos_total, neg_total = corpus.evidence_totals()
    avg_pos, avg_neg = pos_total / count, neg_total / count
    matched: dict[str, list[Any]] = {}  # folder -> [state, relevance, (term parts)...]
    for term in terms:  # sorted: every corpus sums in the same order
        rows: dict[str, list[Any]] = {f: [st, w, 0.0] for f, st, w in corpus.postings(term, averages)}
        for folder, state, pos, neg, pos_len, neg_len in corpus.evidence(term):
            entry = rows.setdefault(folder, [state, 0.0, 0.0])
            entry[1] += evidence_tf(pos, pos_len, avg_pos)
            entry[2] += evidence_tf(neg, neg_len, avg_neg)
        df = sum(1 for entry in rows.values() if entry[1] > 0)
        idf = math.log(1.0 + (count - df + 0.5) / (df + 0.5))
        for folder, (state, weighted, against) in rows.items():
            if state not in RETURNED_STATES or weighted <= 0:
                continue
            part = idf * (weighted / (K1 + weighted) - FAILURE_WEIGHT * against / (K1 + against))
            part = max(0.0, part)
            found = matched.get(folder)
            if found is None:
                found = matched[folder] = [state, 0.0]
            found[1] += part
            if explain:
                found.append((term, idf, weighted, against, part))
    matched = {f: e for f, e in matched.items() if e[1] > 0}
    if dense is not None:
        fused = embed.fuse({f: e[1] for f, e in matched.items()}, dict(dense))
        states = {f: i.state for f, i in corpus.infos(set(fused) - set(matched)).items()}
        for folder, value in fused.items():
            entry = matched.get(folder) or matched.setdefault(folder, [states[folder], 0.0])
            entry[1] = value
    if stats is None:
        stats = corpus.learned(matched)
    boosts = {folder: boost(stats.get(folder)) for folder in matched}
    scored = sorted((entry[0] != "active", -entry[1] * boosts[folder], folder, entry[1])
                    for folder, entry in matched.items())
    scores = {folder: -neg for _, neg, folder, _ in scored}
    top = scored if limit is None else scored[:limit]
    infos = corpus.infos(folder for _, _, folder, _ in top)
    why = _explain(corpus, averages, [f for _, _, f, _ in top], matched) if explain else {}
    hits = [Hit(i.name, i.version, i.state, i.kind, i.description, folder, -neg, relevance,
                boosts[folder], why.get(folder), None if dense is None else dense.get(folder))
            for _, neg, folder, relevance in top for i in [infos[folder]]]
    return hits, scores


def _explain(corpus: Corpus, averages: tuple[float, ...], folders: list[str],
             matched: dict[str, list[Any]]) -> dict[str, tuple[TermScore, ...]]:
    """Each top folder's term parts, split over fields in proportion to each field's
    share of the term's weighted frequency."""
    by_term: dict[str, list[str]] = {}
    for folder in folders:
        for term, *_ in matched[folder][2:]:  # (a dense-only match has none)
            by_term.setdefault(term, []).append(folder)
    counts = {term: corpus.field_counts(term, wanted) for term, wanted in by_term.items()}
    result: dict[str, tuple[TermScore, ...]] = {}
    for folder in folders:
        parts = []
        for term, idf, weighted, against, part in matched[folder][2:]:
            found = counts[term].get(folder)
            shares = field_parts(*found, averages) if found else [0.0] * len(FIELDS)
            fields = [(name, share) for name, share in zip(FIELDS, shares, strict=True) if share]
            rest = weighted - sum(shares)
            if rest > 1e-12:
                fields.append((EVIDENCE_FIELD, rest))
            gross = idf * weighted / (K1 + weighted)
            split = tuple((name, gross * share / weighted) for name, share in fields)
            parts.append(TermScore(term, part, split, gross - part if against > 0 else 0.0))
        parts.sort(key=lambda p: (-p.score, p.term))
        result[folder] = tuple(parts)
    return result
