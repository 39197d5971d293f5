"""SqliteStore's usage ledger against a real SQLite file: writes, de-duplication, report."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import sqlite3
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import pytest

from gw.execution.periods import period_label
from gw.ports import UsageRow
from gw.store import SqliteStore
from gw.store.batch_insert import ROWS_PER_STATEMENT
from gw.store.usage import USAGE_GROUPS, UsageTotals, parse_since, report_json

T = TypeVar("T")
MAR_15 = dt.datetime(2026, 3, 15, 12, tzinfo=dt.UTC).timestamp()
MAR_16 = MAR_15 + 86400


def run_with_store(path: Path, body: Callable[[SqliteStore], Awaitable[T]]) -> T:
    async def main() -> T:
        async with await SqliteStore.open(path) as store:
            return await body(store)

    return asyncio.run(main())


def row(request_id: str, **fields: object) -> UsageRow:
    time = float(fields.pop("time", MAR_15))  # type: ignore[arg-type]
    values: dict[str, object] = {
        "request_id": request_id,
        "time": time,
        "day": period_label("day", time),
        "month": period_label("month", time),
        "tenant": "team-a",
        "key_id": "key_a",
        "route": "chat",
        "provider": "openai-prod",
        "model": "gpt-4o-mini",
        "status": 200,
        "error_code": None,
        "input_tokens": 100,
        "output_tokens": 10,
        "cost_usd": 0.0001,
        "usage_source": "provider",
    }
    values.update(fields)
    return UsageRow(**values)  # type: ignore[arg-type]  # test builder: fields vary per test


ROWS = [
    row("r1"),
    row("r2", model="gpt-4o", cost_usd=0.002, input_tokens=200, output_tokens=50),
    row("r3", tenant="team-b", key_id="key_b", time=MAR_16, cached_input_tokens=64),
    row(
        "r4",
        tenant="team-b",
        key_id="key_b",
        status=502,
        error_code="upstream_error",
        input_tokens=0,
        output_tokens=0,
        cost_usd=None,
        usage_source=None,
    ),
    row("r5", model="llama3", provider="local", cost_usd=None, usage_source="estimate"),
    row(
        "r6",
        tenant=None,
        key_id=None,
        model=None,
        provider=None,
        route="chat",
        status=503,
        error_code="no_route",
        input_tokens=0,
        output_tokens=0,
        cost_usd=None,
        usage_source=None,
    ),
]


def report(path: Path, by: str, **kwargs: object) -> list[UsageTotals]:
    async def body(store: SqliteStore) -> list[UsageTotals]:
        await store.write_usage(ROWS)
        return await store.usage_report(by, **kwargs)  # type: ignore[arg-type]

    return run_with_store(path, body)


def test_report_groups_and_sums_by_model(tmp_path: Path) -> None:
    totals = report(tmp_path / "gw.db", "model")
    assert [(t.key, t.requests) for t in totals] == [
        ("gpt-4o", 1),  # the biggest spender first
        ("gpt-4o-mini", 3),
        ("llama3", 1),
        (None, 1),
    ]
    mini = totals[1]
    assert (mini.input_tokens, mini.output_tokens, mini.cached_input_tokens) == (200, 20, 64)
    assert mini.errors == 1
    assert mini.cost_usd == 0.0002
    llama = totals[2]
    assert (llama.unpriced, llama.estimated, llama.cost_usd) == (1, 1, 0.0)


def test_report_groups_by_every_key(tmp_path: Path) -> None:
    path = tmp_path / "gw.db"
    run_with_store(path, lambda store: store.write_usage(ROWS))
    for by in USAGE_GROUPS:
        totals = run_with_store(path, lambda store, by=by: store.usage_report(by))
        assert sum(t.requests for t in totals) == len(ROWS), by
    by_day = run_with_store(path, lambda store: store.usage_report("day"))
    assert [(t.key, t.requests) for t in by_day] == [("2026-03-15", 5), ("2026-03-16", 1)]
    by_key = run_with_store(path, lambda store: store.usage_report("key"))
    assert {t.key for t in by_key} == {"key_a", "key_b", None}
    by_provider = run_with_store(path, lambda store: store.usage_report("provider"))
    assert {t.key: t.requests for t in by_provider} == {"openai-prod": 4, "local": 1, None: 1}


def test_report_filters_by_time_and_tenant(tmp_path: Path) -> None:
    path = tmp_path / "gw.db"
    run_with_store(path, lambda store: store.write_usage(ROWS))
    since = run_with_store(path, lambda store: store.usage_report("tenant", since=MAR_16 - 1))
    assert [(t.key, t.requests) for t in since] == [("team-b", 1)]
    team_b = run_with_store(path, lambda store: store.usage_report("model", tenant="team-b"))
    assert [(t.key, t.requests, t.errors) for t in team_b] == [("gpt-4o-mini", 2, 1)]


def test_a_request_id_is_counted_once_however_often_it_is_written(tmp_path: Path) -> None:
    async def body(store: SqliteStore) -> list[UsageTotals]:
        await store.write_usage(ROWS)
        await store.write_usage(ROWS[:2])  # a retried batch
        await store.write_usage([row("r1", input_tokens=999), row("r1", input_tokens=5)])
        return await store.usage_report("tenant")

    totals = run_with_store(tmp_path / "gw.db", body)
    assert sum(t.requests for t in totals) == len(ROWS)
    assert sum(t.input_tokens for t in totals) == sum(r.input_tokens for r in ROWS)


def test_rows_keep_every_column(tmp_path: Path) -> None:
    path = tmp_path / "gw.db"
    full = row("full", cache_write_tokens=7, reasoning_tokens=3, cached_input_tokens=11)
    run_with_store(path, lambda store: store.write_usage([full]))

    async def read(store: SqliteStore) -> list[tuple[object, ...]]:
        return list(await store._conn.execute_fetchall("SELECT * FROM usage"))

    [stored] = run_with_store(path, read)
    assert stored == tuple(getattr(full, name) for name in UsageRow.__struct_fields__)


def test_an_empty_ledger_reports_nothing(tmp_path: Path) -> None:
    assert run_with_store(tmp_path / "gw.db", lambda store: store.usage_report("model")) == []
    run_with_store(tmp_path / "gw.db", lambda store: store.write_usage([]))


def test_report_json_names_the_grouping_key() -> None:
    totals = [
        UsageTotals(
            key="gpt-4o",
            requests=2,
            errors=0,
            input_tokens=10,
            cached_input_tokens=0,
            output_tokens=5,
            reasoning_tokens=0,
            cost_usd=0.5,
            unpriced=0,
            estimated=0,
        )
    ]
    [first] = report_json("model", totals)
    assert first["model"] == "gpt-4o"
    assert "key" not in first
    assert {"requests", "input_tokens", "output_tokens", "cost_usd"} <= set(first)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("30m", 10_000.0 - 1800),
        ("24h", 10_000.0 - 86400),
        ("7d", 10_000.0 - 7 * 86400),
        ("2w", 10_000.0 - 14 * 86400),
        ("2026-03-15", dt.datetime(2026, 3, 15, tzinfo=dt.UTC).timestamp()),
        ("2026-03-15T12:00:00+01:00", MAR_15 - 3600),
    ],
)
def test_since_takes_durations_and_dates(text: str, expected: float) -> None:
    assert parse_since(text, now=10_000.0) == expected


def test_since_refuses_anything_else() -> None:
    with pytest.raises(ValueError, match="give a duration"):
        parse_since("last week", now=0.0)


def test_a_write_cancelled_while_waiting_for_the_lock_leaves_the_store_usable(
    tmp_path: Path,
) -> None:
    """A writer cancelled during ``BEGIN IMMEDIATE`` (a stop timeout, say) must not leave
    the connection inside a transaction that fails every later write."""
    path = tmp_path / "gw.db"

    async def main() -> int:
        async with await SqliteStore.open(path) as store:
            blocker = sqlite3.connect(path, isolation_level=None)
            blocker.execute("BEGIN IMMEDIATE")
            stuck = asyncio.create_task(store.write_usage([row("first")]))
            await asyncio.sleep(0.2)  # waiting out the busy timeout on the lock
            stuck.cancel()
            blocker.rollback()  # the blocked BEGIN now succeeds in aiosqlite's thread
            blocker.close()
            with contextlib.suppress(asyncio.CancelledError):
                await stuck
            await store.write_usage([row("second")])
            totals = await store.usage_report("tenant")
            return sum(t.requests for t in totals)

    assert asyncio.run(main()) == 1


def test_a_batch_larger_than_one_statement_keeps_every_row_once(tmp_path: Path) -> None:
    many = [row(f"m{n:03d}", input_tokens=n) for n in range(2 * ROWS_PER_STATEMENT + 5)]
    many.append(row("m000", input_tokens=10_000))  # a repeat in a later statement is ignored

    async def body(store: SqliteStore) -> list[UsageTotals]:
        await store.write_usage(many)
        return await store.usage_report("tenant")

    [totals] = run_with_store(tmp_path / "gw.db", body)
    assert totals.requests == len(many) - 1
    assert totals.input_tokens == sum(range(2 * ROWS_PER_STATEMENT + 5))
