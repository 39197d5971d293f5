"""SqliteStore: traces and config revisions in one SQLite file, through aiosqlite.

The connection runs in autocommit mode (``isolation_level=None``) and every write of
several statements, and every usage write, opens its own ``BEGIN IMMEDIATE``
transaction, so a revision bump or a batch of usage rows is atomic, takes the write lock
up front (no lock upgrade deadlock between a running server and a CLI command), and is
rolled back when its writer is cancelled before the commit. Traces (lossy) go in 32 rows
per statement, which SQLite runs as its own transaction, write lock taken at its start:
no ``BEGIN`` and ``COMMIT`` round trips to aiosqlite's thread, each a thread wake-up for
the event loop. WAL lets readers proceed while the server writes; ``synchronous=NORMAL``
in WAL mode can lose the last commits on power loss but never corrupts the file.

One store object serialises its own calls with a lock: aiosqlite runs statements on one
thread, but two coroutines interleaving ``BEGIN`` ... ``COMMIT`` would collide. The reads
an admin asks for (usage reports, trace lists and lookups) go through a second, read-only
connection with a lock of its own (gw/store/read_connection.py), so they never hold this
one: the writes and the API key lookups of the request path never wait behind a report.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
import time as _time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from types import TracebackType
from typing import Final, Self

import aiosqlite
import msgspec

from gw.config.schema import TenantBudget
from gw.ports import UsageRow
from gw.record import TraceRecord
from gw.store.api_keys import ApiKey
from gw.store.batch_insert import insert_statements
from gw.store.cached_answers import CachedAnswers
from gw.store.file_checks import (
    DatabaseFile,
    GuardedLock,
    StoreProblem,
    StoreUnavailableError,
    database_size,
    shm_problem,
    space_problem,
)
from gw.store.idempotency_keys import IdempotencyKeys
from gw.store.key_rows import INSERT_KEY, SELECT_KEYS, budget_update, key_from_row, key_params
from gw.store.migrations import LATEST_VERSION, SCHEMA_VERSION_TABLE, StoreError, pending_migrations
from gw.store.private_files import DIR_MODE, make_database_private
from gw.store.read_connection import ReadConnection
from gw.store.response_jobs import ResponseJobs
from gw.store.revisions import ConfigRevisions, RevisionRow, StoredRevision
from gw.store.runs import Runs
from gw.store.trace_reads import TraceReads
from gw.store.trace_rows import (
    DELETE_OLDEST_TRACES,
    DELETE_TRACES_BEFORE,
    INSERT_TRACES,
    TRACE_ROW_OVERHEAD,
    trace_row,
)
from gw.store.usage import DELETE_USAGE_BEFORE, INSERT_USAGE, UsageGroup, UsageTotals
from gw.store.usage_recovery import UsageRecovery
from gw.store.usage_rollup import (
    BUDGET_SPEND,
    budget_rows,
    budget_spend_params,
    hour_start,
    rollup_report,
)

logger = logging.getLogger("gw.store")

BUSY_TIMEOUT_MS: Final = 5_000
WAL_RETRY_S: Final = 0.01  # between attempts to switch a busy new file to WAL (_enter_wal)
AUTO_VACUUM_INCREMENTAL: Final = 2  # ``PRAGMA auto_vacuum`` values: 0 none, 1 full, 2 incremental


class SqliteStore:
    """The SQLite state store. Build it with ``await SqliteStore.open(path)``."""

    def __init__(self, conn: aiosqlite.Connection, path: Path) -> None:
        self._conn = conn
        self.path = path
        self.file = DatabaseFile(path)
        self._lock = GuardedLock(lambda: shm_problem(path))
        self._encoder = msgspec.json.Encoder()
        # Admin reads (usage reports, trace lists and lookups) on a connection of their own.
        self._reads = ReadConnection(path)
        self._traces = TraceReads(self._reads)
        # Trace lookups of the request path (previous_response_id) on a third connection,
        # opened at its first use, so an admin read never delays them either.
        self._request_reads = ReadConnection(path)
        self._readers = (self._reads, self._request_reads)

    @classmethod
    async def open(cls, path: Path) -> Self:
        """Open (creating if needed) the database at ``path`` and bring its schema up to date.

        Raises ``SchemaTooNewError`` when the file was written by a newer gw.
        """
        await asyncio.to_thread(path.parent.mkdir, mode=DIR_MODE, parents=True, exist_ok=True)
        problem = await asyncio.to_thread(shm_problem, path)
        if problem is not None:
            raise StoreError(problem.message)
        conn = await _connect(path)
        try:
            store = cls(conn, path)
        except BaseException:
            await conn.close()
            raise
        try:
            await store._migrate()
        except BaseException:
            await store.close()
            raise
        return store

    async def close(self) -> None:
        """Close the connection; not while the -shm cannot be written (closing checkpoints
        through it): the WAL then stays, and the next open applies it."""
        try:
            for reader in self._readers:
                await reader.close()
            async with self._lock:
                await self._conn.close()
        except StoreUnavailableError as exc:
            logger.warning("not closing the database: %s", exc)
        finally:
            self.file.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    @property
    def location(self) -> str:
        return str(self.path)

    async def schema_version(self) -> int:
        rows = await self._conn.execute_fetchall("PRAGMA user_version")
        return int(next(iter(rows))[0])

    async def size_bytes(self) -> int | None:
        """The database's bytes on disk, its write-ahead log included; None when missing."""
        return await asyncio.to_thread(database_size, self.path)

    async def local_problem(self) -> StoreProblem | None:
        """The file gone or replaced, its -shm not writable, or the disk beside it full."""
        return await asyncio.to_thread(self._file_problem)

    def _file_problem(self) -> StoreProblem | None:
        return self.file.gone() or shm_problem(self.path) or space_problem(self.path)

    # -- traces ---------------------------------------------------------------------------

    async def write_traces(self, traces: Sequence[TraceRecord]) -> None:
        """Store traces, ``ROWS_PER_STATEMENT`` per statement (each its own transaction);
        a trace with a known request id replaces it, so a batch written again is harmless."""
        if not traces:
            return
        rows = [trace_row(trace, self._encoder.encode(trace)) for trace in traces]
        for sql, params in insert_statements(INSERT_TRACES, rows):
            await self._write_one(sql, params)

    # Reads of traces go through the read connection (gw/store/trace_reads.py).

    async def list_traces(
        self, *, limit: int = 20, client_request_id: str | None = None
    ) -> list[TraceRecord]:
        """``TraceReads.list_traces``."""
        return await self._traces.list_traces(limit=limit, client_request_id=client_request_id)

    async def traces_between(self, since: float, until: float, *, limit: int) -> list[TraceRecord]:
        return await self._traces.traces_between(since, until, limit=limit)

    async def traces_written_after(
        self, cursor: int | None, *, limit: int
    ) -> tuple[list[TraceRecord], int]:
        """``TraceReads.traces_written_after``."""
        return await self._traces.traces_written_after(cursor, limit=limit)

    async def get_trace(self, request_id: str) -> TraceRecord | None:
        """``TraceReads.get_trace``."""
        return await self._traces.get_trace(request_id)

    def request_path_traces(self) -> TraceReads:
        """Trace reads for the request path, on a connection no admin read uses."""
        return TraceReads(self._request_reads)

    # Tables on this connection, each documented in its module.
    def response_jobs(self) -> ResponseJobs:
        return ResponseJobs(lambda: self._conn, self._lock, self._transaction)

    def idempotency_keys(self) -> IdempotencyKeys:
        return IdempotencyKeys(lambda: self._conn, self._lock, self._transaction)

    def cached_answers(self) -> CachedAnswers:
        return CachedAnswers(lambda: self._conn, self._lock, self._transaction)

    def runs(self) -> Runs:
        """Each run of gw serve and the traces it lost (gw/store/runs.py)."""
        return Runs(lambda: self._conn, self._transaction, self.path)

    def gateways(self) -> None:
        """None: a SQLite database serves one gateway, so there is no fleet to register."""

    # -- config revisions (gw/store/revisions.py) ---------------------------------------

    def revisions(self) -> ConfigRevisions:
        return ConfigRevisions(lambda: self._conn, self._lock, self._transaction)

    async def record_revision(
        self,
        *,
        config_hash: str,
        source: str,
        time: float,
        content: str | None = None,
        redacted: str | None = None,
        parent: int | None = None,
        actor: str | None = None,
        reason: str | None = None,
    ) -> int:
        """``ConfigRevisions.record``."""
        return await self.revisions().record(
            config_hash=config_hash,
            source=source,
            time=time,
            content=content,
            redacted=redacted,
            parent=parent,
            actor=actor,
            reason=reason,
        )

    async def list_revisions(self, *, limit: int | None = None) -> list[RevisionRow]:
        return await self.revisions().list(limit=limit)

    async def get_revision(self, revision: int) -> StoredRevision | None:
        return await self.revisions().get(revision)

    # -- api keys -------------------------------------------------------------------------

    async def create_key(self, key: ApiKey) -> None:
        """Store a new key: its digest, display prefix and suffix, never the key itself."""
        async with self._transaction():
            await self._conn.execute(INSERT_KEY, key_params(key))

    async def list_keys(self) -> list[ApiKey]:
        """Every key, revoked and expired ones included, oldest first."""
        async with self._lock:
            rows = await self._conn.execute_fetchall(SELECT_KEYS + "ORDER BY created_at, id")
        return [key_from_row(row) for row in rows]

    async def revoke_key(self, key_id: str, *, time: float) -> ApiKey | None:
        """Mark a key revoked at ``time`` and return it; None when no key has this id.
        Revoking a revoked key keeps its first ``revoked_at``."""
        async with self._transaction():
            await self._conn.execute(
                "UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
                (time, key_id),
            )
            rows = await self._conn.execute_fetchall(SELECT_KEYS + "WHERE id = ?", (key_id,))
        row = next(iter(rows), None)
        return None if row is None else key_from_row(row)

    async def set_key_budget(self, key_id: str, budget: TenantBudget) -> ApiKey | None:
        """Replace a key's budget (gateways see it within a second); None: no such key."""
        async with self._transaction():
            await self._conn.execute(*budget_update(key_id, budget))
            rows = await self._conn.execute_fetchall(SELECT_KEYS + "WHERE id = ?", (key_id,))
        row = next(iter(rows), None)
        return None if row is None else key_from_row(row)

    async def find_key_by_digest(self, digest: str) -> ApiKey | None:
        """The key with this SHA-256 digest (the UNIQUE index finds it), revoked or not."""
        async with self._lock:
            rows = await self._conn.execute_fetchall(SELECT_KEYS + "WHERE digest = ?", (digest,))
        row = next(iter(rows), None)
        return None if row is None else key_from_row(row)

    async def count_active_keys(self, *, now: float) -> int:
        """Keys neither revoked nor expired at ``now``."""
        async with self._lock:
            rows = await self._conn.execute_fetchall(
                "SELECT count(*) FROM api_keys"
                " WHERE revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?)",
                (now,),
            )
        return int(next(iter(rows))[0])

    # -- usage ledger ---------------------------------------------------------------------

    def usage_recovery(self) -> UsageRecovery:
        """Journal rows back into the ledger at start-up (gw/store/usage_recovery.py)."""
        return UsageRecovery(self._conn, self._transaction)

    async def write_usage(self, rows: Sequence[UsageRow]) -> None:
        """Store usage rows in one transaction; a known request id keeps its first row."""
        values = [msgspec.structs.astuple(row) for row in rows]
        async with self._transaction():
            for sql, params in insert_statements(INSERT_USAGE, values):
                await self._conn.execute(sql, params)

    async def usage_report(
        self, by: UsageGroup, since: float | None = None, tenant: str | None = None
    ) -> list[UsageTotals]:
        """Usage summed per ``by`` value, for rows at or after ``since`` (epoch seconds) and
        of ``tenant`` when given; ordered as ``gw.store.usage`` documents. Read from the
        rollup (gw/store/usage_rollup.py) on the read connection."""
        async with self._reads.use() as conn:
            return await rollup_report(conn, by, since, tenant)

    async def ping(self) -> None:
        """Raise unless the database answers a trivial query (for /readyz)."""
        async with self._lock:
            await self._conn.execute_fetchall("SELECT 1")

    async def budget_spend(self, wall: float) -> list[tuple[str, str, float]]:
        """(subject, period label, USD) settled in the day, week and month holding ``wall``
        and in total, per tenant and for the global limits, to seed the budgets at
        start-up; from the rollup, which keeps the sums of rows retention deleted."""
        async with self._lock:
            rows = await self._conn.execute_fetchall(BUDGET_SPEND, budget_spend_params(wall))
        return budget_rows(rows, wall)

    # -- retention (gw/telemetry/pruner.py) -----------------------------------------------
    # Strategy: the size of the traces is an estimate, the ``size`` column (body bytes,
    # written with the row) summed plus TRACE_ROW_OVERHEAD per row, not SQLite's ``dbstat``
    # table (an optional build feature the bundled SQLite may lack). Bodies are stored as
    # TEXT, whose ``length`` reads the whole value, so nothing here touches ``body``;
    # deletes report what they freed (``RETURNING``), so a prune round sums the table once.
    # Usage rows go by age only, their sums staying in the rollup; config revisions stay.

    async def trace_volume(self) -> tuple[int, int]:
        """(rows, estimated bytes) of the traces table."""
        async with self._lock:
            rows = await self._conn.execute_fetchall(
                "SELECT count(*), coalesce(sum(size), 0) FROM traces"
            )
        count, body = next(iter(rows))
        return int(count), int(body) + int(count) * TRACE_ROW_OVERHEAD

    async def delete_traces_before(self, cutoff: float, *, limit: int) -> tuple[int, int]:
        """Delete up to ``limit`` traces older than ``cutoff`` (epoch seconds), oldest
        first, in one short transaction; return (rows, estimated bytes) deleted."""
        return await self._delete_traces(DELETE_TRACES_BEFORE, (cutoff, limit))

    async def delete_oldest_traces(self, *, limit: int) -> tuple[int, int]:
        """Delete the ``limit`` oldest traces in one short transaction; return (rows,
        estimated bytes) deleted."""
        return await self._delete_traces(DELETE_OLDEST_TRACES, (limit,))

    async def delete_usage_before(self, cutoff: float, *, limit: int) -> int:
        """Delete up to ``limit`` usage rows of the UTC hours before the one holding
        ``cutoff``, oldest first, in one short transaction; return how many. Whole hours
        go, so a report's first partial hour finds all its rows or none (see
        gw/store/usage_rollup.py); the rollup keeps their sums."""
        async with self._transaction():
            cursor = await self._conn.execute(DELETE_USAGE_BEFORE, (hour_start(cutoff), limit))
        return max(cursor.rowcount, 0)

    async def reclaim_space(self) -> int:
        """Hand free pages back to the file system when the database uses
        ``auto_vacuum = INCREMENTAL``, and return how many there were. Otherwise (the
        default) SQLite reuses free pages for new rows, so a pruned file stops growing at
        its high-water mark instead of shrinking; nothing is done and 0 returned."""
        async with self._lock:
            mode = next(iter(await self._conn.execute_fetchall("PRAGMA auto_vacuum")))[0]
            if int(mode) != AUTO_VACUUM_INCREMENTAL:
                return 0
            free = next(iter(await self._conn.execute_fetchall("PRAGMA freelist_count")))[0]
            await self._conn.execute_fetchall("PRAGMA incremental_vacuum")
        return int(free)

    async def _delete_traces(self, sql: str, params: tuple[float | int, ...]) -> tuple[int, int]:
        async with self._transaction():
            rows = await self._conn.execute_fetchall(sql, params)
        sizes = [int(row[0]) for row in rows]
        return len(sizes), sum(sizes) + len(sizes) * TRACE_ROW_OVERHEAD

    # -- machinery ------------------------------------------------------------------------

    async def _write_one(self, sql: str, params: Sequence[object]) -> None:
        """One write statement, atomic by itself (autocommit: see the module docstring)."""
        await self.writable()
        async with self._lock:
            await self._conn.execute(sql, params)

    async def writable(self) -> None:
        """Before a write: raise ``StoreUnavailableError`` while the opened file is gone (a
        write would go to an unlinked file, lost); once its directory is back, open the
        file at the path (created and migrated when new) and go on."""
        problem = self.file.gone()
        if problem is None:
            return
        if not self.file.directory_back():
            raise StoreUnavailableError(problem)
        async with self._lock:
            if self.file.gone() is None:  # another write reopened it meanwhile
                return
            logger.warning("%s: reopening it", problem.message)
            old, self._conn = self._conn, await _connect(self.path)
            self.file.rebind()
            with contextlib.suppress(sqlite3.Error):
                await old.close()
            for reader in self._readers:
                await reader.reset()
        await self._migrate()

    @asynccontextmanager
    async def _transaction(self) -> AsyncIterator[None]:
        await self.writable()
        async with self._lock:
            try:
                await self._conn.execute("BEGIN IMMEDIATE")
            except asyncio.CancelledError:
                # The statement runs on in aiosqlite's thread (waiting out a busy lock, say)
                # and may yet open the transaction: end it, or every later write on this
                # connection fails with "cannot start a transaction within a transaction".
                with contextlib.suppress(sqlite3.Error):
                    await self._conn.execute("ROLLBACK")
                raise
            try:
                yield
            except BaseException:
                await self._conn.execute("ROLLBACK")
                raise
            await self._conn.execute("COMMIT")

    async def _migrate(self) -> None:
        current = await self.schema_version()
        if not pending_migrations(current, location=str(self.path)):
            return
        async with self._transaction():
            # Read again under the write lock: another process may have migrated meanwhile.
            current = await self.schema_version()
            pending = pending_migrations(current, location=str(self.path))
            if not pending:
                return
            await self._conn.execute(SCHEMA_VERSION_TABLE)
            for migration in pending:
                for statement in migration.statements:
                    await self._conn.execute(statement)
                await self._conn.execute(
                    "INSERT INTO schema_version (version, applied_at, description)"
                    " VALUES (?, ?, ?)",
                    (migration.version, _time.time(), migration.description),
                )
            # PRAGMA takes no bound parameters; LATEST_VERSION is an int constant.
            await self._conn.execute(f"PRAGMA user_version = {LATEST_VERSION}")
            logger.info("migrated %s to schema version %d", self.path, LATEST_VERSION)


async def _connect(path: Path) -> aiosqlite.Connection:
    """A connection to ``path`` (created private when missing), in WAL mode."""
    await asyncio.to_thread(make_database_private, path)
    conn = await aiosqlite.connect(path, isolation_level=None)
    try:
        await conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        await _enter_wal(conn)
        await conn.execute("PRAGMA synchronous = NORMAL")
    except BaseException:
        await conn.close()
        raise
    return conn


async def _enter_wal(conn: aiosqlite.Connection) -> None:
    """``PRAGMA journal_mode = WAL``, waiting out a busy file as ``busy_timeout`` would.

    Why: the switch takes an exclusive lock, and SQLite answers "database is locked" at
    once, without its busy handler, while another connection holds the file; so two
    processes opening a new database together (``gw serve`` and a CLI command, or the
    gateways of a test) failed about one start in forty under load. A database already
    in WAL mode (the mode is kept in the file) never waits here.
    """
    deadline = _time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            await conn.execute("PRAGMA journal_mode = WAL")
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorcode != sqlite3.SQLITE_BUSY or _time.monotonic() > deadline:
                raise
            await asyncio.sleep(WAL_RETRY_S)
        else:
            return
