"""Retrieval: tokenisation, BM25F ranking with usage and success boosts, the derived
SQLite index under ``.git/gitvault/``, and the context block (SPEC §4.1).

- :func:`rank_skills` ranks the skill folders for a query (index or files: the
  same answer), :func:`refresh_index` brings the index up to date;
- :func:`build_context` assembles the ``### RELEVANT SKILLS`` and
  ``Available helper functions:`` blocks within token budgets;
- :func:`tokenize` is what both documents and queries go through.

This package reads skill files and the cache, never the Vault; the caller passes the
usage counts it folded from the logs. Imports: ``skills`` (the SKILL.md model).
"""
