"""``state.usage_max_age`` against a real SQLite file: the pruner deletes usage rows of the
whole hours past the limit, a batch at a time; the rollup keeps their sums, so reports
(for every period, the deleted ones included) and the budgets read the same as before."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

from unit.store.test_usage_ledger import run_with_store
from unit.store.test_usage_rollup import START, compare_every_report, random_rows

from gw.config.schema import StateConfig
from gw.config.units import Duration
from gw.store import SqliteStore
from gw.store.usage import ROWS_ONLY, USAGE_GROUPS, UsageTotals
from gw.store.usage_rollup import HOUR
from gw.telemetry.pruner import PruneReport, TracePruner

DAY = 86_400.0
NOW = START + 3 * DAY  # the random rows span START .. START + 3 days
MAX_AGE = 1.5 * DAY + 1234.0  # a cutoff inside an hour: whole hours go, the rest stays


class FixedClock:
    def time(self) -> float:
        return NOW

    def monotonic(self) -> float:
        return 0.0


Reports = dict[tuple[str, float | None], list[UsageTotals]]


async def every_report(store: SqliteStore, sinces: list[float | None]) -> Reports:
    """Every report the rollup keeps (a ``ROWS_ONLY`` one covers the rows kept only)."""
    return {
        (by, since): await store.usage_report(by, since)
        for by in USAGE_GROUPS
        if by not in ROWS_ONLY
        for since in sinces
    }


def test_old_rows_go_and_every_report_and_budget_stays(tmp_path: Path) -> None:
    path = tmp_path / "gw.db"
    rows = random_rows(4000, seed=13)
    cutoff_hour = (NOW - MAX_AGE) // HOUR * HOUR  # the hour holding the cutoff stays whole
    settings = StateConfig(usage_max_age=Duration(MAX_AGE))
    # Periods reaching into the deleted past start on an hour (documented: a since inside
    # a deleted hour counts from the next whole one); later ones anywhere.
    sinces: list[float | None] = [None, START, START + 5 * HOUR, cutoff_hour, NOW - DAY + 77.5]

    async def body(store: SqliteStore) -> tuple[Reports, Reports, PruneReport, PruneReport]:
        await store.write_usage(rows)
        before = await every_report(store, sinces)
        spend = await store.budget_spend(NOW)
        pruner = TracePruner(store, lambda: settings, FixedClock(), asyncio.sleep, batch_size=100)
        first = await pruner.prune()
        again = await pruner.prune()
        after = await every_report(store, sinces)
        assert await store.budget_spend(NOW) == spend
        # The rows left answer exactly as the rollup does where they are all still there.
        await compare_kept_period(store)
        return before, after, first, again

    before, after, first, again = run_with_store(path, body)
    expected = sum(row.time < cutoff_hour for row in rows)
    assert expected > 1000  # the test deletes something worth deleting
    assert (first.usage_deleted, again.usage_deleted) == (expected, 0)
    assert after == before
    with sqlite3.connect(path) as db:
        kept = db.execute("SELECT count(*), min(time) FROM usage").fetchone()
        summed = db.execute("SELECT sum(requests) FROM usage_rollup GROUP BY period").fetchall()
    db.close()
    assert kept[0] == len(rows) - expected
    assert kept[1] >= cutoff_hour
    assert summed == [(len(rows),), (len(rows),)]  # every row, by day and by hour


async def compare_kept_period(store: SqliteStore) -> None:
    """The rows left are the same as those the rollup sums from the cutoff's hour on."""
    cutoff_hour = (NOW - MAX_AGE) // HOUR * HOUR
    for by in USAGE_GROUPS:
        got = await store.usage_report(by, cutoff_hour + 0.5)
        rows = await store._conn.execute_fetchall(
            "SELECT count(*) FROM usage WHERE time >= ?", (cutoff_hour + 0.5,)
        )
        assert sum(total.requests for total in got) == next(iter(rows))[0]


def test_without_a_limit_no_usage_row_is_deleted(tmp_path: Path) -> None:
    rows = random_rows(500, seed=17)

    async def body(store: SqliteStore) -> int:
        await store.write_usage(rows)
        pruner = TracePruner(store, StateConfig, FixedClock(), asyncio.sleep)
        report = await pruner.prune()
        return report.usage_deleted

    assert run_with_store(tmp_path / "gw.db", body) == 0
    assert run_with_store(tmp_path / "gw.db", compare_every_report) > 0
