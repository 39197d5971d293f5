"""The store contract: traces, usage rows and runs name the gateway that served them
(schema version 10), and a database of version 9 migrates with its rows kept."""

from __future__ import annotations

import asyncio
import sqlite3
from contextlib import closing

from store_targets import Target, run

from gw.execution.periods import period_label
from gw.ports import UsageRow
from gw.record import TraceRecord
from gw.store.migrations import MIGRATIONS, SCHEMA_VERSION_TABLE
from gw.store.port import StateStore
from gw.store.usage import UsageTotals

NOW = 1_800_000_000.0


def trace(request_id: str, time: float, gateway: str | None) -> TraceRecord:
    return TraceRecord(
        request_id=request_id,
        time=time,
        endpoint="chat.completions",
        requested_model="chat",
        stream=False,
        status=200,
        revision=1,
        latency_ms=1.0,
        gateway=gateway,
    )


def usage(request_id: str, time: float, gateway: str | None) -> UsageRow:
    return UsageRow(
        request_id=request_id,
        time=time,
        day=period_label("day", time),
        month=period_label("month", time),
        tenant="team-a",
        key_id=None,
        route="chat",
        provider="openai",
        model="gpt-4o-mini",
        status=200,
        error_code=None,
        input_tokens=10,
        output_tokens=1,
        cost_usd=0.001,
        gateway=gateway,
    )


def keys(report: list[UsageTotals]) -> dict[str | None, int]:
    return {group.key: group.requests for group in report}


def test_traces_and_usage_rows_keep_their_gateway(target: Target) -> None:
    async def body(store: StateStore) -> None:
        await store.write_traces([trace("req_a", NOW, "gw-a"), trace("req_b", NOW + 1, "gw-b")])
        await store.write_usage(
            [
                usage("req_a", NOW, "gw-a"),
                usage("req_b", NOW + 1, "gw-b"),
                usage("req_c", NOW + 2, "gw-b"),
            ]
        )
        listed = await store.list_traces(limit=10)
        assert [(t.request_id, t.gateway) for t in listed] == [("req_b", "gw-b"), ("req_a", "gw-a")]
        found = await store.get_trace("req_a")
        assert found is not None
        assert found.gateway == "gw-a"
        assert keys(await store.usage_report("gateway")) == {"gw-b": 2, "gw-a": 1}
        assert keys(await store.usage_report("gateway", since=NOW + 1)) == {"gw-b": 2}
        assert keys(await store.usage_report("gateway", tenant="other")) == {}

    run(target, body)


def test_a_killed_runs_lost_traces_are_counted_over_its_own_gateways_rows(
    target: Target,
) -> None:
    async def body(store: StateStore) -> None:
        runs = store.runs()
        await runs.begin(NOW, gateway="gw-a")
        _, previous = await runs.begin(NOW + 100, gateway="gw-a")
        assert previous is not None
        assert previous.gateway == "gw-a"
        # gw-a's run lost req_1's trace; gw-b, serving at the same time, lost none but
        # wrote its rows in that window without a trace of them here (req_2, req_3).
        await store.write_traces([trace("req_0", NOW + 1, "gw-a")])
        await store.write_usage(
            [
                usage("req_0", NOW + 1, "gw-a"),
                usage("req_1", NOW + 2, "gw-a"),
                usage("req_2", NOW + 3, "gw-b"),
                usage("req_3", NOW + 4, "gw-b"),
                usage("req_4", NOW + 5, None),
            ]
        )
        assert await runs.count_routed_lost(NOW, NOW + 100, gateway="gw-a") == (1, NOW + 1)
        assert await runs.count_routed_lost(NOW, NOW + 100, gateway="gw-b") == (2, NOW + 1)
        # A run from before gw recorded gateways counts the rows that name none.
        assert await runs.count_routed_lost(NOW, NOW + 100, gateway=None) == (1, NOW + 1)

    run(target, body)


V9_TRACE = (
    "INSERT INTO traces (request_id, time, status, route, latency_ms, revision, body, size)"
    " VALUES ('req_old', 1800000000.0, 200, 'chat', 1.0, 1, $body, 10)"
)
V9_USAGE = (
    "INSERT INTO usage (request_id, time, day, month, route, status, input_tokens,"
    " output_tokens, cached_input_tokens, cache_write_tokens, reasoning_tokens)"
    " VALUES ('req_old', 1800000000.0, 'd:2027-01-15', 'm:2027-01', 'chat', 200, 1, 1, 0, 0, 0)"
)
OLD_BODY = (
    '{"request_id":"req_old","time":1800000000.0,"endpoint":"chat.completions",'
    '"requested_model":"chat","stream":false,"status":200,"revision":1,"latency_ms":1.0}'
)


def make_version_9(target: Target) -> None:
    """A database as gw wrote it at schema version 9, with a trace and a usage row."""
    v9 = [m for m in MIGRATIONS if m.version <= 9]
    if target.engine == "sqlite":
        with closing(sqlite3.connect(target.path)) as conn:
            conn.execute(SCHEMA_VERSION_TABLE)
            for migration in v9:
                for statement in migration.statements:
                    conn.execute(statement)
            conn.execute("PRAGMA user_version = 9")
            conn.execute(V9_TRACE.replace("$body", "?"), (OLD_BODY,))
            conn.execute(V9_USAGE)
            conn.commit()
        return

    async def postgres() -> None:
        import asyncpg  # noqa: PLC0415 - only the PostgreSQL target needs it

        conn = await asyncpg.connect(target.url)
        try:
            async with conn.transaction():
                await conn.execute(SCHEMA_VERSION_TABLE)
                for statement in v9[-1].postgres or ():
                    await conn.execute(statement)
                await conn.execute("INSERT INTO schema_version VALUES (9, 0, 'baseline')")
                await conn.execute(V9_TRACE.replace("$body", "$1"), OLD_BODY)
                await conn.execute(V9_USAGE)
        finally:
            await conn.close()

    asyncio.run(postgres())


def test_a_version_9_database_migrates_and_its_old_rows_name_no_gateway(target: Target) -> None:
    make_version_9(target)

    async def body(store: StateStore) -> None:
        assert await store.schema_version() >= 10
        old = await store.get_trace("req_old")
        assert old is not None
        assert old.gateway is None
        await store.write_traces([trace("req_new", NOW + 10, "gw-a")])
        await store.write_usage([usage("req_new", NOW + 10, "gw-a")])
        assert keys(await store.usage_report("gateway")) == {"gw-a": 1, None: 1}
        runs = store.runs()
        await runs.begin(NOW - 10)
        _, previous = await runs.begin(NOW + 100, gateway="gw-a")
        assert previous is not None
        assert previous.gateway is None

    run(target, body)
