"""The store contract: config revisions, runs, background jobs and migrations."""

from __future__ import annotations

import asyncio

import pytest
from store_targets import Target, run

from gw.store.migrations import LATEST_VERSION, MIGRATIONS, SchemaTooNewError
from gw.store.port import StateStore
from gw.store.response_jobs import Job, JobExistsError

NOW = 1_800_000_000.0


def test_revisions_grow_by_one_per_distinct_config(target: Target) -> None:
    async def body(store: StateStore) -> None:
        first = await store.record_revision(config_hash="a", source="start", time=1.0)
        same = await store.record_revision(
            config_hash="a", source="start", time=2.0, content="text", redacted="{}"
        )
        second = await store.record_revision(config_hash="b", source="reload", time=3.0)
        assert (first, same, second) == (1, 1, 2)
        assert [(r.revision, r.source) for r in await store.list_revisions()] == [
            (2, "reload"),
            (1, "start"),
        ]
        assert [r.revision for r in await store.list_revisions(limit=1)] == [2]
        stored = await store.get_revision(1)
        assert stored is not None
        assert (stored.content, stored.redacted) == ("text", "{}")
        assert await store.get_revision(9) is None

    run(target, body)


def test_a_revision_keeps_who_made_it_and_why(target: Target) -> None:
    async def body(store: StateStore) -> None:
        await store.record_revision(config_hash="a", source="start", time=1.0)
        await store.record_revision(
            config_hash="b", source="admin", time=2.0, content="x: 1\n", actor="key_1",
            reason="incident 42",
        )  # fmt: skip
        newest, oldest = await store.list_revisions()
        assert (newest.actor, newest.reason) == ("key_1", "incident 42")
        assert (oldest.actor, oldest.reason) == (None, None)
        stored = await store.get_revision(2)
        assert stored is not None
        assert (stored.actor, stored.reason, stored.content) == ("key_1", "incident 42", "x: 1\n")

    run(target, body)


def test_revisions_recorded_at_once_stay_one_sequence(target: Target) -> None:
    """Gateways starting together (here: tasks on one store) never share a number."""

    async def body(store: StateStore) -> list[int]:
        return list(
            await asyncio.gather(
                *(
                    store.record_revision(config_hash=f"h{n}", source="start", time=float(n))
                    for n in range(6)
                )
            )
        )

    assert sorted(run(target, body)) == [1, 2, 3, 4, 5, 6]


def test_a_run_is_recorded_and_the_next_start_sees_it(target: Target) -> None:
    async def body(store: StateStore) -> None:
        runs = store.runs()
        first, previous = await runs.begin(100.0)
        assert previous is None
        await runs.record_lost(first, routed=2, unrouted=1)
        second, previous = await runs.begin(200.0)
        assert second > first
        assert previous is not None
        assert previous.routed_lost is None
        assert previous.unrouted_lost == 1
        await runs.record_counted(first, routed_lost=3, counted_from=100.0)
        await runs.record_lost(second, routed=0, unrouted=0, stopped_at=250.0)
        _, previous = await runs.begin(300.0)
        assert previous is not None
        assert previous.stopped_at == 250.0
        assert await runs.count_routed_lost(0.0, 1000.0, gateway=None) == (0, 0.0)

    run(target, body)


def job(n: int, tenant: str | None = "t") -> Job:
    return Job(
        request_id=f"resp_{n}",
        tenant=tenant,
        key_id=None,
        model="chat",
        status="queued",
        created_at=NOW + n,
    )


def test_jobs_are_queued_claimed_once_finished_and_fetched_once(target: Target) -> None:
    async def body(store: StateStore) -> None:
        jobs = store.response_jobs()
        assert await jobs.enqueue(job(1), b"request-1", limit=2) is None
        assert await jobs.enqueue(job(2), b"request-2", limit=2) is None
        assert await jobs.enqueue(job(3), b"request-3", limit=2) == 2  # the tenant's limit
        assert await jobs.enqueue(job(4, tenant=None), b"r", limit=2) is None
        with pytest.raises(JobExistsError):
            await jobs.enqueue(job(1), b"again", limit=9)
        assert await jobs.waiting() == 3
        claimed = await jobs.claim(now=NOW + 10)
        assert claimed is not None
        assert (claimed[0].request_id, claimed[0].status, claimed[1]) == (
            "resp_1",
            "in_progress",
            b"request-1",
        )
        assert await jobs.finish(
            "resp_1", "completed", now=NOW + 20, expires_at=NOW + 99, result=b"answer"
        )
        assert not await jobs.finish("resp_1", "failed", now=NOW + 21, expires_at=NOW + 99)
        assert await jobs.take_result("resp_1") == b"answer"
        assert await jobs.take_result("resp_1") is None  # handed out once
        done = await jobs.get("resp_1")
        assert done is not None
        assert (done.status, done.content) == ("completed", "fetched")
        content = await jobs.content("resp_1")
        assert content is not None
        assert (content.request, content.result) == (None, None)
        assert await jobs.cancel("resp_2", now=NOW + 30)
        assert not await jobs.cancel("resp_2", now=NOW + 31)
        running = await jobs.claim(now=NOW + 40)
        assert running is not None
        assert running[0].request_id == "resp_4"
        assert await jobs.finish("resp_4", "failed", now=NOW + 41, expires_at=NOW + 41)
        assert await jobs.claim(now=NOW + 60) is None
        assert await jobs.expire(now=NOW + 100, forget_before=NOW + 45) == (0, 3)
        await jobs.enqueue(job(5), b"r", limit=9)
        assert await jobs.delete("resp_5")
        assert await jobs.get("resp_5") is None

    run(target, body)


def test_two_stores_opening_a_fresh_database_together_migrate_it_once(target: Target) -> None:
    async def body() -> list[int]:
        stores = await asyncio.gather(target.open(), target.open(), target.open())
        try:
            return [await store.schema_version() for store in stores]
        finally:
            for store in stores:
                await store.close()

    assert asyncio.run(body()) == [LATEST_VERSION] * 3
    if target.engine == "postgres":
        rows = run(target, lambda store: _migration_rows(target))
        # the baseline and each migration after it, applied once
        assert sorted(rows) == [(m.version, 1) for m in MIGRATIONS if m.version >= 9]


async def _migration_rows(target: Target) -> list[tuple[int, int]]:
    import asyncpg  # noqa: PLC0415 - the PostgreSQL case only

    conn = await asyncpg.connect(target.url)
    try:
        rows = await conn.fetch("SELECT version, count(*) FROM schema_version GROUP BY version")
    finally:
        await conn.close()
    return [(int(r[0]), int(r[1])) for r in rows]


def test_a_database_from_a_newer_gw_is_refused(target: Target) -> None:
    async def bump() -> None:
        if target.engine == "sqlite":
            import aiosqlite  # noqa: PLC0415

            async with aiosqlite.connect(target.path) as conn:
                await conn.execute(f"PRAGMA user_version = {LATEST_VERSION + 1}")
                await conn.commit()
            return
        import asyncpg  # noqa: PLC0415

        conn = await asyncpg.connect(target.url)
        try:
            await conn.execute(
                "INSERT INTO schema_version VALUES ($1, 0, 'from the future')",
                LATEST_VERSION + 1,
            )
        finally:
            await conn.close()

    run(target, lambda store: store.schema_version())
    asyncio.run(bump())
    with pytest.raises(SchemaTooNewError, match="newer gw"):
        run(target, lambda store: store.schema_version())


def test_a_start_fails_the_jobs_a_gateway_that_ended_left_running(target: Target) -> None:
    async def body() -> tuple[int, str | None]:
        async with await target.open() as ended:
            await ended.response_jobs().enqueue(job(1), b"r", limit=9)
            assert await ended.response_jobs().claim(now=NOW) is not None
        async with await target.open() as starting:
            jobs = starting.response_jobs()
            failed = await jobs.interrupted(now=NOW + 1, message="gw stopped mid-run")
            found = await jobs.get("resp_1")
            return failed, None if found is None else found.status

    assert asyncio.run(body()) == (1, "failed")


def test_a_start_leaves_the_jobs_another_live_gateway_runs(target: Target) -> None:
    if target.engine == "sqlite":
        pytest.skip("one gw serve per SQLite state dir (gw/store/serve_lock.py): no other")

    async def body() -> tuple[int, str | None]:
        async with await target.open() as running, await target.open() as starting:
            await running.response_jobs().enqueue(job(1), b"r", limit=9)
            assert await running.response_jobs().claim(now=NOW) is not None
            failed = await starting.response_jobs().interrupted(now=NOW + 1, message="x")
            found = await starting.response_jobs().get("resp_1")
            return failed, None if found is None else found.status

    assert asyncio.run(body()) == (0, "in_progress")


def test_the_last_run_is_one_that_ended_not_another_live_gateways(target: Target) -> None:
    if target.engine == "sqlite":
        pytest.skip("one gw serve per SQLite state dir (gw/store/serve_lock.py): no other")

    async def body() -> tuple[object, object]:
        serving = await target.open()
        try:
            _first, _ = await serving.runs().begin(100.0)
            async with await target.open() as starting:
                _, beside_a_live_one = await starting.runs().begin(200.0)
        finally:
            await serving.close()  # killed, as far as the table can tell: no stopped_at
        async with await target.open() as later:
            _, after = await later.runs().begin(300.0)
        return beside_a_live_one, after

    beside_a_live_one, after = asyncio.run(body())
    assert beside_a_live_one is None
    assert after is not None
    assert after.started_at in {100.0, 200.0}  # both ended; 200 stopped by closing too
