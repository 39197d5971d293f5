"""The pool of connections every concept module of the PostgreSQL store runs on.

asyncpg (chosen over psycopg 3 with psycopg_pool by measurement: bench/pg_driver.py and
the commit that added this store) with a small pool: ``MIN_CONNECTIONS`` kept open, at
most ``MAX_CONNECTIONS``, so a fleet of gateways stays well inside a server's default
``max_connections`` (100). Statements are written with ``?`` placeholders and numbered
here (gw/store/postgres/sql.py); the connection runs in autocommit, and ``transaction``
opens one where several statements must be atomic.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any, Final

import asyncpg  # type: ignore[import-untyped]  # asyncpg 0.30 ships no type information

from gw.store.postgres.sql import numbered

MIN_CONNECTIONS: Final = 1
MAX_CONNECTIONS: Final = 8
CONNECT_TIMEOUT_S: Final = 5.0
COMMAND_TIMEOUT_S: Final = 60.0
"""A server that stops answering (a partition, not a refused connection) fails a connect
in ``CONNECT_TIMEOUT_S`` rather than asyncpg's 60 s, and a statement in
``COMMAND_TIMEOUT_S`` rather than whenever TCP gives up (minutes): no caller waits on a
vanished server without a bound. The bound is generous, for a CLI report over a large
ledger; callers on a request's way bound their waits more tightly (gw/server/key_cache.py,
gw/telemetry/usage.py, gw/startup/store_health.py)."""
Record = Any  # asyncpg.Record: indexable by position and name
Connection = Any  # asyncpg.Connection (untyped)


class Database:
    """A pool and the few calls the concept modules make on it."""

    def __init__(self, pool: Any) -> None:
        self._pool = pool

    @classmethod
    async def connect(cls, url: str) -> Database:
        pool = await asyncpg.create_pool(
            url,
            min_size=MIN_CONNECTIONS,
            max_size=MAX_CONNECTIONS,
            timeout=CONNECT_TIMEOUT_S,
            command_timeout=COMMAND_TIMEOUT_S,
        )
        return cls(pool)

    async def close(self) -> None:
        await self._pool.close()

    async def fetch(self, sql: str, *params: object) -> list[Record]:
        return list(await self._pool.fetch(numbered(sql), *params))

    async def fetchrow(self, sql: str, *params: object) -> Record | None:
        return await self._pool.fetchrow(numbered(sql), *params)

    async def fetchval(self, sql: str, *params: object) -> Any:
        return await self._pool.fetchval(numbered(sql), *params)

    async def execute(self, sql: str, *params: object) -> int:
        """Run one statement; the rows it changed (from its status, ``UPDATE 3``)."""
        return affected(await self._pool.execute(numbered(sql), *params))

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[Connection]:
        """A connection inside a transaction, committed at the end of the block (rolled
        back when it raises or is cancelled)."""
        async with self._pool.acquire() as conn, conn.transaction():
            yield conn


async def execute_many(conn: Connection, sql: str, rows: Sequence[Sequence[object]]) -> None:
    """One statement for each of ``rows``, pipelined by asyncpg in one round trip."""
    if rows:
        await conn.executemany(numbered(sql), rows)


def affected(status: str) -> int:
    """The row count at the end of a command status (``DELETE 5`` -> 5; none -> 0)."""
    tail = status.rpartition(" ")[2]
    return int(tail) if tail.isdigit() else 0
