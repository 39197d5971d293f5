"""The retry budget per target (gw/execution/retry_budget.py)."""

from __future__ import annotations

from gw.config.schema import RetryBudgetConfig
from gw.config.units import Duration
from gw.execution.retry_budget import RetryBudget


def test_the_floor_allows_a_few_retries_without_traffic() -> None:
    budget = RetryBudget(RetryBudgetConfig(ratio=0.0, min_retries=2))
    assert [budget.try_retry("a/m", now=1.0) for _ in range(3)] == [True, True, False]
    assert budget.try_retry("b/m", now=1.0)  # per target


def test_retries_follow_a_share_of_the_calls() -> None:
    budget = RetryBudget(RetryBudgetConfig(ratio=0.2, min_retries=0))
    for _ in range(50):
        budget.record_call("a/m", now=5.0)
    allowed = sum(budget.try_retry("a/m", now=5.0) for _ in range(30))
    assert allowed == 10


def test_the_window_moves_on() -> None:
    budget = RetryBudget(RetryBudgetConfig(ratio=0.0, min_retries=1, window=Duration(10.0)))
    assert budget.try_retry("a/m", now=100.0)
    assert not budget.try_retry("a/m", now=105.0)
    assert budget.try_retry("a/m", now=111.0)  # the first retry's bucket has left the window


def test_forgotten_targets_start_afresh() -> None:
    budget = RetryBudget(RetryBudgetConfig(ratio=0.0, min_retries=1))
    assert budget.try_retry("a/m", now=1.0)
    budget.retain(["b/m"])
    assert budget.try_retry("a/m", now=1.0)
