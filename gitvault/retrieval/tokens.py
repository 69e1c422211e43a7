"""Tokenisation shared by documents and queries: the same text always gives the
same terms, so a query word meets a skill word whatever their spelling.

- punctuation and ``snake_case`` / ``kebab-case`` separators split words;
- ``camelCase`` and ``HTTPServer`` split at their humps (the whole word is kept
  too, so ``PostgreSQL`` still meets ``postgresql``);
- letters followed by digits (``python3``, ``utf8``) also give the letters alone;
- inflections and derivations fold onto one stem (Porter's algorithm:
  ``queries``/``query``, ``booking``/``bookings``/``book``, ``recommendations``/
  ``recommend``), with a short list of words kept as they are (``APIs``/``api``,
  ``kubernetes``, ``pandas``);
- common English words (request phrasing included: "can you", "I need", "please")
  and one-character pieces are dropped.
"""

from __future__ import annotations

import re
from functools import lru_cache

from gitvault.retrieval.porter import porter

# Bump when the terms a text gives change: the index is rebuilt on a mismatch.
VERSION = "3"

_WORD = re.compile(r"[^\W_]+")
_HUMP = re.compile(r"[A-Z]{2,}s(?![a-z])|[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+[0-9]*|[A-Z]+[0-9]*|[0-9]+")
_LETTERS_DIGITS = re.compile(r"^([a-z]{2,})[0-9]+$")

_STOPWORD_TEXT = """
a about above after again against all also am an and any are as at be been before being
below between both but by can could did do does doing done down during each either etc
every few for from further had has have having he her here hers him his how i if in into
is it its itself just me more most my myself no nor not now of off on once only or other
our ours out over own same she should so some such than that the their theirs them then
there these they this those through to too under until up upon use used uses using very
via was we were what when where whether which while who whom why will with within without
would yes you your yours
may might must shall need needs want wants wanted like please let im ive id dont cant
hi hello thanks thank
"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())

# Words the plural rules would fold onto another word's stem.
_KEEP = {"ios": "ios", "apis": "api", "uris": "uri", "urls": "url", "ids": "id", "prs": "pr",
         "cpus": "cpu", "gpus": "gpu", "aliases": "alias", "statuses": "status",
         "indices": "index", "matrices": "matrix", "data": "data", "series": "series",
         "species": "species", "news": "news", "always": "always", "windows": "windows",
         "kubernetes": "kubernetes", "pandas": "pandas", "analysis": "analysis",
         "analyses": "analysis", "children": "child"}
_KEEP.update({kept: kept for kept in list(_KEEP.values())})  # the singular stays too


def stem(word: str) -> str:
    """The stem of a lower-case word: Porter's algorithm, except for the kept words and
    for words of 3 characters or fewer or with digits. Both sides of a comparison go
    through it, so a stem only needs to be the same for the forms that should meet,
    not a real word."""
    if word in _KEEP:
        return _KEEP[word]
    if len(word) <= 3 or not word.isalpha():
        return word
    return porter(word)


def _pieces(word: str) -> list[str]:
    """Lower-case pieces of one alphanumeric run (camelCase humps split)."""
    if not word.isascii():
        return [word.lower()]
    humps = _HUMP.findall(word)
    lowered = [h.lower() for h in humps]
    if len(lowered) > 1:
        lowered.append(word.lower())  # PostgreSQL -> postgre, sql, postgresql
    return lowered


@lru_cache(maxsize=1 << 16)
def word_terms(word: str) -> tuple[str, ...]:
    """The terms of one alphanumeric run (cached: words repeat a lot)."""
    terms: list[str] = []
    for piece in _pieces(word):
        if len(piece) < 2 or piece in STOPWORDS:
            continue
        if piece.isdigit():
            terms.append(piece)
            continue
        match = _LETTERS_DIGITS.match(piece)
        if match:
            terms.append(piece)
            piece = match.group(1)
            if piece in STOPWORDS:
                continue
        terms.append(stem(piece))
    return tuple(terms)


def tokenize(text: str) -> list[str]:
    """The terms of ``text``, in order, repeats kept (term frequency matters)."""
    terms: list[str] = []
    for word in _WORD.findall(text):
        terms.extend(word_terms(word))
    return terms


def query_terms(text: str) -> list[str]:
    """The distinct terms of a query, sorted (the order scores are summed in)."""
    return sorted(set(tokenize(text)))
