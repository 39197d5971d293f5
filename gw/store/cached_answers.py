"""The ``cached_answers`` table: the response cache's answers at rest (version 15).

One row per cache key (a SHA-256 of the canonical request and its scope: nothing of the
request in the clear), with when it expires (wall clock) and the answer sealed to the
vault identity (gw/vault/content_seal.py). The gateway keeps the hot entries in memory
(gw/execution/response_cache.py); these rows let a restarted gateway serve what it kept
before. Expired rows go with ``expire``; the gateway bounds the table by
``cache.max_bytes``, dropping the rows that expire first.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Final

import aiosqlite

UPSERT: Final = (
    "INSERT INTO cached_answers (key, expires_at, size, entry) VALUES (?, ?, ?, ?)"
    " ON CONFLICT (key) DO UPDATE SET expires_at = excluded.expires_at,"
    " size = excluded.size, entry = excluded.entry"
)
SELECT_ENTRY: Final = "SELECT entry FROM cached_answers WHERE key = ? AND expires_at > ?"
SELECT_KEYS: Final = "SELECT key, expires_at, size FROM cached_answers WHERE expires_at > ?"
DELETE_KEY: Final = "DELETE FROM cached_answers WHERE key = ?"
EXPIRE: Final = "DELETE FROM cached_answers WHERE expires_at <= ?"
Transaction = Callable[[], AbstractAsyncContextManager[None]]
KeyRow = tuple[str, float, int]  # key, expires_at (wall), size


def key_rows(rows: Sequence[Sequence[object]]) -> list[KeyRow]:
    return [(str(row[0]), float(row[1]), int(row[2])) for row in rows]  # type: ignore[arg-type,call-overload]


class CachedAnswers:
    """The table on the SQLite store's connection, its lock and its transactions."""

    def __init__(
        self,
        conn: Callable[[], aiosqlite.Connection],
        lock: AbstractAsyncContextManager[object],
        transaction: Transaction,
    ) -> None:
        self._conn = conn  # read at each use: the store reopens a database that vanished
        self._lock = lock
        self._transaction = transaction

    async def keys(self, *, now: float) -> list[KeyRow]:
        """Every unexpired row's key, expiry and size."""
        async with self._lock:
            rows = await self._conn().execute_fetchall(SELECT_KEYS, (now,))
        return key_rows(list(rows))

    async def get(self, key: str, *, now: float) -> bytes | None:
        """The sealed answer kept under ``key``, unless it expired."""
        async with self._lock:
            rows = list(await self._conn().execute_fetchall(SELECT_ENTRY, (key, now)))
        return bytes(rows[0][0]) if rows else None

    async def put_many(self, rows: Sequence[tuple[str, float, bytes]]) -> None:
        """Keep each (key, expires_at, sealed entry), replacing a key's row, in one
        transaction."""
        async with self._transaction():
            await self._conn().executemany(
                UPSERT, [(key, expires, len(entry), entry) for key, expires, entry in rows]
            )

    async def delete(self, keys: Sequence[str]) -> None:
        async with self._transaction():
            await self._conn().executemany(DELETE_KEY, [(key,) for key in keys])

    async def expire(self, *, now: float) -> int:
        """Delete the rows whose time ran out; how many."""
        async with self._transaction():
            cursor = await self._conn().execute(EXPIRE, (now,))
            return cursor.rowcount
