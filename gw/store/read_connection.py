"""ReadConnection: the store's second SQLite connection, for the reads an admin asks for.

Why: aiosqlite runs a connection's statements one at a time on its own thread, and the
store serialises its calls with a lock; a report that read for a second on the writer's
connection held both, and every usage write, trace write and API key lookup queued behind
it waited that second (``scripts/bench --usage-reports``, a million usage rows: the
slowest of a one-at-a-time client's requests went from 5 ms to 4.5 s). In WAL mode a
reader reads a snapshot beside the writer, so usage reports, trace lists and trace
lookups go through a connection like this, with a lock of its own, and never hold the
writer's (the store keeps one for admin reads and one for the request path's).

The connection is opened at the first read, made read-only by ``PRAGMA query_only`` (a
``mode=ro`` WAL reader needs its own way of handling a -shm it may not write, for nothing
gained), and opened without ``create``: it never makes a database at a path the writer has
not. Its lock refuses every call while the -shm cannot be written, like the writer's
(``GuardedLock``): a reader writes to the memory-mapped WAL index too. When the writer
reopens a replaced file it calls ``reset``, and the next read opens the file now there.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Final

import aiosqlite

from gw.store.file_checks import GuardedLock, StoreUnavailableError, shm_problem

logger = logging.getLogger("gw.store")

BUSY_TIMEOUT_MS: Final = 5_000  # as the writer's: a checkpoint or recovery may hold a lock


class ReadConnection:
    """A lazily opened read-only connection to ``path``; ``use`` lends it under its lock."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._uri = reader_uri(path)
        self._conn: aiosqlite.Connection | None = None
        self._lock = GuardedLock(lambda: shm_problem(path))

    @asynccontextmanager
    async def use(self) -> AsyncIterator[aiosqlite.Connection]:
        """The connection, for one read (several statements see one snapshot only when
        they run as one statement: the connection is in autocommit mode)."""
        async with self._lock:
            if self._conn is None:
                self._conn = await connect_reader(self._uri)
            yield self._conn

    async def reset(self) -> None:
        """Close the connection; the next read opens the file at the path."""
        await self.close()

    async def close(self) -> None:
        """Close the connection (not while the -shm cannot be written: see
        ``SqliteStore.close``)."""
        try:
            async with self._lock:
                conn, self._conn = self._conn, None
                if conn is not None:
                    await conn.close()
        except StoreUnavailableError as exc:
            logger.warning("not closing the read connection: %s", exc)


def reader_uri(path: Path) -> str:
    """The URI that opens the database at ``path`` without creating it (``mode=rw``)."""
    return path.absolute().as_uri() + "?mode=rw"


async def connect_reader(uri: str) -> aiosqlite.Connection:
    """A read-only connection to the existing database ``uri`` names."""
    conn = await aiosqlite.connect(uri, uri=True, isolation_level=None)
    try:
        await conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        await conn.execute("PRAGMA query_only = 1")
    except BaseException:
        await conn.close()
        raise
    return conn
