"""API keys in PostgreSQL: the SQLite store's statements (gw/store/key_rows.py), numbered."""

from __future__ import annotations

from gw.config.schema import TenantBudget
from gw.store.api_keys import ApiKey
from gw.store.key_rows import INSERT_KEY, SELECT_KEYS, budget_update, key_from_row, key_params
from gw.store.postgres.database import Database
from gw.store.postgres.sql import numbered


class Keys:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def create(self, key: ApiKey) -> None:
        await self._db.execute(INSERT_KEY, *key_params(key))

    async def list(self) -> list[ApiKey]:
        rows = await self._db.fetch(SELECT_KEYS + "ORDER BY created_at, id")
        return [key_from_row(tuple(row)) for row in rows]

    async def revoke(self, key_id: str, *, time: float) -> ApiKey | None:
        """The key, revoked now unless it was already (its first time kept)."""
        async with self._db.transaction() as conn:
            await conn.execute(
                numbered("UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL"),
                time,
                key_id,
            )
            row = await conn.fetchrow(numbered(SELECT_KEYS + "WHERE id = ?"), key_id)
        return None if row is None else key_from_row(tuple(row))

    async def set_budget(self, key_id: str, budget: TenantBudget) -> ApiKey | None:
        async with self._db.transaction() as conn:
            sql, params = budget_update(key_id, budget)
            await conn.execute(numbered(sql), *params)
            row = await conn.fetchrow(numbered(SELECT_KEYS + "WHERE id = ?"), key_id)
        return None if row is None else key_from_row(tuple(row))

    async def by_digest(self, digest: str) -> ApiKey | None:
        row = await self._db.fetchrow(SELECT_KEYS + "WHERE digest = ?", digest)
        return None if row is None else key_from_row(tuple(row))

    async def count_active(self, *, now: float) -> int:
        return int(
            await self._db.fetchval(
                "SELECT count(*) FROM api_keys"
                " WHERE revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?)",
                now,
            )
        )
