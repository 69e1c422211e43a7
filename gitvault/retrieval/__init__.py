"""Retrieval: tokenisation, BM25F ranking with usage and success boosts, learning
from outcomes, the derived SQLite index under ``.git/gitvault/``, optional dense
retrieval, and the context block (SPEC §4.1).

- :func:`rank_skills` ranks the skill folders for a query (index or files: the
  same answer), :func:`refresh_index` brings the index up to date;
- :mod:`learning` folds the ``events`` log (every node's files) into the index:
  successful injections' prompts become an ``evidence`` field of their skills,
  failed ones weigh against; :mod:`embed` is the optional dense side, fused with the
  lexical score;
- :func:`build_context` assembles the ``### RELEVANT SKILLS`` and
  ``Available helper functions:`` blocks within token budgets;
- :func:`tokenize` is what both documents and queries go through.

This package reads skill files, the ``events`` log and the cache, never the Vault
(``inject`` takes the parts of one it needs). Imports: ``core`` (records, git),
``skills`` (the SKILL.md model).
"""
