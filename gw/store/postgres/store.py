"""PostgresStore: the state of a fleet of gateways in one PostgreSQL database.

Opened with ``await PostgresStore.open(url)``: it checks the server (PostgreSQL 15 or
newer: the rollup's unique index needs ``NULLS NOT DISTINCT``), brings the schema up to
date under an advisory lock (gateways starting together apply each migration once), and
refuses a database written by a newer gw. Each concept has its module here, as in the
SQLite store; this class only puts them behind ``StateStore`` (gw/store/port.py).

Where a password appears in ``state.url`` it is never shown: ``location`` and every
error name the URL through ``safe_url``.
"""

from __future__ import annotations

import logging
import time as _time
from collections.abc import Sequence
from types import TracebackType
from typing import Final, Self

import asyncpg  # type: ignore[import-untyped]  # asyncpg 0.30 ships no type information

from gw.config.schema import TenantBudget
from gw.config.state_url import safe_url
from gw.ports import UsageRow
from gw.record import TraceRecord
from gw.store.api_keys import ApiKey
from gw.store.file_checks import StoreProblem
from gw.store.migrations import StoreError, postgres_pending
from gw.store.postgres.cached_answers import PgCachedAnswers
from gw.store.postgres.database import Database
from gw.store.postgres.gateways import Gateways
from gw.store.postgres.idempotency_keys import PgIdempotencyKeys
from gw.store.postgres.keys import Keys
from gw.store.postgres.response_jobs import PgResponseJobs
from gw.store.postgres.revisions import Revisions
from gw.store.postgres.runner import RunnerLock
from gw.store.postgres.runs import PgRuns
from gw.store.postgres.schema import SCHEMA_VERSION_TABLE
from gw.store.postgres.traces import Traces
from gw.store.postgres.usage import Recovery, Usage
from gw.store.revisions import RevisionRow, StoredRevision
from gw.store.usage import UsageGroup, UsageTotals

logger = logging.getLogger("gw.store")

MIN_SERVER_VERSION: Final = 150_000  # server_version_num of PostgreSQL 15.0
MIGRATION_LOCK: Final = 0x67770000  # pg_advisory_xact_lock key: "gw", migrations


class PostgresStore:
    """The PostgreSQL state store. Build it with ``await PostgresStore.open(url)``."""

    def __init__(self, db: Database, url: str) -> None:
        self._db = db
        self._location = safe_url(url)
        self._runner = RunnerLock(url)
        self._keys = Keys(db)
        self._usage = Usage(db)
        self._traces = Traces(db)
        self._revisions = Revisions(db)
        self._runs = PgRuns(db, self._runner)
        self._jobs = PgResponseJobs(db, self._runner)
        self._idempotency = PgIdempotencyKeys(db)

    @classmethod
    async def open(cls, url: str) -> Self:
        """Connect, check the server's version and bring the schema up to date.

        Raises ``StoreError`` (the URL shown without its password) when the server cannot
        be reached or is too old, ``SchemaTooNewError`` when a newer gw wrote it.
        """
        try:
            db = await Database.connect(url)
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
            raise StoreError(
                f"cannot connect to PostgreSQL at {safe_url(url)}: {type(exc).__name__}: {exc}"
            ) from None
        store = cls(db, url)
        try:
            await store._check_server()
            await store._migrate()
        except BaseException:
            await db.close()
            raise
        return store

    @property
    def location(self) -> str:
        return self._location

    async def close(self) -> None:
        try:
            await self._runner.release()
        finally:
            await self._db.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def schema_version(self) -> int:
        return int(await self._db.fetchval("SELECT coalesce(max(version), 0) FROM schema_version"))

    async def size_bytes(self) -> int | None:
        return None  # the server's disk, not this machine's: pg_database_size is for its admin

    # -- health ---------------------------------------------------------------------------

    async def writable(self) -> None:
        return  # nothing local to recover; ``ping`` tells whether the server answers

    async def local_problem(self) -> StoreProblem | None:
        return None

    async def ping(self) -> None:
        await self._db.fetchval("SELECT 1")

    # -- traces ---------------------------------------------------------------------------

    async def write_traces(self, traces: Sequence[TraceRecord]) -> None:
        await self._traces.write(traces)

    async def list_traces(
        self, *, limit: int = 20, client_request_id: str | None = None
    ) -> list[TraceRecord]:
        return await self._traces.newest(limit=limit, client_request_id=client_request_id)

    async def traces_between(self, since: float, until: float, *, limit: int) -> list[TraceRecord]:
        return await self._traces.between(since, until, limit=limit)

    async def traces_written_after(
        self, cursor: int | None, *, limit: int
    ) -> tuple[list[TraceRecord], int]:
        return await self._traces.written_after(cursor, limit=limit)

    async def get_trace(self, request_id: str) -> TraceRecord | None:
        return await self._traces.get(request_id)

    def request_path_traces(self) -> PostgresStore:
        return self  # the pool serves both; an admin read holds one connection, not all

    def response_jobs(self) -> PgResponseJobs:
        return self._jobs

    def cached_answers(self) -> PgCachedAnswers:
        return PgCachedAnswers(self._db)

    def idempotency_keys(self) -> PgIdempotencyKeys:
        return self._idempotency

    def runs(self) -> PgRuns:
        return self._runs

    def usage_recovery(self) -> Recovery:
        return Recovery(self._db)

    def gateways(self) -> Gateways:
        return Gateways(self._db)

    # -- config revisions -----------------------------------------------------------------

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
        return await self._revisions.record(
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
        return await self._revisions.list(limit=limit)

    async def get_revision(self, revision: int) -> StoredRevision | None:
        return await self._revisions.get(revision)

    # -- api keys -------------------------------------------------------------------------

    async def create_key(self, key: ApiKey) -> None:
        await self._keys.create(key)

    async def list_keys(self) -> list[ApiKey]:
        return await self._keys.list()

    async def set_key_budget(self, key_id: str, budget: TenantBudget) -> ApiKey | None:
        return await self._keys.set_budget(key_id, budget)

    async def revoke_key(self, key_id: str, *, time: float) -> ApiKey | None:
        return await self._keys.revoke(key_id, time=time)

    async def find_key_by_digest(self, digest: str) -> ApiKey | None:
        return await self._keys.by_digest(digest)

    async def count_active_keys(self, *, now: float) -> int:
        return await self._keys.count_active(now=now)

    # -- usage ledger ---------------------------------------------------------------------

    async def write_usage(self, rows: Sequence[UsageRow]) -> None:
        await self._usage.write(rows)

    async def usage_report(
        self, by: UsageGroup, since: float | None = None, tenant: str | None = None
    ) -> list[UsageTotals]:
        return await self._usage.report(by, since, tenant)

    async def budget_spend(self, wall: float) -> list[tuple[str, str, float]]:
        return await self._usage.budget_spend(wall)

    # -- retention ------------------------------------------------------------------------

    async def trace_volume(self) -> tuple[int, int]:
        return await self._traces.volume()

    async def delete_traces_before(self, cutoff: float, *, limit: int) -> tuple[int, int]:
        return await self._traces.delete_before(cutoff, limit=limit)

    async def delete_oldest_traces(self, *, limit: int) -> tuple[int, int]:
        return await self._traces.delete_oldest(limit=limit)

    async def delete_usage_before(self, cutoff: float, *, limit: int) -> int:
        return await self._usage.delete_before(cutoff, limit=limit)

    async def reclaim_space(self) -> int:
        return 0  # autovacuum hands dead rows' space back to the table

    # -- machinery ------------------------------------------------------------------------

    async def _check_server(self) -> None:
        number = int(await self._db.fetchval("SELECT current_setting('server_version_num')"))
        if number < MIN_SERVER_VERSION:
            raise StoreError(
                f"PostgreSQL at {self._location} is version {number // 10_000}; gw needs"
                " PostgreSQL 15 or newer (its usage rollup uses UNIQUE NULLS NOT DISTINCT)"
            )

    async def _migrate(self) -> None:
        """Apply what the database lacks, once across gateways: the advisory lock is held
        until the transaction ends, and the version is read again under it."""
        async with self._db.transaction() as conn:
            await conn.execute("SELECT pg_advisory_xact_lock($1)", MIGRATION_LOCK)
            await conn.execute(SCHEMA_VERSION_TABLE)
            current = int(
                await conn.fetchval("SELECT coalesce(max(version), 0) FROM schema_version")
            )
            pending = postgres_pending(current, location=self._location)
            for migration in pending:
                for statement in migration.postgres or ():
                    await conn.execute(statement)
                await conn.execute(
                    "INSERT INTO schema_version (version, applied_at, description)"
                    " VALUES ($1, $2, $3)",
                    migration.version,
                    _time.time(),
                    migration.description,
                )
        if pending:
            logger.info("migrated %s to schema version %d", self._location, pending[-1].version)
