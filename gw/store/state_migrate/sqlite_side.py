"""The SQLite side of a migration: the gw.db file through the standard library's sqlite3.

A CLI command with one job at a time, so plain blocking calls: the event loop has
nothing else to serve meanwhile.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Final

from gw.store.migrations import StoreError
from gw.store.state_migrate.tables import TableShape, sqlite_kind

BUSY_TIMEOUT_MS: Final = 5000


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def schema_version(path: Path) -> int:
    """The version the file at ``path`` is at; raises ``StoreError`` when there is none."""
    if not path.is_file():
        raise StoreError(f"no gw database at {path}")
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)  # as_uri: escaped
    try:
        return int(conn.execute("PRAGMA user_version").fetchone()[0])
    finally:
        conn.close()


class SqliteSide:
    def __init__(self, path: Path, *, write: bool) -> None:
        self._path = path
        self._conn = sqlite3.connect(path, isolation_level=None)
        self._conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        # IMMEDIATE: the write lock from the start; a reader's BEGIN takes its snapshot
        # at the first read and holds it to the end.
        self._conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")

    @property
    def label(self) -> str:
        return f"sqlite:{self._path}"

    async def shapes(self) -> Mapping[str, TableShape]:
        names = [
            row[0]
            for row in self._conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'"
                " AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'"
            )
        ]
        shapes = {}
        for name in names:
            info = self._conn.execute(f"PRAGMA table_info({_quote(name)})").fetchall()
            columns = {row[1]: sqlite_kind(row[2]) for row in info}
            shapes[name] = TableShape(name=name, columns=columns)
        return shapes

    async def count(self, table: str) -> int:
        return int(self._conn.execute(f"SELECT count(*) FROM {_quote(table)}").fetchone()[0])  # noqa: S608 - a name from the schema, quoted

    async def rows(
        self, table: str, columns: Sequence[str], batch: int
    ) -> AsyncIterator[list[tuple[object, ...]]]:
        listed = ", ".join(_quote(c) for c in columns)
        cursor = self._conn.execute(f"SELECT {listed} FROM {_quote(table)} ORDER BY rowid")  # noqa: S608 - names from the schema, quoted
        try:
            while chunk := cursor.fetchmany(batch):
                yield chunk
        finally:
            cursor.close()

    async def clear(self, table: str) -> None:
        self._conn.execute(f"DELETE FROM {_quote(table)}")  # noqa: S608 - a name from the schema, quoted

    async def pause_triggers(self, tables: Sequence[str], *, paused: bool) -> None:
        """SQLite cannot: its rollup trigger runs, and copy.py clears what it added."""

    async def insert(
        self, table: str, columns: Sequence[str], rows: Sequence[Sequence[object]]
    ) -> None:
        listed = ", ".join(_quote(c) for c in columns)
        marks = ", ".join("?" for _ in columns)
        self._conn.executemany(f"INSERT INTO {_quote(table)} ({listed}) VALUES ({marks})", rows)  # noqa: S608 - names from the schema, quoted

    async def renumber(self) -> None:
        """Nothing to do: an INTEGER PRIMARY KEY continues from the highest one present."""

    async def commit(self) -> None:
        self._conn.execute("COMMIT")

    async def close(self) -> None:
        if self._conn.in_transaction:
            self._conn.execute("ROLLBACK")
        self._conn.close()
