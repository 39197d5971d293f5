"""Background Responses jobs in PostgreSQL (gw/store/response_jobs.py documents the life
of a job and each call).

What differs from SQLite: several gateways share the queue, so ``claim`` takes the oldest
queued job ``FOR UPDATE SKIP LOCKED`` (two workers never run one job) and records its
runner, ``interrupted`` fails only the jobs of runners that are gone
(gw/store/postgres/runner.py), and ``enqueue`` counts a tenant's jobs under an advisory
lock on the tenant (two gateways cannot both take its last place). Content is cleared by
setting it NULL; the server reclaims the space (VACUUM), and SQLite's ``secure_delete``
and log truncation have no counterpart a client can ask for.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import asyncpg  # type: ignore[import-untyped]  # asyncpg 0.30 ships no type information
import msgspec

from gw.store.postgres.database import Database, affected
from gw.store.postgres.runner import RunnerLock, gone
from gw.store.postgres.sql import numbered
from gw.store.response_jobs import (
    JOB_COLUMNS,
    WAITING,
    Job,
    JobExistsError,
    JobStatus,
    SealedContent,
    job_from_row,
)

TENANT_LOCK: Final = "gw.response_jobs:"  # + tenant, hashed to an advisory lock key


class PgResponseJobs:
    def __init__(self, db: Database, runner: RunnerLock) -> None:
        self._db = db
        self._runner = runner

    async def enqueue(self, job: Job, request: bytes, *, limit: int) -> int | None:
        async with self._db.transaction() as conn:
            await conn.execute(
                "SELECT pg_advisory_xact_lock(hashtext($1))", TENANT_LOCK + (job.tenant or "")
            )
            waiting = int(
                await conn.fetchval(
                    numbered(
                        "SELECT count(*) FROM response_jobs WHERE tenant IS NOT DISTINCT FROM ?"
                        " AND (status IN (?, ?) OR content = 'held')"
                    ),
                    job.tenant,
                    *WAITING,
                )
            )
            if waiting >= limit:
                return waiting
            try:
                await conn.execute(
                    numbered(
                        f"INSERT INTO response_jobs ({JOB_COLUMNS}, request)"  # noqa: S608 - fixed columns
                        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                    ),
                    *msgspec.structs.astuple(job),
                    request,
                )
            except asyncpg.UniqueViolationError:
                raise JobExistsError(f"job {job.request_id} exists") from None
        return None

    async def get(self, request_id: str) -> Job | None:
        row = await self._db.fetchrow(
            f"SELECT {JOB_COLUMNS} FROM response_jobs WHERE request_id = ?",  # noqa: S608
            request_id,
        )
        return None if row is None else job_from_row(tuple(row))

    async def content(self, request_id: str) -> SealedContent | None:
        row = await self._db.fetchrow(
            "SELECT request, result FROM response_jobs WHERE request_id = ?", request_id
        )
        return None if row is None else SealedContent(request=row[0], result=row[1])

    async def claim(self, *, now: float) -> tuple[Job, bytes] | None:
        runner = await self._runner.hold()
        row = await self._db.fetchrow(
            "UPDATE response_jobs SET status = 'in_progress', started_at = ?, runner = ?"  # noqa: S608 - fixed column names
            " WHERE request_id = (SELECT request_id FROM response_jobs WHERE status = 'queued'"
            " ORDER BY created_at, request_id LIMIT 1 FOR UPDATE SKIP LOCKED)"
            f" RETURNING {JOB_COLUMNS}, request",
            now,
            runner,
        )
        if row is None:
            return None
        return job_from_row(tuple(row)), bytes(row[12])

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
        code, message = error if error is not None else (None, None)
        if result is not None:
            sql = (
                "UPDATE response_jobs SET status = ?, finished_at = ?, expires_at = ?,"
                " error_code = ?, error_message = ?, result = ?"
                " WHERE request_id = ? AND status = 'in_progress'"
            )
            return await self._changed(
                sql, (status, now, expires_at, code, message, result, request_id)
            )
        sql = (
            "UPDATE response_jobs SET status = ?, finished_at = ?, expires_at = ?,"
            " error_code = ?, error_message = ?, content = ?, request = NULL, result = NULL"
            " WHERE request_id = ? AND status = 'in_progress'"
        )
        return await self._changed(
            sql, (status, now, expires_at, code, message, "discarded", request_id)
        )

    async def cancel(self, request_id: str, *, now: float) -> bool:
        sql = (
            "UPDATE response_jobs SET status = 'cancelled', finished_at = ?, content = ?,"
            " request = NULL, result = NULL WHERE request_id = ? AND status IN (?, ?)"
        )
        return await self._changed(sql, (now, "discarded", request_id, *WAITING))

    async def take_result(self, request_id: str) -> bytes | None:
        """Handed out once: the row is locked, read and cleared in one statement."""
        row = await self._db.fetchrow(
            "UPDATE response_jobs AS j SET content = 'fetched', request = NULL, result = NULL"
            " FROM (SELECT request_id, result FROM response_jobs WHERE request_id = ?"
            " AND content = 'held' AND result IS NOT NULL FOR UPDATE) AS old"
            " WHERE j.request_id = old.request_id RETURNING old.result",
            request_id,
        )
        return None if row is None else bytes(row[0])

    async def delete(self, request_id: str) -> bool:
        return await self._changed("DELETE FROM response_jobs WHERE request_id = ?", (request_id,))

    async def interrupted(self, *, now: float, message: str) -> int:
        """Fail the jobs left running by gateways that are gone (not those running now on
        another gateway of the fleet)."""
        async with self._db.transaction() as conn:
            rows = await conn.fetch(
                "SELECT DISTINCT runner FROM response_jobs"
                " WHERE status = 'in_progress' AND runner IS NOT NULL"
            )
            dead = await gone(conn, [int(row[0]) for row in rows])
            status = await conn.execute(
                numbered(
                    "UPDATE response_jobs SET status = 'failed', finished_at = ?,"
                    " expires_at = ?, error_code = 'internal_error', error_message = ?,"
                    " content = ?, request = NULL, result = NULL WHERE status = 'in_progress'"
                    " AND (runner IS NULL OR runner = ANY(?::integer[]))"
                ),
                now,
                now,
                message,
                "discarded",
                dead,
            )
        return affected(status)

    async def expire(self, *, now: float, forget_before: float) -> tuple[int, int]:
        cleared = await self._db.execute(
            "UPDATE response_jobs SET content = ?, request = NULL, result = NULL"
            " WHERE content = 'held' AND finished_at IS NOT NULL AND expires_at <= ?",
            "expired",
            now,
        )
        deleted = await self._db.execute(
            "DELETE FROM response_jobs WHERE finished_at IS NOT NULL AND finished_at < ?",
            forget_before,
        )
        return cleared, deleted

    async def waiting(self) -> int:
        return int(
            await self._db.fetchval(
                "SELECT count(*) FROM response_jobs WHERE status IN (?, ?)", *WAITING
            )
        )

    async def _changed(self, sql: str, params: Sequence[object]) -> bool:
        return await self._db.execute(sql, *params) > 0
