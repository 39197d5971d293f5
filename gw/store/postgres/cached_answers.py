"""The response cache's answers at rest in PostgreSQL (gw/store/cached_answers.py
documents the table and each call; the statements are SQLite's)."""

from __future__ import annotations

from collections.abc import Sequence

from gw.store.cached_answers import (
    DELETE_KEY,
    EXPIRE,
    SELECT_ENTRY,
    SELECT_KEYS,
    UPSERT,
    KeyRow,
    key_rows,
)
from gw.store.postgres.database import Database, execute_many


class PgCachedAnswers:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def keys(self, *, now: float) -> list[KeyRow]:
        rows = await self._db.fetch(SELECT_KEYS, now)
        return key_rows([tuple(row) for row in rows])

    async def get(self, key: str, *, now: float) -> bytes | None:
        value = await self._db.fetchval(SELECT_ENTRY, key, now)
        return None if value is None else bytes(value)

    async def put_many(self, rows: Sequence[tuple[str, float, bytes]]) -> None:
        async with self._db.transaction() as conn:
            await execute_many(
                conn, UPSERT, [(key, expires, len(entry), entry) for key, expires, entry in rows]
            )

    async def delete(self, keys: Sequence[str]) -> None:
        async with self._db.transaction() as conn:
            await execute_many(conn, DELETE_KEY, [(key,) for key in keys])

    async def expire(self, *, now: float) -> int:
        return await self._db.execute(EXPIRE, now)
