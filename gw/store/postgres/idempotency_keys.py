"""Keys held for ``Idempotency-Key`` retries in PostgreSQL (gw/store/idempotency_keys.py
documents the table and each call).

The statements are SQLite's. Gateways of a fleet claim a key at once: the INSERT of one
waits on the other's uncommitted row and then does nothing, so exactly one holds it and
the other reads the holder. The bound on all answers together is checked by a sum each
writer reads before its own commit, so two gateways completing at once may pass it by at
most those answers.
"""

from __future__ import annotations

from gw.store.idempotency_keys import (
    COMPLETE,
    DELETE_EXPIRED_KEY,
    EXPIRE,
    INSERT_PENDING,
    RELEASE,
    SELECT_KEY,
    HeldKey,
    StoredAnswer,
    complete_params,
    held_from_row,
)
from gw.store.postgres.database import Database, affected
from gw.store.postgres.sql import numbered


class PgIdempotencyKeys:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def claim(
        self,
        scope: str,
        key_digest: str,
        *,
        fingerprint: str,
        request_id: str,
        now: float,
        until: float,
    ) -> HeldKey | None:
        async with self._db.transaction() as conn:
            await conn.execute(numbered(DELETE_EXPIRED_KEY), scope, key_digest, now)
            status = await conn.execute(
                numbered(INSERT_PENDING), scope, key_digest, fingerprint, request_id, now, until
            )
            if affected(status) == 1:
                return None
            row = await conn.fetchrow(numbered(SELECT_KEY), scope, key_digest)
        return held_from_row(tuple(row))

    async def complete(
        self,
        scope: str,
        key_digest: str,
        *,
        request_id: str,
        stored: StoredAnswer,
        now: float,
        expires_at: float,
        max_total: int,
    ) -> bool:
        params = complete_params(
            scope, key_digest, request_id, stored, now=now, expires_at=expires_at,
            max_total=max_total,
        )  # fmt: skip
        async with self._db.transaction() as conn:
            if affected(await conn.execute(numbered(COMPLETE), *params)) == 1:
                return True
            await conn.execute(numbered(RELEASE), scope, key_digest, request_id)
        return False

    async def release(self, scope: str, key_digest: str, *, request_id: str) -> None:
        await self._db.execute(RELEASE, scope, key_digest, request_id)

    async def expire(self, *, now: float) -> int:
        return await self._db.execute(EXPIRE, now)
