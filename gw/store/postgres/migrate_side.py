"""The PostgreSQL side of ``gw state migrate`` (gw/store/state_migrate/): one connection,
one transaction, for reading a snapshot or writing all or nothing.

Reading is a ``REPEATABLE READ`` read-only transaction: gateways may keep writing to a
source database, and the copy and its checksums then see one moment of it. Writing uses
``COPY`` (asyncpg's ``copy_records_to_table``), which fires the rollup trigger as an
insert does.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import asyncpg  # type: ignore[import-untyped]  # asyncpg 0.30 ships no type information

from gw.config.state_url import safe_url
from gw.store.migrations import StoreError
from gw.store.state_migrate.tables import Kind, TableShape, postgres_kind

_COLUMNS = """
SELECT table_name, column_name, data_type, column_default, is_identity
FROM information_schema.columns
WHERE table_schema = current_schema()
ORDER BY table_name, ordinal_position
"""

_PRIMARY_KEYS = """
SELECT c.relname, a.attname
FROM pg_index i
JOIN pg_class c ON c.oid = i.indrelid
JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = ANY (i.indkey)
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE i.indisprimary AND n.nspname = current_schema()
ORDER BY c.relname, array_position(i.indkey, a.attnum)
"""


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


async def schema_version(url: str) -> int:
    """The version the database is at (0: none yet)."""
    conn = await _connect(url)
    try:
        if await conn.fetchval("SELECT to_regclass('schema_version')") is None:
            return 0
        return int(await conn.fetchval("SELECT coalesce(max(version), 0) FROM schema_version"))
    finally:
        await conn.close()


async def _connect(url: str) -> Any:
    try:
        return await asyncpg.connect(url)
    except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
        raise StoreError(
            f"cannot connect to PostgreSQL at {safe_url(url)}: {type(exc).__name__}: {exc}"
        ) from None


class PostgresSide:
    def __init__(self, url: str, conn: Any, transaction: Any) -> None:
        self._url = url
        self._conn = conn
        self._transaction = transaction
        self._finished = False
        self._order: dict[str, list[str]] = {}
        self._counters: list[tuple[str, str, str]] = []  # (table, column, sequence)

    @classmethod
    async def open(cls, url: str, *, write: bool) -> PostgresSide:
        conn = await _connect(url)
        try:
            if write:
                transaction = conn.transaction()
            else:
                transaction = conn.transaction(isolation="repeatable_read", readonly=True)
            await transaction.start()
        except BaseException:
            await conn.close()
            raise
        return cls(url, conn, transaction)

    @property
    def label(self) -> str:
        return safe_url(self._url)

    async def shapes(self) -> Mapping[str, TableShape]:
        columns: dict[str, dict[str, Kind]] = {}
        self._order, self._counters = {}, []  # read afresh each time
        for row in await self._conn.fetch(_COLUMNS):
            table, column = row["table_name"], row["column_name"]
            columns.setdefault(table, {})[column] = postgres_kind(row["data_type"])
            default = row["column_default"] or ""
            if row["is_identity"] == "YES" or default.startswith("nextval("):
                sequence = await self._conn.fetchval(
                    "SELECT pg_get_serial_sequence($1, $2)", _quote(table), column
                )
                if sequence is None:  # a default nextval('name'::regclass) of a free sequence
                    sequence = default.split("'")[1]
                self._counters.append((table, column, sequence))
        for row in await self._conn.fetch(_PRIMARY_KEYS):
            self._order.setdefault(row["relname"], []).append(row["attname"])
        for table, cols in columns.items():
            if "seq" in cols and table == "traces":
                self._order[table] = ["seq"]  # the order traces were written in
        return {name: TableShape(name=name, columns=cols) for name, cols in columns.items()}

    async def count(self, table: str) -> int:
        return int(await self._conn.fetchval(f"SELECT count(*) FROM {_quote(table)}"))  # noqa: S608 - a name from the schema, quoted

    async def rows(
        self, table: str, columns: Sequence[str], batch: int
    ) -> AsyncIterator[list[tuple[object, ...]]]:
        listed = ", ".join(_quote(c) for c in columns)
        order = self._order.get(table)
        by = f" ORDER BY {', '.join(_quote(c) for c in order)}" if order else ""
        cursor = await self._conn.cursor(f"SELECT {listed} FROM {_quote(table)}{by}")  # noqa: S608 - names from the schema, quoted
        while chunk := await cursor.fetch(batch):
            yield [tuple(record) for record in chunk]

    async def clear(self, table: str) -> None:
        await self._conn.execute(f"DELETE FROM {_quote(table)}")  # noqa: S608 - a name from the schema, quoted

    async def pause_triggers(self, tables: Sequence[str], *, paused: bool) -> None:
        # Not only wasted work: the rollup trigger updates the same few rows again and
        # again inside one transaction, and each update lengthens the chain of row
        # versions the next one walks (200,000 usage rows took 293 s with it, see the
        # commit). DISABLE TRIGGER is transactional: a rollback leaves them enabled.
        action = "DISABLE" if paused else "ENABLE"
        for table in tables:
            await self._conn.execute(f"ALTER TABLE {_quote(table)} {action} TRIGGER USER")

    async def insert(
        self, table: str, columns: Sequence[str], rows: Sequence[Sequence[object]]
    ) -> None:
        await self._conn.copy_records_to_table(table, records=rows, columns=list(columns))

    async def renumber(self) -> None:
        for table, column, sequence in self._counters:
            # setval(seq, NULL) is a no-op (strict): an empty table leaves its counter be.
            await self._conn.execute(
                f"SELECT setval($1, (SELECT max({_quote(column)}) FROM {_quote(table)}))",  # noqa: S608 - names from the schema, quoted
                sequence,
            )

    async def commit(self) -> None:
        await self._transaction.commit()
        self._finished = True

    async def close(self) -> None:
        try:
            if not self._finished:
                await self._transaction.rollback()
        finally:
            await self._conn.close()
