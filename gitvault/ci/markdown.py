"""Untrusted text in GitHub markdown (job summaries, issue bodies).

A vault may come from an untrusted clone, so a skill name or a run's notes may hold
markdown, HTML, links, ``@mentions``, ``#refs`` or a secret. :func:`code` shows such
text only inside a code span, where GitHub renders nothing of it (no tag, link,
autolink, mention or reference), after redacting secrets (:mod:`gitvault.core.redact`)
and folding it onto one line; :func:`cell` does the same for a table cell, where a
``|`` must be escaped even inside a code span. gitvault's own text never needs it.
"""

from __future__ import annotations

import re

from gitvault.core.redact import redact

LIMIT = 200  # characters of untrusted text shown in one place
_BLANKS = re.compile(r"[\s\x00-\x1f\x7f-\x9f\u2028\u2029\u200b-\u200f\u202a-\u202e\u2066-\u2069]+")
_TICKS = re.compile(r"`+")


def plain(text: object, limit: int = LIMIT) -> str:
    """``text`` redacted, on one line (control, bidi and zero-width characters as
    spaces), at most ``limit`` characters (cut with an ellipsis)."""
    folded = _BLANKS.sub(" ", redact(str(text))).strip()
    return folded if len(folded) <= limit else folded[: limit - 1].rstrip() + "…"


def code(text: object, limit: int = LIMIT) -> str:
    """``text`` as an inline code span: its fence is longer than any run of backticks
    inside, padded with a space each side (which CommonMark strips)."""
    shown = plain(text, limit)
    if not shown:
        return "(empty)"
    longest = max((len(m.group()) for m in _TICKS.finditer(shown)), default=0)
    fence = "`" * (longest + 1)
    return f"{fence} {shown} {fence}"


def cell(text: object, limit: int = LIMIT) -> str:
    """:func:`code` for a GFM table cell (``|`` escaped: tables split on it first)."""
    return code(text, limit).replace("|", "\\|")


def table(header: list[str], rows: list[list[str]], align: str = "") -> str:
    """A GFM table of cells that are already safe (numbers, gitvault's words, or
    :func:`cell`); ``align`` has one letter per column, ``r`` for right."""
    marks = ["---:" if align[i:i + 1] == "r" else "---" for i in range(len(header))]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(marks) + " |"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)
