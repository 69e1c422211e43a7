"""Retrieval: tokenisation, BM25F ranking with usage and success boosts, the derived
SQLite index under ``.git/gitvault/``, and the context block (SPEC §4.1).

- :func:`rank_skills` ranks the skill folders for a query (index or files: the
  same answer), :func:`refresh_index` brings the index up to date;
- :func:`build_context` assembles the ``### RELEVANT SKILLS`` and
  ``Available helper functions:`` blocks within token budgets;
- :func:`tokenize` is what both documents and queries go through.

Layer 2: this package reads skill files and the cache, never the Vault; the
caller passes the usage counts it folded from the logs.
"""

from __future__ import annotations

from gitvault.search.context import (
    HELPERS_HEADER,
    MIN_BUDGET,
    SKILLS_HEADER,
    Candidate,
    Context,
    build_context,
    code_chunks,
    count_tokens,
)
from gitvault.search.documents import CODE_FILE, FIELDS
from gitvault.search.engine import Ranking, rank_from_files, rank_skills, refresh_index
from gitvault.search.index import INDEX_FILE, Refresh
from gitvault.search.rank import WEIGHTS, Hit, boost
from gitvault.search.tokens import query_terms, tokenize

__all__ = [
    "CODE_FILE", "FIELDS", "HELPERS_HEADER", "INDEX_FILE", "MIN_BUDGET", "SKILLS_HEADER",
    "WEIGHTS", "Candidate", "Context", "Hit", "Ranking", "Refresh", "boost", "build_context",
    "code_chunks", "count_tokens", "query_terms", "rank_from_files", "rank_skills",
    "refresh_index", "tokenize",
]
