"""Many rows in one INSERT: ``VALUES (?, ...), (?, ...)`` with every value bound.

One statement is one step in aiosqlite's thread, so the GIL is released and retaken once
per statement, not once per row as ``executemany`` does (each retake can wait a 5 ms
switch interval while the event loop is busy). Values are bound as they are: no JSON
array for SQLite to parse and, for a trace, its whole body re-render.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from typing import Final

ROWS_PER_STATEMENT: Final = 32
"""Rows per statement: few statement texts to prepare and cache, few round trips."""


def insert_statements(
    head: str, rows: Sequence[Sequence[object]]
) -> Iterator[tuple[str, list[object]]]:
    """``(sql, parameters)`` for ``rows``, ``ROWS_PER_STATEMENT`` rows at a time.

    ``head`` is everything before ``VALUES`` (``INSERT INTO t (a, b)``); every row has
    one value per column, in ``head``'s order.
    """
    for start in range(0, len(rows), ROWS_PER_STATEMENT):
        part = rows[start : start + ROWS_PER_STATEMENT]
        yield _sql(head, len(part[0]), len(part)), [value for row in part for value in row]


@functools.lru_cache(maxsize=256)
def _sql(head: str, columns: int, rows: int) -> str:
    row = "(" + ", ".join("?" * columns) + ")"
    return f"{head} VALUES {', '.join([row] * rows)}"
