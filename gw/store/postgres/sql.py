"""SQL text shared with the SQLite store uses ``?`` placeholders; PostgreSQL numbers them.

``numbered`` turns each ``?`` into ``$1``, ``$2``, ... in order. gw's statements never
put a ``?`` inside a string literal or an identifier, so no SQL parsing is needed; the
result is cached, as the same few texts are numbered again and again.
"""

from __future__ import annotations

import functools
import itertools


@functools.lru_cache(maxsize=512)
def numbered(sql: str) -> str:
    """``sql`` with its ``?`` placeholders as ``$1``, ``$2``, ..."""
    counter = itertools.count(1)
    parts = sql.split("?")
    return "".join(
        part + (f"${next(counter)}" if index < len(parts) - 1 else "")
        for index, part in enumerate(parts)
    )
