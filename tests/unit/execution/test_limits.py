"""Tenant limits with plain numbers for time: buckets, concurrency and budgets."""

from __future__ import annotations

import pytest

from gw.config.schema import TenantBudget, TenantConfig, TenantLimits
from gw.errors import (
    BudgetExceededError,
    ConcurrencyLimitedError,
    InvalidRequestError,
    RateLimitedError,
)
from gw.execution.limits import TenantLimiter
from gw.execution.periods import period_label

DAY = 1_764_547_200.0  # 2025-12-01T00:00:00Z


def tenant(**limits: int) -> TenantConfig:
    return TenantConfig(name="t", limits=TenantLimits(**limits))


def test_period_labels_are_utc_days_and_months() -> None:
    assert period_label("day", DAY) == "d:2025-12-01"
    assert period_label("day", DAY - 1) == "d:2025-11-30"
    assert period_label("month", DAY - 1) == "m:2025-11"


def test_requests_per_minute_refill_and_say_when_to_retry() -> None:
    limiter, config = TenantLimiter(), tenant(requests_per_minute=2)
    for n in range(2):
        limiter.admit(config, f"r{n}", tokens=1, cost_usd=0, now=0, wall=DAY)
    with pytest.raises(RateLimitedError) as refused:
        limiter.admit(config, "r2", tokens=1, cost_usd=0, now=0, wall=DAY)
    assert refused.value.retry_after == 30.0  # one request refills in 60 s / 2
    assert "requests_per_minute" in refused.value.message
    limiter.admit(config, "r3", tokens=1, cost_usd=0, now=30, wall=DAY)


def test_tokens_per_minute_charge_the_projection_and_settle_to_the_actual() -> None:
    limiter, config = TenantLimiter(), tenant(tokens_per_minute=1000)
    limiter.admit(config, "a", tokens=900, cost_usd=0, now=0, wall=DAY)
    with pytest.raises(RateLimitedError):
        limiter.admit(config, "b", tokens=200, cost_usd=0, now=0, wall=DAY)
    limiter.settle("a", tokens=100, cost_usd=None)  # it used far less than projected
    limiter.admit(config, "b", tokens=200, cost_usd=0, now=0, wall=DAY)


def test_a_request_larger_than_the_whole_minute_is_refused_with_advice() -> None:
    limiter = TenantLimiter()
    with pytest.raises(InvalidRequestError, match="lower max_tokens"):
        limiter.admit(tenant(tokens_per_minute=100), "a", tokens=101, cost_usd=0, now=0, wall=DAY)


def test_concurrency_is_released_when_a_request_settles() -> None:
    limiter, config = TenantLimiter(), tenant(max_concurrency=1)
    limiter.admit(config, "a", tokens=1, cost_usd=0, now=0, wall=DAY)
    with pytest.raises(ConcurrencyLimitedError):
        limiter.admit(config, "b", tokens=1, cost_usd=0, now=0, wall=DAY)
    limiter.settle("a", tokens=1, cost_usd=0)
    limiter.admit(config, "b", tokens=1, cost_usd=0, now=0, wall=DAY)
    assert limiter.in_flight("t") == 1


def test_a_refused_request_takes_nothing() -> None:
    limiter = TenantLimiter()
    config = TenantConfig(
        name="t",
        limits=TenantLimits(requests_per_minute=5, max_concurrency=5),
        budget=TenantBudget(daily_usd=1.0),
    )
    with pytest.raises(BudgetExceededError):
        limiter.admit(config, "big", tokens=1, cost_usd=2.0, now=0, wall=DAY)
    assert limiter.in_flight("t") == 0
    for n in range(5):  # the whole minute's allowance is still there
        limiter.admit(config, f"r{n}", tokens=1, cost_usd=0.1, now=0, wall=DAY)


def test_budgets_count_settled_spend_and_reservations() -> None:
    limiter = TenantLimiter()
    config = TenantConfig(name="t", budget=TenantBudget(daily_usd=1.0, monthly_usd=10.0))
    limiter.seed([("t", "d:2025-12-01", 0.7), ("t", "m:2025-12", 9.0)])
    limiter.admit(config, "a", tokens=1, cost_usd=0.2, now=0, wall=DAY)
    with pytest.raises(BudgetExceededError) as refused:
        limiter.admit(config, "b", tokens=1, cost_usd=0.2, now=0, wall=DAY)
    assert refused.value.status == 402
    assert "daily budget" in refused.value.message
    assert "reserved" in refused.value.message
    limiter.settle("a", tokens=1, cost_usd=0.05)  # cheaper than projected
    limiter.admit(config, "b", tokens=1, cost_usd=0.2, now=0, wall=DAY)
    assert limiter.spent("t", "d:2025-12-01") == pytest.approx(0.75)
    # The next day starts afresh; the month does not.
    limiter.settle("b", tokens=1, cost_usd=0.2)
    limiter.admit(config, "c", tokens=1, cost_usd=0.5, now=0, wall=DAY + 86_400)
    with pytest.raises(BudgetExceededError, match="monthly"):
        limiter.admit(config, "d", tokens=1, cost_usd=0.5, now=0, wall=DAY + 86_400)


def test_racing_requests_cannot_reserve_past_the_budget() -> None:
    limiter = TenantLimiter()
    config = TenantConfig(name="t", budget=TenantBudget(daily_usd=1.0))
    admitted = 0
    for n in range(50):  # all in flight at once: none has settled
        try:
            limiter.admit(config, f"r{n}", tokens=1, cost_usd=0.03, now=0, wall=DAY)
            admitted += 1
        except BudgetExceededError:
            pass
    assert admitted == 33  # 33 x $0.03 = $0.99 <= $1.00 < 34 x $0.03
