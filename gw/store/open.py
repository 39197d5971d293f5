"""Which engine holds the state: ``open_store`` picks it from ``state.url``.

No URL: SQLite at the state directory's database (the embedded default, nothing else
changes). A ``postgresql://`` URL: the PostgreSQL store, whose module (and asyncpg) is
imported only then, so a gw that never names one never loads the driver.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from gw.store.migrations import StoreError
from gw.store.port import StateStore
from gw.store.sqlite import SqliteStore


async def open_store(state_url: str | None, database_path: Path) -> StateStore:
    """The state store: PostgreSQL at ``state_url`` when given, else SQLite at
    ``database_path``; opened, its schema brought up to date."""
    if state_url is None:
        return await SqliteStore.open(database_path)
    from gw.store.postgres.store import PostgresStore  # noqa: PLC0415 - asyncpg only when asked for

    return await PostgresStore.open(state_url)


def store_errors(state_url: str | None) -> tuple[type[BaseException], ...]:
    """The errors a store of this engine raises that a CLI command reports as "cannot
    read" rather than as a crash: gw's own, the OS's, and the engine driver's."""
    if state_url is None:
        return (StoreError, sqlite3.Error, OSError)
    from gw.store.postgres.errors import DRIVER_ERRORS  # noqa: PLC0415 - see open_store

    return (StoreError, OSError, *DRIVER_ERRORS)
