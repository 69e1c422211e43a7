"""SQLite helpers shared by the search index's modules (index, learning, embed): one
write transaction, and a query over a long list of keys, a chunk of them at a time
(SQLite caps the parameters of one statement)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

CHUNK = 500  # keys per query
KEYS = "{keys}"  # where select_in puts a chunk's placeholders


@contextmanager
def writing(conn: sqlite3.Connection) -> Iterator[None]:
    """A write transaction (``BEGIN IMMEDIATE``, the write lock taken at once):
    committed when the block ends, rolled back when it raises."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def select_in(conn: sqlite3.Connection, sql: str, keys: Iterable[Any],
              before: Sequence[Any] = ()) -> Iterator[Any]:
    """The rows of ``sql`` for every one of ``keys``: ``sql`` holds ``{keys}`` where a
    chunk's placeholders go (``WHERE id IN ({keys})``); ``before`` are the parameters
    that come ahead of them."""
    values = list(keys)
    for start in range(0, len(values), CHUNK):
        chunk = values[start:start + CHUNK]
        yield from conn.execute(sql.replace(KEYS, ", ".join("?" * len(chunk))),
                                [*before, *chunk])
