"""The ``idempotency_keys`` table: the answers gw holds for ``Idempotency-Key`` retries.

A row is one key of one caller (``scope``: the tenant and API key; open mode has one). It
is written ``pending`` when a request with the key starts (an INSERT that the primary key
refuses to a second one: that is how a concurrent duplicate is told, by every gateway of
a fleet sharing the table), and ``done`` with the sealed answer when that request
succeeds; a request that fails deletes it, so a retry runs again. A row lives until
``expires_at``: a pending row until its request's longest possible run (so a row a killed
gw left behind blocks its key for that long only), a done row for the window after the
answer (``server.idempotency_ttl``). An expired row is replaced by the next claim of its
key and deleted by ``expire``.

The row holds no content in the clear: the client's key as a SHA-256 digest, the request
as a digest keyed by the vault identity (``fingerprint``: equal bodies give equal ones,
and nobody without the identity can test a guessed prompt against it), and the answer
sealed to the vault identity (gw/vault/content_seal.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Final, Literal

import aiosqlite
import msgspec

KeyState = Literal["pending", "done"]
COLUMNS: Final = "fingerprint, request_id, state, expires_at, status, route, media_type, answer"
INSERT_PENDING: Final = (
    "INSERT INTO idempotency_keys (scope, key_digest, fingerprint, request_id, state,"
    " created_at, expires_at, size) VALUES (?, ?, ?, ?, 'pending', ?, ?, 0)"
    " ON CONFLICT DO NOTHING"
)
DELETE_EXPIRED_KEY: Final = (
    "DELETE FROM idempotency_keys WHERE scope = ? AND key_digest = ? AND expires_at <= ?"
)
SELECT_KEY: Final = f"SELECT {COLUMNS} FROM idempotency_keys WHERE scope = ? AND key_digest = ?"  # noqa: S608 - fixed columns
# The answer is kept while every unexpired answer together stays within the bound; the sum
# reads the table, which holds at most ``idempotency_max_bytes`` of answers.
COMPLETE: Final = (
    "UPDATE idempotency_keys SET state = 'done', expires_at = ?, status = ?, route = ?,"
    " media_type = ?, answer = ?, size = ?"
    " WHERE scope = ? AND key_digest = ? AND request_id = ? AND state = 'pending'"
    " AND (SELECT coalesce(sum(size), 0) FROM idempotency_keys WHERE expires_at > ?) + ? <= ?"
)
RELEASE: Final = (
    "DELETE FROM idempotency_keys WHERE scope = ? AND key_digest = ? AND request_id = ?"
    " AND state = 'pending'"
)
EXPIRE: Final = "DELETE FROM idempotency_keys WHERE expires_at <= ?"
Transaction = Callable[[], AbstractAsyncContextManager[None]]


class HeldKey(msgspec.Struct, frozen=True, kw_only=True):
    """A key another request holds: still running (``pending``) or answered (``done``)."""

    fingerprint: str
    request_id: str  # the request that holds it, or answered
    state: KeyState
    expires_at: float
    status: int | None = None
    route: str | None = None  # the answer's x-gw-route
    media_type: str | None = None
    answer: bytes | None = None  # sealed


class StoredAnswer(msgspec.Struct, frozen=True, kw_only=True):
    """What a done row keeps of an answer (``answer`` sealed)."""

    status: int
    route: str
    media_type: str
    answer: bytes


def held_from_row(row: Sequence[object]) -> HeldKey:
    return HeldKey(
        fingerprint=str(row[0]),
        request_id=str(row[1]),
        state=str(row[2]),  # type: ignore[arg-type]  # written by this module only
        expires_at=float(row[3]),  # type: ignore[arg-type]
        status=None if row[4] is None else int(row[4]),  # type: ignore[call-overload]
        route=None if row[5] is None else str(row[5]),
        media_type=None if row[6] is None else str(row[6]),
        answer=None if row[7] is None else bytes(row[7]),  # type: ignore[call-overload]
    )


def complete_params(
    scope: str,
    key_digest: str,
    request_id: str,
    stored: StoredAnswer,
    *,
    now: float,
    expires_at: float,
    max_total: int,
) -> tuple[object, ...]:
    size = len(stored.answer)
    return (
        *(expires_at, stored.status, stored.route, stored.media_type, stored.answer, size),
        *(scope, key_digest, request_id, now, size, max_total),
    )


class IdempotencyKeys:
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
        """Hold the key for ``request_id`` (pending until ``until``): None when it is now
        held, else the row that holds it (an expired one is replaced, not returned)."""
        async with self._transaction():
            conn = self._conn()
            await conn.execute(DELETE_EXPIRED_KEY, (scope, key_digest, now))
            cursor = await conn.execute(
                INSERT_PENDING, (scope, key_digest, fingerprint, request_id, now, until)
            )
            if cursor.rowcount == 1:
                return None
            rows = await conn.execute_fetchall(SELECT_KEY, (scope, key_digest))
        return held_from_row(next(iter(rows)))

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
        """Keep ``stored`` as the key's answer until ``expires_at``; when it does not fit
        within ``max_total`` bytes of unexpired answers (or the key is no longer this
        request's) nothing is kept, the pending row goes, and False."""
        params = complete_params(
            scope, key_digest, request_id, stored, now=now, expires_at=expires_at,
            max_total=max_total,
        )  # fmt: skip
        async with self._transaction():
            cursor = await self._conn().execute(COMPLETE, params)
            if cursor.rowcount == 1:
                return True
            await self._conn().execute(RELEASE, (scope, key_digest, request_id))
        return False

    async def release(self, scope: str, key_digest: str, *, request_id: str) -> None:
        """Let the key go: the request holding it failed or was not answered."""
        async with self._transaction():
            await self._conn().execute(RELEASE, (scope, key_digest, request_id))

    async def expire(self, *, now: float) -> int:
        """Delete the rows whose time ran out; how many."""
        async with self._transaction():
            cursor = await self._conn().execute(EXPIRE, (now,))
            return cursor.rowcount
