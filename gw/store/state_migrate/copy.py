"""The migration itself: open both stores, check, copy, verify, commit.

Both stores are opened the normal way first (``open_store``), which creates the
destination's schema and brings the source's up to this gw's version (a source written
by a newer gw is refused there). The destination must hold no gw data: a copy never
merges. Every table is then copied in batches inside one destination transaction, with
the source's rows counted and checksummed as they stream past; the destination's are
read back the same way before the commit, and any difference rolls everything back.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Final

import msgspec

from gw.store.migrations import LATEST_VERSION, StoreError
from gw.store.open import open_store
from gw.store.state_migrate import sqlite_side
from gw.store.state_migrate.checksum import TableChecksum
from gw.store.state_migrate.endpoint import Endpoint
from gw.store.state_migrate.side import Side
from gw.store.state_migrate.tables import SKIPPED_TABLES, TablePlan, fit_rows, plan_tables

BATCH_ROWS: Final = 5000


class DestinationNotEmptyError(StoreError):
    """The destination already holds gw data; a migration copies into an empty store only."""


class MismatchError(StoreError):
    """The copy read back differs from the source (the transaction was rolled back)."""


class TableReport(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    rows: int  # the source's
    checksum: str  # the source's, hex
    match: bool  # the destination's count and checksum are the same
    destination_rows: int
    destination_checksum: str


class MigrationReport(msgspec.Struct, frozen=True, kw_only=True):
    source: str  # labels: a URL without its password
    destination: str
    source_version_before: int  # the source's schema version before opening migrated it
    schema_version: int
    tables: tuple[TableReport, ...]

    @property
    def ok(self) -> bool:
        return all(table.match for table in self.tables)


Progress = Callable[[str], None]


async def migrate(
    source: Endpoint,
    destination: Endpoint,
    *,
    batch: int = BATCH_ROWS,
    progress: Progress | None = None,
) -> MigrationReport:
    """Copy ``source`` into ``destination`` and verify it; committed only when every
    table matches. Raises ``StoreError`` (``DestinationNotEmptyError``, ``MismatchError``,
    ``SchemaTooNewError``...) saying why not."""
    if source == destination:
        raise StoreError(f"{source.label} is both the source and the destination")
    before = await _schema_version(source)
    if before == 0:  # opening it would only create an empty schema to copy
        raise StoreError(f"{source.label} holds no gw state to migrate")
    await _open_and_close(source)
    await _open_and_close(destination)
    tell = progress or (lambda _message: None)
    src = await _side(source, write=False)
    try:
        dst = await _side(destination, write=True)
        try:
            plans = plan_tables(await src.shapes(), await dst.shapes())
            await _refuse_data(dst)
            names = [plan.name for plan in plans]
            await dst.pause_triggers(names, paused=True)
            for plan in plans:
                tell(f"copying {plan.name}")
                await _copy(src, dst, plan, batch)
            await dst.pause_triggers(names, paused=False)
            await dst.renumber()
            reports = [await _verify(src, dst, plan, batch) for plan in plans]
            report = MigrationReport(
                source=source.label,
                destination=destination.label,
                source_version_before=before,
                schema_version=LATEST_VERSION,
                tables=tuple(reports),
            )
            if report.ok:
                await dst.commit()
            return report
        finally:
            await dst.close()
    finally:
        await src.close()


async def _copy(src: Side, dst: Side, plan: TablePlan, batch: int) -> None:
    # Empty but for what a trigger derived from tables copied before (tables.DERIVED_TABLES).
    await dst.clear(plan.name)
    async for rows in src.rows(plan.name, plan.columns, batch):
        await dst.insert(plan.name, plan.columns, fit_rows(rows, plan.kinds))


async def _verify(src: Side, dst: Side, plan: TablePlan, batch: int) -> TableReport:
    theirs, ours = await _checksum(src, plan, batch), await _checksum(dst, plan, batch)
    return TableReport(
        name=plan.name,
        rows=theirs.rows,
        checksum=theirs.hexdigest,
        match=theirs.rows == ours.rows and theirs.hexdigest == ours.hexdigest,
        destination_rows=ours.rows,
        destination_checksum=ours.hexdigest,
    )


async def _checksum(side: Side, plan: TablePlan, batch: int) -> TableChecksum:
    checksum = TableChecksum()
    async for rows in side.rows(plan.name, plan.columns, batch):
        checksum.add(rows)
    return checksum


async def _refuse_data(dst: Side) -> None:
    found = []
    for name in sorted(set(await dst.shapes()) - SKIPPED_TABLES):
        count = await dst.count(name)
        if count:
            found.append(f"{count} {name} rows")
    if found:
        raise DestinationNotEmptyError(
            f"{dst.label} already holds gw data ({', '.join(found)}); gw state migrate"
            " copies into an empty store only: name a new database (createdb) or a new"
            " SQLite file, or empty this one first"
        )


async def _schema_version(endpoint: Endpoint) -> int:
    if endpoint.url is not None:
        from gw.store.postgres import migrate_side  # noqa: PLC0415 - asyncpg only when asked for

        return await migrate_side.schema_version(endpoint.url)
    return sqlite_side.schema_version(_path(endpoint))


async def _open_and_close(endpoint: Endpoint) -> None:
    """Open as ``gw serve`` would: creates or migrates the schema, refuses a newer one."""
    # With a URL the path is unused: open_store takes one for SQLite only.
    store = await open_store(endpoint.url, endpoint.path or Path())
    await store.close()


async def _side(endpoint: Endpoint, *, write: bool) -> Side:
    if endpoint.url is not None:
        from gw.store.postgres.migrate_side import PostgresSide  # noqa: PLC0415 - see above

        return await PostgresSide.open(endpoint.url, write=write)
    return sqlite_side.SqliteSide(_path(endpoint), write=write)


def _path(endpoint: Endpoint) -> Path:
    if endpoint.path is None:
        raise StoreError(f"{endpoint.label} names no SQLite file")
    return endpoint.path
