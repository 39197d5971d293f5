"""The store contract: the usage ledger, its rollup reports, budgets' spend and retention."""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest
from store_targets import Target, run

from gw.execution.periods import period_label
from gw.ports import UsageRow
from gw.store.port import StateStore
from gw.store.usage import USAGE_GROUPS, UsageGroup, UsageTotals

MAR_15 = dt.datetime(2026, 3, 15, 12, tzinfo=dt.UTC).timestamp()
MAR_16 = MAR_15 + 86400


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
    row("r1", gateway="gw-a", policy="batch"),
    row("r2", model="gpt-4o", cost_usd=0.002, input_tokens=200, output_tokens=50, gateway="gw-a"),
    row("r3", tenant="team-b", key_id="key_b", time=MAR_16, cached_input_tokens=64, gateway="gw-b",
        policy="batch"),
    row("r4", tenant=None, key_id=None, provider=None, model=None, status=404,
        error_code="model_not_found", input_tokens=0, output_tokens=0, cost_usd=None),
    row("r5", cost_usd=None, usage_source="estimate", reasoning_tokens=5, time=MAR_15 + 1800),
    row("r6", recovered=True, time=MAR_15 + 7300),
]  # fmt: skip


def expected(by: UsageGroup, rows: list[UsageRow], since: float | None = None) -> list[object]:
    """The report computed here, from the rows, as the definition says."""
    column = {"key": "key_id"}.get(by, by)
    groups: dict[str | None, list[UsageRow]] = {}
    for r in rows:
        if since is None or r.time >= since:
            key = getattr(r, column)
            groups.setdefault(key.removeprefix("d:") if by == "day" and key else key, []).append(r)
    totals = [
        UsageTotals(
            key=key,
            requests=len(group),
            errors=sum(r.error_code is not None for r in group),
            input_tokens=sum(r.input_tokens for r in group),
            cached_input_tokens=sum(r.cached_input_tokens for r in group),
            output_tokens=sum(r.output_tokens for r in group),
            reasoning_tokens=sum(r.reasoning_tokens for r in group),
            cost_usd=round(sum(r.cost_usd or 0.0 for r in group), 10),
            unpriced=sum(
                r.cost_usd is None and r.input_tokens + r.output_tokens > 0 for r in group
            ),
            estimated=sum(r.usage_source == "estimate" for r in group),
            recovered=sum(r.recovered for r in group),
        )
        for key, group in groups.items()
    ]
    if by == "day":
        return sorted(totals, key=lambda t: t.key or "")
    return sorted(
        totals, key=lambda t: (-t.cost_usd, -t.requests, t.key is None, (t.key or "").encode())
    )


def test_rows_are_deduplicated_by_request_id_first_row_kept(target: Target) -> None:
    async def body(store: StateStore) -> list[UsageTotals]:
        await store.write_usage(ROWS)
        await store.write_usage(ROWS)  # a retried batch counts once
        await store.write_usage([row("r1", cost_usd=9.0, model="other")])  # the first stays
        return await store.usage_report("model")

    assert run(target, body) == expected("model", ROWS)


@pytest.mark.parametrize("by", USAGE_GROUPS)
def test_every_grouping_matches_the_definition(target: Target, by: UsageGroup) -> None:
    async def body(store: StateStore) -> list[UsageTotals]:
        await store.write_usage(ROWS)
        return await store.usage_report(by)

    assert run(target, body) == expected(by, ROWS)


def test_since_and_tenant_filters_read_partial_hours_from_the_rows(target: Target) -> None:
    since = MAR_15 + 900  # inside an hour: its rest from the rows, then hour and day sums

    async def body(store: StateStore) -> tuple[list[UsageTotals], list[UsageTotals]]:
        await store.write_usage(ROWS)
        return (
            await store.usage_report("tenant", since=since),
            await store.usage_report("model", tenant="team-a"),
        )

    by_tenant, team_a = run(target, body)
    assert by_tenant == expected("tenant", ROWS, since)
    assert team_a == expected("model", [r for r in ROWS if r.tenant == "team-a"])


def test_budget_spend_sums_each_period_per_tenant_key_policy_and_for_everyone(
    target: Target,
) -> None:
    """Seen from MAR_15, a Sunday: MAR_16 is the next day, ISO week, not the next month.
    Keys and policies are counted as ``@key:<id>`` and ``@policy:<name>``; a row with no
    policy (written before schema 14) counts for none."""

    async def body(store: StateStore) -> list[tuple[str, str, float]]:
        await store.write_usage(ROWS)
        return await store.budget_spend(MAR_15)

    spend = {(subject, label): usd for subject, label, usd in run(target, body)}
    day, week = period_label("day", MAR_15), period_label("week", MAR_15)
    month, total = period_label("month", MAR_15), period_label("total", MAR_15)
    team_a = 0.0001 + 0.002 + 0.0001
    wanted = {
        **{("team-a", label): team_a for label in (day, week, month, total)},
        ("team-b", month): 0.0001,
        ("team-b", total): 0.0001,
        **{("@gw", label): team_a for label in (day, week)},
        **{("@gw", label): team_a + 0.0001 for label in (month, total)},
        **{("@key:key_a", label): team_a for label in (day, week, month, total)},
        ("@key:key_b", month): 0.0001,
        ("@key:key_b", total): 0.0001,
        **{("@policy:batch", label): 0.0001 for label in (day, week)},
        **{("@policy:batch", label): 0.0002 for label in (month, total)},
    }
    assert spend.keys() == wanted.keys()
    for key, usd in wanted.items():
        assert spend[key] == pytest.approx(usd), key


def test_retention_deletes_whole_old_hours_and_the_reports_keep_their_sums(
    target: Target,
) -> None:
    async def body(store: StateStore) -> tuple[int, int, list[UsageTotals]]:
        await store.write_usage(ROWS)
        first = await store.delete_usage_before(MAR_15 + 7300, limit=2)
        rest = await store.delete_usage_before(MAR_15 + 7300, limit=100)
        return first, rest, await store.usage_report("model")

    first, rest, report = run(target, body)
    assert (first, rest) == (2, 2)  # r1, r2, r4, r5 (hours before 14:00); r6 stays
    assert report == expected("model", ROWS)


def test_journal_rows_come_back_once_marked_recovered(target: Target) -> None:
    async def body(store: StateStore) -> tuple[object, object, list[UsageTotals]]:
        await store.write_usage(ROWS[:2])
        recovery = store.usage_recovery()
        first = await recovery.insert(ROWS[:4])
        again = await recovery.insert(ROWS[:4])
        return first, again, await store.usage_report("tenant")

    first, again, report = run(target, body)
    assert tuple(first) == (2, 2)  # r3, r4 went in; no trace was written for either
    assert tuple(again) == (0, 0)
    assert sum(t.recovered for t in report) == 2


def test_batches_written_at_once_by_several_stores_all_count(target: Target) -> None:
    """Gateways writing batches that share rollup groups across hours, in opposite
    orders, at the same moment: every row lands once, none is refused (no deadlock)."""
    hours = [MAR_15 + 3600 * h for h in range(4)]

    def batch(n: int) -> list[UsageRow]:
        order = hours if n % 2 else list(reversed(hours))
        return [row(f"b{n}-{i}", time=time) for i, time in enumerate(order)]

    async def body() -> int:
        stores = [await target.open() for _ in range(3)]
        try:
            await asyncio.gather(*(stores[n % 3].write_usage(batch(n)) for n in range(24)))
            report = await stores[0].usage_report("tenant")
        finally:
            for store in stores:
                await store.close()
        return sum(group.requests for group in report)

    assert asyncio.run(body()) == 24 * len(hours)
