"""The usage report from the rollup equals the report over every row (``report_sql``, the
definition): for random rows, every group, ``since`` on and off hour boundaries, per
tenant; for rows written before the rollup existed (the migration sums them); and without
reading the usage table beyond one partial hour."""

from __future__ import annotations

import math
import random
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
from unit.store.test_usage_ledger import run_with_store

from gw.execution.periods import period_label
from gw.ports import UsageRow
from gw.store import SqliteStore
from gw.store.migrations import MIGRATIONS, SCHEMA_VERSION_TABLE
from gw.store.usage import (
    USAGE_GROUPS,
    UsageGroup,
    UsageTotals,
    report_sql,
    totals_from_row,
)
from gw.store.usage_rollup import DAY, HOUR, hour_start, period_start, rollup_query

START = 1_773_532_800.0  # 2026-03-15T00:00:00Z
SPAN = 3 * 86_400.0
TENANTS = ("team-a", "team-b", "team-c", None)
MODELS = (("openai", "gpt-4o-mini"), ("openai", "gpt-4o"), ("local", "llama3"), (None, None))


def random_rows(count: int, seed: int) -> list[UsageRow]:
    """Rows over three days; some on an hour boundary or a hair below one. Costs are whole
    micro-dollars, as prices times tokens are, so sums round alike in any order."""
    rng = random.Random(seed)
    rows = []
    for n in range(count):
        kind = rng.random()
        if kind < 0.1:
            time = START + rng.randrange(int(SPAN / HOUR)) * HOUR
        elif kind < 0.2:
            time = math.nextafter(START + rng.randrange(1, int(SPAN / HOUR)) * HOUR, 0.0)
        else:
            time = START + rng.random() * SPAN
        tenant = rng.choice(TENANTS)
        provider, model = rng.choice(MODELS)
        failed = rng.random() < 0.1
        tokens = 0 if failed else rng.randrange(1, 5000)
        priced = rng.random() < 0.85
        rows.append(
            UsageRow(
                request_id=f"req-{seed}-{n:06d}",
                time=time,
                day=period_label("day", time),
                month=period_label("month", time),
                tenant=tenant,
                key_id=None if tenant is None else f"key-{tenant}-{rng.randrange(2)}",
                route=rng.choice(("chat", "cheap", "openai/gpt-4o")),
                provider=provider,
                model=model,
                status=502 if failed else 200,
                error_code="upstream_error" if failed else None,
                input_tokens=tokens,
                output_tokens=tokens // 3,
                cached_input_tokens=tokens // 5,
                reasoning_tokens=tokens // 7,
                cost_usd=rng.randrange(1, 10_000) / 1e6 if priced and tokens else None,
                usage_source=rng.choice(("provider", "estimate", None)),
                recovered=rng.random() < 0.05,
            )
        )
    return rows


def sinces() -> Iterator[float | None]:
    yield None
    yield START  # a boundary
    yield START + 7 * HOUR  # a boundary
    yield START + 7 * HOUR + 1234.5  # inside an hour
    yield math.nextafter(START + 30 * HOUR, 0.0)  # a hair below a boundary
    yield math.nextafter(START + 30 * HOUR, math.inf)  # a hair above one
    yield START + SPAN - 10.0  # inside the last hour
    yield START + DAY  # a day's start
    yield math.nextafter(START + 2 * DAY, 0.0)  # a hair below a day's start
    yield START + DAY + 5 * HOUR + 0.25  # hours, then days
    yield START + SPAN + HOUR  # after every row


async def row_report(
    store: SqliteStore, by: UsageGroup, since: float | None, tenant: str | None
) -> list[UsageTotals]:
    """The report by its definition, summing every row (on the writer's connection)."""
    sql = report_sql(by, since=since is not None, tenant=tenant is not None)
    params = tuple(value for value in (since, tenant) if value is not None)
    rows = await store._conn.execute_fetchall(sql, params)
    return [totals_from_row(by, row) for row in rows]


async def compare_every_report(store: SqliteStore) -> int:
    """Both reports for every group, since and tenant; how many were compared."""
    compared = 0
    for by in USAGE_GROUPS:
        for since in sinces():
            for tenant in (None, "team-a", "nobody"):
                expected = await row_report(store, by, since, tenant)
                got = await store.usage_report(by, since, tenant)
                assert got == expected, (by, since, tenant)
                compared += 1
    return compared


def test_the_rollup_report_equals_the_report_over_every_row(tmp_path: Path) -> None:
    rows = random_rows(3000, seed=7)

    async def body(store: SqliteStore) -> int:
        await store.write_usage(rows[:1000])
        await store.write_usage(rows[:1000])  # written twice: counted once
        await store.usage_recovery().insert(rows[900:1500])  # the new ones marked recovered
        for start in range(1500, len(rows), 250):
            await store.write_usage(rows[start : start + 250])
        return await compare_every_report(store)

    assert run_with_store(tmp_path / "gw.db", body) == len(USAGE_GROUPS) * len(list(sinces())) * 3
    totals: list[UsageTotals] = run_with_store(
        tmp_path / "gw.db", lambda store: store.usage_report("tenant")
    )
    assert sum(total.requests for total in totals) == len(rows)
    assert sum(total.recovered for total in totals) >= 500  # rows 1000..1499


def test_the_migration_sums_the_rows_written_before_it(tmp_path: Path) -> None:
    path = tmp_path / "gw.db"
    rows = random_rows(2000, seed=11)
    with sqlite3.connect(path, isolation_level=None) as db:  # a database at version 7
        db.execute(SCHEMA_VERSION_TABLE)
        for migration in MIGRATIONS[:7]:
            for statement in migration.statements:
                db.execute(statement)
        db.execute("PRAGMA user_version = 7")
        # The fields version 7 had: the gateway came with version 10, the policy with 14.
        fields = [f for f in UsageRow.__struct_fields__ if f not in {"gateway", "policy"}]
        db.executemany(
            f"INSERT INTO usage ({', '.join(fields)}) VALUES ({', '.join('?' * len(fields))})",  # noqa: S608 - fixed names
            [msgspec.structs.astuple(row)[: len(fields)] for row in rows],
        )
    db.close()

    async def body(store: SqliteStore) -> int:
        assert await store.schema_version() == MIGRATIONS[-1].version
        return await compare_every_report(store)

    assert run_with_store(path, body) > 0


@pytest.mark.parametrize("since", list(sinces()))
def test_a_report_reads_the_rollup_and_at_most_one_hour_of_rows(
    tmp_path: Path, since: float | None
) -> None:
    async def body(store: SqliteStore) -> list[str]:
        sql, params = rollup_query("model", since, "team-a")
        plan = await store._conn.execute_fetchall(f"EXPLAIN QUERY PLAN {sql}", params)
        return [str(step[3]) for step in plan]

    plan = run_with_store(tmp_path / "gw.db", body)
    touching_rows = [step for step in plan if " usage " in f"{step} "]
    assert all(step.startswith("SEARCH usage USING INDEX usage_time") for step in touching_rows)
    assert not any(step.startswith("SCAN usage_rollup") for step in plan)
    if since is None or hour_start(since) == since:
        assert touching_rows == []


@pytest.mark.parametrize("seconds", [HOUR, DAY])
def test_periods_are_cut_as_the_trigger_cuts_them(seconds: int) -> None:
    rng = random.Random(3)
    moments = [START + rng.random() * 100 * DAY for _ in range(2000)]
    for k in range(1, 200):
        boundary = START + k * seconds
        moments += [boundary, math.nextafter(boundary, 0.0), math.nextafter(boundary, math.inf)]
    cut = f"CAST(? / {seconds} AS INTEGER) * {seconds}"
    with sqlite3.connect(":memory:") as db:
        for moment in moments:
            start = period_start(moment, seconds)
            assert start <= moment < start + seconds
            found = db.execute(f"SELECT {cut} - {seconds} * ({cut} > ?)", (moment,) * 3)
            assert found.fetchone()[0] == start
    db.close()


def test_budgets_are_seeded_from_the_rollup(tmp_path: Path) -> None:
    rows = random_rows(1500, seed=5)
    day, month = rows[0].day, rows[0].month

    async def body(store: SqliteStore) -> None:
        await store.write_usage(rows)
        wall = rows[0].time
        assert (day, month) == (period_label("day", wall), period_label("month", wall))
        spend = {(tenant, label): usd for tenant, label, usd in await store.budget_spend(wall)}
        for tenant in TENANTS[:-1]:
            for label, mine in ((day, [r for r in rows if r.day == day]), (month, rows)):
                expected = sum(r.cost_usd or 0.0 for r in mine if r.tenant == tenant)
                assert spend[(tenant, label)] == pytest.approx(expected, abs=1e-9)
        assert all(tenant is not None for tenant, _ in spend)
        everyone = sum(r.cost_usd or 0.0 for r in rows)
        assert spend[("@gw", period_label("total", wall))] == pytest.approx(everyone, abs=1e-9)

    run_with_store(tmp_path / "gw.db", body)
