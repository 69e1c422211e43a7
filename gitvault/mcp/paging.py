"""Cursor paging for the list methods (``tools/list``, ``resources/list``,
``skills/list``), as MCP's pagination says: a page holds at most :data:`PAGE_SIZE`
items, ``nextCursor`` is set while more remain, and the client hands it back as
``cursor``.

A cursor names the listing it came from and the key (a name or URI) of the last item
it returned; the next page starts after that key in the listing's sorted order. So a
skill created or deleted between two requests neither repeats nor hides the others.
A cursor this server did not issue for this listing is :class:`InvalidCursor`, which
the server reports as an MCP error (invalid params).
"""

from __future__ import annotations

import base64
import binascii
import json
from bisect import bisect_right
from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")

PAGE_SIZE = 50  # items per page of every listing
_VERSION = 1


class InvalidCursor(ValueError):
    """A cursor that is not one this server issued for the listing asked for."""


def encode(listing: str, after: str) -> str:
    raw = json.dumps({"v": _VERSION, "list": listing, "after": after}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode("utf-8")).decode("ascii").rstrip("=")


def decode(listing: str, cursor: str) -> str:
    """The key after which the next page of ``listing`` starts."""
    shown = cursor if len(cursor) <= 60 else cursor[:57] + "..."
    problem = (f"invalid cursor {shown!r} for {listing}: not a cursor this server issued for it "
               "(ask again without a cursor to start over)")
    try:
        data = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise InvalidCursor(problem) from None
    if not isinstance(data, dict) or data.get("v") != _VERSION or data.get("list") != listing \
            or not isinstance(data.get("after"), str):
        raise InvalidCursor(problem)
    return str(data["after"])


def page(items: Sequence[T], key: Callable[[T], str], cursor: str | None, listing: str,
         size: int | None = None) -> tuple[list[T], str | None]:
    """(this page's items in key order, the next cursor or None). ``size`` defaults to
    :data:`PAGE_SIZE`, read at call time."""
    limit = PAGE_SIZE if size is None else size
    ordered = sorted(items, key=key)
    keys = [key(item) for item in ordered]
    start = 0 if cursor is None else bisect_right(keys, decode(listing, cursor))
    chosen = ordered[start:start + limit]
    more = start + limit < len(ordered)
    return chosen, encode(listing, keys[start + limit - 1]) if more and chosen else None
