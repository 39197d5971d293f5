"""One contract for every ``TenantLimits`` backend (in the process, and the fleet's in
Redis): the same admissions pass, the same refusals come back, settling gives back what a
request did not use. Refill timing is the in-process buckets' unit test
(tests/unit/execution/test_limits.py): here nothing waits for a minute to pass."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

import pytest

from gw.config.schema import TenantBudget, TenantConfig, TenantLimits
from gw.errors import (
    BudgetExceededError,
    ConcurrencyLimitedError,
    InvalidRequestError,
    RateLimitedError,
)
from gw.ports import TenantLimits as Limits

from contract.limits.conftest import MakeLimits

DAY = 1_764_547_200.0  # 2025-12-01T00:00:00Z
T = TypeVar("T")


def tenant(**limits: int) -> TenantConfig:
    return TenantConfig(name="t", limits=TenantLimits(**limits))


def run(make: MakeLimits, scenario: Callable[[Limits], Awaitable[T]]) -> T:
    async def go() -> T:
        limits = await make()
        try:
            return await scenario(limits)
        finally:
            await limits.drain()
            await limits.aclose()

    return asyncio.run(go())


async def admit(
    limits: Limits,
    config: TenantConfig,
    request_id: str,
    *,
    tokens: int = 1,
    cost_usd: float = 0.0,
    wall: float = DAY,
    lease_ttl: float = 60.0,
) -> None:
    await limits.admit(
        config, request_id, tokens=tokens, cost_usd=cost_usd, lease_ttl=lease_ttl, now=0, wall=wall
    )


async def settle(limits: Limits, request_id: str, *, tokens: int, cost_usd: float | None) -> None:
    limits.settle(request_id, tokens=tokens, cost_usd=cost_usd)  # returns at once ...
    await limits.drain()  # ... and is written by here


def test_requests_per_minute_refuse_the_next_and_say_when_to_retry(make_limits: MakeLimits) -> None:
    config = tenant(requests_per_minute=2)

    async def scenario(limits: Limits) -> None:
        await admit(limits, config, "r0")
        await admit(limits, config, "r1")
        with pytest.raises(RateLimitedError) as refused:
            await admit(limits, config, "r2")
        assert "requests_per_minute" in refused.value.message
        # One request refills in 60 s / 2; a few ms may have passed since.
        assert refused.value.retry_after is not None
        assert 29.0 <= refused.value.retry_after <= 30.0

    run(make_limits, scenario)


def test_tokens_per_minute_charge_the_projection_and_settle_to_the_actual(
    make_limits: MakeLimits,
) -> None:
    config = tenant(tokens_per_minute=1000)

    async def scenario(limits: Limits) -> None:
        await admit(limits, config, "a", tokens=900)
        with pytest.raises(RateLimitedError, match="tokens_per_minute"):
            await admit(limits, config, "b", tokens=200)
        await settle(limits, "a", tokens=100, cost_usd=None)  # it used far less
        await admit(limits, config, "b", tokens=200)

    run(make_limits, scenario)


def test_a_request_larger_than_the_whole_minute_is_refused_with_advice(
    make_limits: MakeLimits,
) -> None:
    async def scenario(limits: Limits) -> None:
        with pytest.raises(InvalidRequestError, match="lower max_tokens"):
            await admit(limits, tenant(tokens_per_minute=100), "a", tokens=101)

    run(make_limits, scenario)


def test_concurrency_is_released_when_a_request_settles(make_limits: MakeLimits) -> None:
    config = tenant(max_concurrency=1)

    async def scenario(limits: Limits) -> None:
        await admit(limits, config, "a")
        assert await limits.in_flight("t") == 1
        with pytest.raises(ConcurrencyLimitedError, match="max_concurrency 1"):
            await admit(limits, config, "b")
        await settle(limits, "a", tokens=1, cost_usd=0)
        await admit(limits, config, "b")
        assert await limits.in_flight("t") == 1

    run(make_limits, scenario)


def test_a_refused_request_takes_nothing(make_limits: MakeLimits) -> None:
    config = TenantConfig(
        name="t",
        limits=TenantLimits(requests_per_minute=5, max_concurrency=5),
        budget=TenantBudget(daily_usd=1.0),
    )

    async def scenario(limits: Limits) -> None:
        with pytest.raises(BudgetExceededError):
            await admit(limits, config, "big", cost_usd=2.0)
        assert await limits.in_flight("t") == 0
        for n in range(5):  # the whole minute's allowance and every slot are still there
            await admit(limits, config, f"r{n}", cost_usd=0.1)

    run(make_limits, scenario)


def test_budgets_count_seeded_and_settled_spend_and_reservations(make_limits: MakeLimits) -> None:
    config = TenantConfig(name="t", budget=TenantBudget(daily_usd=1.0, monthly_usd=10.0))

    async def scenario(limits: Limits) -> None:
        await limits.seed([("t", "d:2025-12-01", 0.7), ("t", "m:2025-12", 9.0)])
        assert await limits.spent("t", "d:2025-12-01") == pytest.approx(0.7)
        await admit(limits, config, "a", cost_usd=0.2)
        with pytest.raises(BudgetExceededError) as refused:
            await admit(limits, config, "b", cost_usd=0.2)
        assert refused.value.status == 402
        assert "daily budget" in refused.value.message
        assert "reserved" in refused.value.message
        await settle(limits, "a", tokens=1, cost_usd=0.05)  # cheaper than reserved
        await admit(limits, config, "b", cost_usd=0.2)
        assert await limits.spent("t", "d:2025-12-01") == pytest.approx(0.75)
        # The next day starts afresh; the month does not.
        await settle(limits, "b", tokens=1, cost_usd=0.2)
        await admit(limits, config, "c", cost_usd=0.5, wall=DAY + 86_400)
        with pytest.raises(BudgetExceededError, match="monthly"):
            await admit(limits, config, "d", cost_usd=0.5, wall=DAY + 86_400)

    run(make_limits, scenario)


def test_a_seed_raises_a_counter_to_the_ledger_and_never_lowers_it(
    make_limits: MakeLimits,
) -> None:
    """Read back again (a budget given while gw runs): the ledger's figure if higher,
    else what was counted, which may hold spend the ledger has not written yet."""
    config = TenantConfig(name="t", budget=TenantBudget(daily_usd=1.0))

    async def scenario(limits: Limits) -> None:
        await limits.seed([("t", "d:2025-12-01", 0.3)])
        await admit(limits, config, "a", cost_usd=0.2)
        await settle(limits, "a", tokens=1, cost_usd=0.2)  # 0.5 counted, 0.3 in the ledger
        await limits.seed([("t", "d:2025-12-01", 0.3)])
        assert await limits.spent("t", "d:2025-12-01") == pytest.approx(0.5)
        await limits.seed([("t", "d:2025-12-01", 0.6), ("t", "d:2025-12-01", 0.2)])
        assert await limits.spent("t", "d:2025-12-01") == pytest.approx(0.8)

    run(make_limits, scenario)


def test_weekly_and_total_budgets_span_their_periods(make_limits: MakeLimits) -> None:
    """DAY is a Monday: its ISO week runs six more days; a total never resets."""
    weekly = TenantConfig(name="w", budget=TenantBudget(weekly_usd=1.0))
    total = TenantConfig(name="@gw", budget=TenantBudget(total_usd=1.0))

    async def scenario(limits: Limits) -> None:
        await limits.seed([("@gw", "t:all", 0.1)])
        for config in (weekly, total):
            await admit(limits, config, f"{config.name}-1", cost_usd=0.5)
            await settle(limits, f"{config.name}-1", tokens=1, cost_usd=0.5)
        # Six days later: the same week for one, all time for the other.
        await admit(limits, weekly, "w-2", cost_usd=0.5, wall=DAY + 6 * 86_400)
        with pytest.raises(BudgetExceededError, match=r"weekly budget of \$1\.00 \(2025-W49\)"):
            await admit(limits, weekly, "w-3", cost_usd=0.5, wall=DAY + 6 * 86_400)
        await admit(limits, weekly, "w-4", cost_usd=0.5, wall=DAY + 7 * 86_400)  # a new week
        with pytest.raises(BudgetExceededError) as refused:
            await admit(limits, total, "@gw-2", cost_usd=0.5, wall=DAY + 400 * 86_400)
        assert "gw (limits: every request counts) has spent $0.600000 of its total" in (
            refused.value.message
        )
        assert "(all time)" in refused.value.message
        assert "raise limits.budget;" not in refused.value.message
        assert refused.value.message.endswith("raise limits.budget")

    run(make_limits, scenario)


def test_racing_requests_cannot_reserve_past_the_budget(make_limits: MakeLimits) -> None:
    config = TenantConfig(name="t", budget=TenantBudget(daily_usd=1.0))

    async def one(limits: Limits, n: int) -> bool:
        try:
            await admit(limits, config, f"r{n}", cost_usd=0.03)
        except BudgetExceededError:
            return False
        return True

    async def scenario(limits: Limits) -> int:
        outcomes = await asyncio.gather(*(one(limits, n) for n in range(50)))
        return sum(outcomes)

    assert run(make_limits, scenario) == 33  # 33 x $0.03 = $0.99 <= $1.00 < 34 x $0.03


def test_a_tenant_without_limits_is_always_admitted(make_limits: MakeLimits) -> None:
    async def scenario(limits: Limits) -> None:
        for n in range(20):
            await admit(limits, TenantConfig(name="free"), f"r{n}", cost_usd=5.0)
        for n in range(20):
            await settle(limits, f"r{n}", tokens=1, cost_usd=5.0)

    run(make_limits, scenario)
