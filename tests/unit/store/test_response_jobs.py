"""The background Responses jobs table against a real SQLite file: the queue's order and
per-tenant limit, the states a job goes through, and content that leaves no trace on disk
(in the database file or its write-ahead log) once it is cleared."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import pytest

from gw.store import SqliteStore
from gw.store.response_jobs import Job, JobExistsError, ResponseJobs

T = TypeVar("T")
NOW = 1_800_000_000.0


def with_jobs(path: Path, body: Callable[[ResponseJobs], Awaitable[T]]) -> T:
    """``body`` with the jobs of a store at ``path``, whose connection starts with
    ``secure_delete`` off, as SQLite builds without SQLITE_SECURE_DELETE do (Debian's has
    it on). Disk checks belong inside ``body``: closing the store empties the -wal."""

    async def main() -> T:
        async with await SqliteStore.open(path) as store:
            await store._conn.execute("PRAGMA secure_delete = 0")
            return await body(store.response_jobs())

    return asyncio.run(main())


def job(n: int, tenant: str | None = "t", created_at: float = NOW) -> Job:
    return Job(
        request_id=f"req_{n:04d}",
        tenant=tenant,
        key_id=None if tenant is None else f"key_{tenant}",
        model="chat",
        status="queued",
        created_at=created_at + n,
    )


def on_disk(path: Path) -> bytes:
    """Every byte SQLite keeps for the database: the file and its -wal."""
    return b"".join(
        p.read_bytes() for p in (path, path.with_name(path.name + "-wal")) if p.exists()
    )


def marker(name: str) -> bytes:
    # Stored as-is by the table (sealing happens above it): bigger than a page, so it
    # spills to overflow pages, which must be wiped too.
    return (f"<{name}>".encode() * 800)[:6000]


def test_jobs_run_in_the_order_they_were_queued_and_each_once(tmp_path: Path) -> None:
    async def body(jobs: ResponseJobs) -> list[str]:
        for n in (2, 1, 3):
            assert await jobs.enqueue(job(n), b"request", limit=10) is None
        claimed = []
        while (next_job := await jobs.claim(now=NOW + 10)) is not None:
            claimed.append(next_job[0].request_id)
            assert next_job[0].status == "in_progress"
            assert next_job[1] == b"request"
        return claimed

    assert with_jobs(tmp_path / "gw.db", body) == ["req_0001", "req_0002", "req_0003"]


def test_a_tenant_may_have_only_so_many_queued_or_running(tmp_path: Path) -> None:
    async def body(jobs: ResponseJobs) -> list[int | None]:
        results = [await jobs.enqueue(job(n), b"r", limit=2) for n in (1, 2)]
        await jobs.claim(now=NOW)  # running still counts
        results.append(await jobs.enqueue(job(3), b"r", limit=2))
        results.append(await jobs.enqueue(job(4, tenant="other"), b"r", limit=2))
        results.append(await jobs.enqueue(job(5, tenant=None), b"r", limit=2))
        await jobs.cancel("req_0002", now=NOW)  # an ended job frees its place
        results.append(await jobs.enqueue(job(6), b"r", limit=2))
        with pytest.raises(JobExistsError):
            await jobs.enqueue(job(6), b"r", limit=9)
        return results

    assert with_jobs(tmp_path / "gw.db", body) == [None, None, 2, None, None, None]


def test_an_answer_not_yet_fetched_still_counts_against_the_limit(tmp_path: Path) -> None:
    async def body(jobs: ResponseJobs) -> list[int | None]:
        results = [await jobs.enqueue(job(1), b"r", limit=1)]
        await jobs.claim(now=NOW)
        await jobs.finish("req_0001", "completed", now=NOW, expires_at=NOW + 60, result=b"a")
        results.append(await jobs.enqueue(job(2), b"r", limit=1))  # its content is held
        await jobs.take_result("req_0001")  # fetched: the content is gone, the place free
        results.append(await jobs.enqueue(job(3), b"r", limit=1))
        return results

    assert with_jobs(tmp_path / "gw.db", body) == [None, 1, None]


def test_a_result_is_handed_out_once_and_then_gone_from_disk(tmp_path: Path) -> None:
    path = tmp_path / "gw.db"
    request, result = marker("REQUEST-SECRET"), marker("RESULT-SECRET")

    async def body(jobs: ResponseJobs) -> None:
        await jobs.enqueue(job(1), request, limit=5)
        claimed = await jobs.claim(now=NOW + 1)
        assert claimed is not None
        assert await jobs.take_result("req_0001") is None  # still running: nothing yet
        ended = await jobs.finish(
            "req_0001", "completed", now=NOW + 2, expires_at=NOW + 60, result=result
        )
        assert ended
        assert b"RESULT-SECRET" in on_disk(path)  # the table stores what it is given
        assert await jobs.take_result("req_0001") == result
        assert await jobs.take_result("req_0001") is None
        done = await jobs.get("req_0001")
        assert done is not None
        assert (done.status, done.content) == ("completed", "fetched")
        assert await jobs.content("req_0001") is not None
        disk = on_disk(path)
        assert b"RESULT-SECRET" not in disk
        assert b"REQUEST-SECRET" not in disk

    with_jobs(path, body)


def test_retention_clears_content_and_later_forgets_the_job(tmp_path: Path) -> None:
    path = tmp_path / "gw.db"

    async def body(jobs: ResponseJobs) -> tuple[object, ...]:
        await jobs.enqueue(job(1), marker("KEPT-TOO-LONG"), limit=5)
        await jobs.claim(now=NOW)
        await jobs.finish("req_0001", "completed", now=NOW, expires_at=NOW + 60, result=b"r")
        early = await jobs.expire(now=NOW + 59, forget_before=NOW - 1)
        late = await jobs.expire(now=NOW + 60, forget_before=NOW - 1)
        state = await jobs.get("req_0001")
        assert b"KEPT-TOO-LONG" not in on_disk(path)
        forgotten = await jobs.expire(now=NOW + 61, forget_before=NOW + 1)
        return early, late, state and state.content, forgotten, await jobs.get("req_0001")

    assert with_jobs(path, body) == ((0, 0), (1, 0), "expired", (0, 1), None)


def test_cancel_and_failure_discard_content_and_a_cancelled_job_is_not_finished(
    tmp_path: Path,
) -> None:
    path = tmp_path / "gw.db"

    async def body(jobs: ResponseJobs) -> tuple[object, ...]:
        await jobs.enqueue(job(1), marker("CANCELLED-BODY"), limit=5)
        await jobs.enqueue(job(2), marker("FAILED-BODY"), limit=5)
        await jobs.claim(now=NOW)
        await jobs.claim(now=NOW)
        cancelled = await jobs.cancel("req_0001", now=NOW + 1)
        again = await jobs.cancel("req_0001", now=NOW + 2)
        late = await jobs.finish("req_0001", "completed", now=NOW + 3, expires_at=NOW, result=b"r")
        failed = await jobs.finish(
            "req_0002", "failed", now=NOW + 3, expires_at=NOW, error=("upstream_error", "502")
        )
        one, two = await jobs.get("req_0001"), await jobs.get("req_0002")
        assert one is not None
        assert two is not None
        disk = on_disk(path)
        assert b"CANCELLED-BODY" not in disk
        assert b"FAILED-BODY" not in disk
        return cancelled, again, late, failed, one.status, two.status, two.error_code, two.content

    assert with_jobs(path, body) == (
        True, False, False, True, "cancelled", "failed", "upstream_error", "discarded",
    )  # fmt: skip


def test_jobs_a_killed_gw_left_running_are_failed_at_start_and_queued_ones_stay(
    tmp_path: Path,
) -> None:
    path = tmp_path / "gw.db"

    async def body(jobs: ResponseJobs) -> tuple[object, ...]:
        await jobs.enqueue(job(1), marker("CUT-MID-RUN"), limit=5)
        await jobs.enqueue(job(2), b"waiting", limit=5)
        await jobs.claim(now=NOW)
        failed = await jobs.interrupted(now=NOW + 5, message="gw stopped")
        assert b"CUT-MID-RUN" not in on_disk(path)
        return (failed,)

    assert with_jobs(path, body) == (1,)

    async def after(jobs: ResponseJobs) -> tuple[object, ...]:
        cut, waiting = await jobs.get("req_0001"), await jobs.get("req_0002")
        assert cut is not None
        assert waiting is not None
        return cut.status, cut.error_message, waiting.status, await jobs.waiting()

    assert with_jobs(path, after) == ("failed", "gw stopped", "queued", 1)


def test_delete_removes_the_job_and_its_content(tmp_path: Path) -> None:
    path = tmp_path / "gw.db"

    async def body(jobs: ResponseJobs) -> tuple[bool, bool, object]:
        await jobs.enqueue(job(1), marker("DELETED-BODY"), limit=5)
        return (
            await jobs.delete("req_0001"),
            await jobs.delete("req_0001"),
            await jobs.get("req_0001"),
        )

    assert with_jobs(path, body) == (True, False, None)
    assert b"DELETED-BODY" not in on_disk(path)
