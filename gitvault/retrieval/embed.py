"""Optional dense retrieval (the ``[embed]`` extra), fused with the lexical score.

Off unless the clone's own git config (``.git/config``) names a model: ``git config gitvault.embed-model
NAME_OR_PATH``. A plain value is a sentence-transformers model name or folder, loaded
with ``local_files_only`` and the hub offline: a model that is not already on this
machine is an error, never a download. ``PROVIDER:SPEC`` picks another registered
provider; ``hash:DIM`` is the built-in one, a deterministic bag-of-words hashing
embedding with no model behind it (no semantics: it exercises fusion in tests).

Document vectors are cached in the search index by content hash, so a query embeds
only itself (and the skills that changed). With history, a skill's dense score also
counts how close the query is to the prompts it succeeded with (their vectors cached
by injection id).
"""

from __future__ import annotations

import hashlib
import math
import os
import sqlite3
import struct
from collections.abc import Callable, Iterable
from typing import Protocol

from gitvault.errors import InvalidInput
from gitvault.retrieval.documents import DocInfo
from gitvault.retrieval.sql import KEYS, select_in, writing
from gitvault.retrieval.tokens import tokenize

CONFIG_KEY = "gitvault.embed-model"
WEIGHT = 0.8  # the dense share of a fused score (the lexical one is 1 - WEIGHT); MetaTool dev:
# warm (evidence prompts included) MRR@5 0.782 at 0.5, 0.806 at 0.8, all-MiniLM-L6-v2
DENSE_CANDIDATES = 50  # best dense matches added to the lexical ones
EVIDENCE_PROMPTS = 16  # a skill's latest successful prompts compared with a query


class Embedder(Protocol):
    """Turns texts into vectors of one length; ``id`` names model and settings."""

    id: str

    def encode(self, texts: list[str]) -> list[list[float]]: ...


PROVIDERS: dict[str, Callable[[str], Embedder]] = {}


def register(name: str, factory: Callable[[str], Embedder]) -> None:
    """Make ``NAME:SPEC`` in ``gitvault.embed-model`` build ``factory(SPEC)``."""
    PROVIDERS[name] = factory


_LOADED: dict[str, Embedder] = {}


def load(setting: str) -> Embedder:
    """The embedder a ``gitvault.embed-model`` value names (loaded once a process)."""
    setting = setting.strip()
    if setting not in _LOADED:
        provider, _, spec = setting.partition(":")
        factory = PROVIDERS[provider] if spec and provider in PROVIDERS \
            else PROVIDERS["sentence-transformers"]
        _LOADED[setting] = factory(spec if spec and provider in PROVIDERS else setting)
    return _LOADED[setting]


class HashEmbedder:
    """Each term hashed to one of ``dim`` signed slots, the vector L2-normalised."""

    def __init__(self, spec: str) -> None:
        try:
            self.dim = int(spec)
        except ValueError:
            raise InvalidInput(f"{CONFIG_KEY} hash:{spec}: give a dimension, e.g. hash:256") from None
        if not 8 <= self.dim <= 4096:
            raise InvalidInput(f"{CONFIG_KEY} hash:{spec}: the dimension must be 8 to 4096")
        self.id = f"hash:{self.dim}"

    def encode(self, texts: list[str]) -> list[list[float]]:
        vectors = []
        for text in texts:
            vector = [0.0] * self.dim
            for term in tokenize(text):
                digest = hashlib.blake2b(term.encode("utf-8"), digest_size=8).digest()
                slot = int.from_bytes(digest[:4], "little") % self.dim
                vector[slot] += 1.0 if digest[4] & 1 else -1.0
            vectors.append(_normalised(vector))
        return vectors


class SentenceTransformerEmbedder:
    """A local sentence-transformers model (``pip install 'gitvault[embed]'``)."""

    def __init__(self, spec: str) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never a download at run time
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError:
            raise InvalidInput(f"{CONFIG_KEY} is set but sentence-transformers is not "
                               "installed: pip install 'gitvault[embed]'") from None
        try:
            self.model = SentenceTransformer(spec, local_files_only=True)
        except Exception as exc:  # the library raises many kinds for a missing model
            raise InvalidInput(f"{CONFIG_KEY} {spec!r}: no such local model ({exc}); "
                               "gitvault never downloads one") from None
        self.id = f"st:{spec}"

    def encode(self, texts: list[str]) -> list[list[float]]:
        vectors = self.model.encode(texts, normalize_embeddings=True, show_progress_bar=False)
        return [[float(x) for x in v] for v in vectors]


register("hash", HashEmbedder)
register("sentence-transformers", SentenceTransformerEmbedder)


def _normalised(vector: list[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in vector))
    return [x / norm for x in vector] if norm else vector


def pack(vector: list[float]) -> bytes:
    return struct.pack(f"<{len(vector)}f", *vector)


def unpack(data: bytes) -> list[float]:
    return list(struct.unpack(f"<{len(data) // 4}f", data))


def doc_text(name: str, description: str) -> str:
    return f"{name.replace('-', ' ')}: {description}"


def cosines(query: list[float], vectors: Iterable[tuple[str, list[float]]]) -> dict[str, float]:
    return {key: sum(a * b for a, b in zip(query, vector, strict=False))
            for key, vector in vectors}


def fuse(lexical: dict[str, float], dense: dict[str, float], weight: float = WEIGHT
         ) -> dict[str, float]:
    """Lexical relevance (scaled to the best one) and cosine similarity (below 0 as 0),
    mixed ``1 - weight`` to ``weight``, over the lexical matches and the best
    ``DENSE_CANDIDATES`` dense ones."""
    best = max(lexical.values(), default=0.0) or 1.0
    wanted = set(lexical) | set(sorted(dense, key=lambda k: (-dense[k], k))[:DENSE_CANDIDATES])
    fused = {key: (1.0 - weight) * lexical.get(key, 0.0) / best
             + weight * max(0.0, dense.get(key, 0.0)) for key in wanted}
    return {key: value for key, value in fused.items() if value > 0}


# -- vectors, cached in the search index: documents by content hash, prompts by id -----
VECTOR_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS vectors (folder TEXT PRIMARY KEY, model TEXT NOT NULL, "
    "blob TEXT NOT NULL, vector BLOB NOT NULL) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS prompt_vectors (injection TEXT NOT NULL, model TEXT NOT NULL, "
    "vector BLOB NOT NULL, PRIMARY KEY (injection, model)) WITHOUT ROWID")
VECTOR_TABLES = ("vectors", "prompt_vectors")


class Documents(Protocol):
    def every_info(self) -> list[tuple[DocInfo, str]]: ...
    def evidence_prompts(self, per_skill: int) -> list[tuple[str, str, str]]: ...


def dense_scores(corpus: Documents, embedder: Embedder, query: str,
                 conn: sqlite3.Connection | None = None) -> dict[str, float]:
    """Cosine similarity of ``query`` to every returnable document: to its name and
    description, averaged with the best match among the prompts of its last
    ``EVIDENCE_PROMPTS`` successful injections when it has any (learning from
    outcomes, dense). Vectors come from ``conn``'s cache when it has them (documents
    whose content hash is unchanged, prompts by injection id); the others are embedded
    and stored there (in a write transaction of their own)."""
    docs = corpus.every_info()
    cached: dict[str, tuple[str, bytes]] = {}
    if conn is not None:
        rows = conn.execute("SELECT folder, blob, vector FROM vectors WHERE model = ?",
                            (embedder.id,))
        cached = {folder: (blob, vector) for folder, blob, vector in rows}
    missing = [(info, blob) for info, blob in docs
               if not blob or cached.get(info.folder, ("", b""))[0] != blob]
    fresh = embedder.encode([doc_text(i.name, i.description) for i, _ in missing]) if missing else []
    if conn is not None and missing:
        with writing(conn):
            conn.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?)",
                             [(i.folder, embedder.id, blob, pack(v))
                              for (i, blob), v in zip(missing, fresh, strict=True)])
    new = {i.folder: v for (i, _), v in zip(missing, fresh, strict=True)}
    vectors = [(i.folder, new[i.folder] if i.folder in new else unpack(cached[i.folder][1]))
               for i, _ in docs]
    wanted = embedder.encode([query])[0]
    scores = cosines(wanted, vectors)
    evidence = [(skill, injection, prompt) for skill, injection, prompt
                in corpus.evidence_prompts(EVIDENCE_PROMPTS) if skill in scores]
    if evidence:
        near = cosines(wanted, _prompt_vectors(conn, embedder,
                                               {i: p for _, i, p in evidence}).items())
        best: dict[str, float] = {}
        for skill, injection, _ in evidence:
            best[skill] = max(best.get(skill, near[injection]), near[injection])
        for skill, found in best.items():
            scores[skill] = (scores[skill] + found) / 2
    return scores


def _prompt_vectors(conn: sqlite3.Connection | None, embedder: Embedder,
                    prompts: dict[str, str]) -> dict[str, list[float]]:
    """injection id -> its prompt's vector, from ``conn``'s cache or embedded now."""
    found: dict[str, list[float]] = {}
    if conn is not None:
        found = {injection: unpack(vector) for injection, vector in select_in(
            conn, f"SELECT injection, vector FROM prompt_vectors WHERE model = ? AND "
            f"injection IN ({KEYS})", sorted(prompts), [embedder.id])}
    missing = sorted(set(prompts) - set(found))
    if missing:
        fresh = embedder.encode([prompts[i] for i in missing])
        found.update(zip(missing, fresh, strict=True))
        if conn is not None:
            with writing(conn):
                conn.executemany("INSERT OR REPLACE INTO prompt_vectors VALUES (?, ?, ?)",
                                 [(i, embedder.id, pack(v))
                                  for i, v in zip(missing, fresh, strict=True)])
    return found
