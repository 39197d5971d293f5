"""The ``response_jobs`` table: background Responses requests, queued durably.

A job is queued (its request body sealed), claimed by the worker (``in_progress``), and
ends ``completed`` / ``incomplete`` (its answer sealed), ``failed`` or ``cancelled``.
Its content, the sealed request and result, is held only while it is needed: it is
cleared when the result is fetched (``content: fetched``), when the retention after the
job's end runs out (``expired``), or at once when there is nothing to hand out
(``discarded``: failed, cancelled). What stays is metadata: who, which route, status,
times, gw's error code and message (never the upstream's words, never the prompt).

Clearing content must leave nothing on disk. Every write to the table runs with
``secure_delete`` on (SQLite overwrites freed bytes with zeros, overflow pages included; it
rewrites a whole row on any change, so a status update frees pages that held content
too), and after content is cleared a ``wal_checkpoint(TRUNCATE)`` empties the write-ahead
log, whose older frames still held page images with it. Everything here runs on the
state store's own connection and lock (``SqliteStore.response_jobs``).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Final, Literal

import aiosqlite
import msgspec

from gw.store.migrations import StoreError

logger = logging.getLogger("gw.store")

JobStatus = Literal["queued", "in_progress", "completed", "incomplete", "failed", "cancelled"]
ContentState = Literal["held", "fetched", "expired", "discarded"]
WAITING: Final = ("queued", "in_progress")
ENDED: Final = ("completed", "incomplete", "failed", "cancelled")
Transaction = Callable[[], AbstractAsyncContextManager[None]]

JOB_COLUMNS: Final = (
    "request_id, tenant, key_id, model, status, created_at, started_at, finished_at,"
    " expires_at, error_code, error_message, content"
)


class JobExistsError(StoreError):
    """A job with this request id is already stored."""


class Job(msgspec.Struct, frozen=True, kw_only=True):
    """A job's metadata (no content)."""

    request_id: str
    tenant: str | None
    key_id: str | None
    model: str  # the route (or provider/model) the client named
    status: JobStatus
    created_at: float
    started_at: float | None = None
    finished_at: float | None = None
    expires_at: float | None = None  # when the content goes, unless fetched before
    error_code: str | None = None
    error_message: str | None = None
    content: ContentState = "held"

    @property
    def ended(self) -> bool:
        return self.status in ENDED


class SealedContent(msgspec.Struct, frozen=True, kw_only=True):
    """A job's sealed request and result, as stored (either may be gone)."""

    request: bytes | None
    result: bytes | None


def job_from_row(row: Sequence[object]) -> Job:
    return Job(
        request_id=str(row[0]),
        tenant=None if row[1] is None else str(row[1]),
        key_id=None if row[2] is None else str(row[2]),
        model=str(row[3]),
        status=str(row[4]),  # type: ignore[arg-type]  # written by this module only
        created_at=float(row[5]),  # type: ignore[arg-type]
        started_at=None if row[6] is None else float(row[6]),  # type: ignore[arg-type]
        finished_at=None if row[7] is None else float(row[7]),  # type: ignore[arg-type]
        expires_at=None if row[8] is None else float(row[8]),  # type: ignore[arg-type]
        error_code=None if row[9] is None else str(row[9]),
        error_message=None if row[10] is None else str(row[10]),
        content=str(row[11]),  # type: ignore[arg-type]
    )


class ResponseJobs:
    """The jobs table on the store's connection; ``lock`` and ``transaction`` are the
    store's, so job writes and trace writes never interleave a transaction."""

    def __init__(
        self,
        conn: Callable[[], aiosqlite.Connection],
        lock: AbstractAsyncContextManager[object],
        transaction: Transaction,
    ) -> None:
        self._conn = conn  # read at each use: the store reopens a database that vanished
        self._lock = lock
        self._transaction = transaction

    async def enqueue(self, job: Job, request: bytes, *, limit: int) -> int | None:
        """Store a queued job with its sealed request, unless its tenant already has
        ``limit`` jobs queued or running, or ended with their answer not yet fetched (each
        holds its content on disk until then): nothing is written and that count returned."""
        async with self._transaction():
            rows = await self._conn().execute_fetchall(
                "SELECT count(*) FROM response_jobs WHERE tenant IS ?"
                " AND (status IN (?, ?) OR content = 'held')",
                (job.tenant, *WAITING),
            )
            waiting = int(next(iter(rows))[0])
            if waiting >= limit:
                return waiting
            try:
                await self._conn().execute(
                    f"INSERT INTO response_jobs ({JOB_COLUMNS}, request)"  # noqa: S608 - fixed columns
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (*msgspec.structs.astuple(job), request),
                )
            except aiosqlite.IntegrityError:
                raise JobExistsError(f"job {job.request_id} exists") from None
        return None

    async def get(self, request_id: str) -> Job | None:
        async with self._lock:
            rows = await self._conn().execute_fetchall(
                f"SELECT {JOB_COLUMNS} FROM response_jobs WHERE request_id = ?",  # noqa: S608
                (request_id,),
            )
        row = next(iter(rows), None)
        return None if row is None else job_from_row(row)

    async def content(self, request_id: str) -> SealedContent | None:
        async with self._lock:
            rows = await self._conn().execute_fetchall(
                "SELECT request, result FROM response_jobs WHERE request_id = ?", (request_id,)
            )
        row = next(iter(rows), None)
        return None if row is None else SealedContent(request=row[0], result=row[1])

    async def claim(self, *, now: float) -> tuple[Job, bytes] | None:
        """The oldest queued job, now ``in_progress``, with its sealed request."""
        async with self._transaction(), self._secure_delete():
            rows = await self._conn().execute_fetchall(
                f"SELECT {JOB_COLUMNS}, request FROM response_jobs WHERE status = 'queued'"  # noqa: S608
                " ORDER BY created_at, request_id LIMIT 1"
            )
            row = next(iter(rows), None)
            if row is None:
                return None
            await self._conn().execute(  # secure: the row, content included, is rewritten
                "UPDATE response_jobs SET status = 'in_progress', started_at = ?"
                " WHERE request_id = ?",
                (now, row[0]),
            )
        job = msgspec.structs.replace(job_from_row(row), status="in_progress", started_at=now)
        return job, bytes(row[12])

    async def finish(
        self,
        request_id: str,
        status: JobStatus,
        *,
        now: float,
        expires_at: float,
        result: bytes | None = None,
        error: tuple[str, str] | None = None,
    ) -> bool:
        """End a running job: its sealed ``result`` kept until ``expires_at``, or (no
        result) its content cleared. False when it no longer runs (cancelled meanwhile)."""
        code, message = error if error is not None else (None, None)
        if result is not None:
            sql = (
                "UPDATE response_jobs SET status = ?, finished_at = ?, expires_at = ?,"
                " error_code = ?, error_message = ?, result = ?"
                " WHERE request_id = ? AND status = 'in_progress'"
            )
            return await self._update(
                sql, (status, now, expires_at, code, message, result, request_id)
            )
        sql = (
            "UPDATE response_jobs SET status = ?, finished_at = ?, expires_at = ?,"
            " error_code = ?, error_message = ?, content = ?, request = NULL, result = NULL"
            " WHERE request_id = ? AND status = 'in_progress'"
        )
        params = (status, now, expires_at, code, message, "discarded", request_id)
        return await self._update(sql, params, clears=True)

    async def cancel(self, request_id: str, *, now: float) -> bool:
        """Cancel a queued or running job, its content cleared; False when it had ended."""
        sql = (
            "UPDATE response_jobs SET status = 'cancelled', finished_at = ?, content = ?,"
            " request = NULL, result = NULL WHERE request_id = ? AND status IN (?, ?)"
        )
        return await self._update(sql, (now, "discarded", request_id, *WAITING), clears=True)

    async def take_result(self, request_id: str) -> bytes | None:
        """The sealed result of an ended job, cleared in the same transaction (it is handed
        out once); None when there is none (not ended, or already fetched or expired)."""
        async with self._transaction():
            rows = await self._conn().execute_fetchall(
                "SELECT result FROM response_jobs WHERE request_id = ? AND content = 'held'"
                " AND result IS NOT NULL",
                (request_id,),
            )
            row = next(iter(rows), None)
            if row is None:
                return None
            async with self._secure_delete():
                await self._conn().execute(
                    "UPDATE response_jobs SET content = ?, request = NULL, result = NULL"
                    " WHERE request_id = ?",
                    ("fetched", request_id),
                )
        await self._truncate_wal()
        return bytes(row[0])

    async def delete(self, request_id: str) -> bool:
        """Delete a job and everything it held; False when there was none."""
        sql = "DELETE FROM response_jobs WHERE request_id = ?"
        return await self._update(sql, (request_id,), clears=True)

    async def interrupted(self, *, now: float, message: str) -> int:
        """At start: jobs left ``in_progress`` by a gw that ended mid-run (killed) are
        failed with ``message``; how many."""
        sql = (
            "UPDATE response_jobs SET status = 'failed', finished_at = ?, expires_at = ?,"
            " error_code = 'internal_error', error_message = ?, content = ?, request = NULL,"
            " result = NULL WHERE status = 'in_progress'"
        )
        return await self._count(sql, (now, now, message, "discarded"))

    async def expire(self, *, now: float, forget_before: float) -> tuple[int, int]:
        """Clear the content of ended jobs whose retention ran out, and delete the rows of
        jobs that ended before ``forget_before``; (cleared, deleted)."""
        cleared = await self._count(
            "UPDATE response_jobs SET content = ?, request = NULL, result = NULL"
            " WHERE content = 'held' AND finished_at IS NOT NULL AND expires_at <= ?",
            ("expired", now),
        )
        deleted = await self._count(
            "DELETE FROM response_jobs WHERE finished_at IS NOT NULL AND finished_at < ?",
            (forget_before,),
        )
        return cleared, deleted

    async def waiting(self) -> int:
        """Jobs queued or running, all tenants."""
        async with self._lock:
            rows = await self._conn().execute_fetchall(
                "SELECT count(*) FROM response_jobs WHERE status IN (?, ?)", WAITING
            )
        return int(next(iter(rows))[0])

    # -- machinery ------------------------------------------------------------------------

    async def _update(self, sql: str, params: Sequence[object], *, clears: bool = False) -> bool:
        return await self._count(sql, params, clears=clears) > 0

    async def _count(self, sql: str, params: Sequence[object], *, clears: bool = True) -> int:
        """Run one write; every write to this table runs with ``secure_delete``: SQLite
        rewrites a whole row on any change, so even a status update frees the pages that
        held the content. ``clears``: content went, so the log is emptied after."""
        async with self._transaction(), self._secure_delete():
            cursor = await self._conn().execute(sql, params)
            changed = cursor.rowcount
        if clears and changed:
            await self._truncate_wal()
        return changed

    @asynccontextmanager
    async def _secure_delete(self) -> AsyncIterator[None]:
        """Freed bytes overwritten with zeros for the statements inside; the connection's
        own setting (a build default: on in Debian's SQLite, off in others) after."""
        rows = await self._conn().execute_fetchall("PRAGMA secure_delete")
        before = int(next(iter(rows))[0])
        await self._conn().execute("PRAGMA secure_delete = 1")
        try:
            yield
        finally:
            # A PRAGMA takes no bound parameters; ``before`` is an int SQLite gave.
            await self._conn().execute(f"PRAGMA secure_delete = {before}")

    async def _truncate_wal(self) -> None:
        """Copy the log into the database and empty it, so no older page image with the
        cleared content stays in ``-wal``. A reader (a CLI command) may hold it back: then
        the next clear or the next automatic checkpoint does it."""
        async with self._lock:
            rows = await self._conn().execute_fetchall("PRAGMA wal_checkpoint(TRUNCATE)")
        busy = next(iter(rows), (0,))[0]
        if busy:
            logger.info("the write-ahead log could not be emptied yet (a reader holds it)")
