"""Backoff arithmetic, fallback eligibility and cost: pure functions."""

from __future__ import annotations

from gw.config.schema import FallbackConfig, ModelEntry, RetryConfig
from gw.config.units import Duration
from gw.errors import ALL_ERRORS, InvalidRequestError, UpstreamError
from gw.execution.backoff import backoff_delay, jitter_factor
from gw.execution.cost import cost_usd
from gw.execution.fallback import DEFAULT_FALLBACK_CODES, may_fall_back
from gw.ir import Usage


def test_backoff_grows_and_is_deterministic() -> None:
    retry = RetryConfig(initial_backoff=Duration(0.1), multiplier=2.0, max_backoff=Duration(1.0))
    delays = [backoff_delay(retry, n, "req_a", None) for n in (1, 2, 3, 4, 5)]
    assert delays == [backoff_delay(retry, n, "req_a", None) for n in (1, 2, 3, 4, 5)]
    assert all(d is not None for d in delays)
    assert 0.05 <= delays[0] <= 0.1  # type: ignore[operator]
    assert delays[4] <= 1.0  # type: ignore[operator]


def test_jitter_stays_in_range() -> None:
    factors = [jitter_factor(f"req_{i}", 1) for i in range(500)]
    assert min(factors) >= 0.5
    assert max(factors) < 1.0


def test_retry_after_is_a_floor_and_too_long_means_no_retry() -> None:
    retry = RetryConfig(max_retry_after=Duration(10))
    assert backoff_delay(retry, 1, "r", 4.0) == 4.0
    assert backoff_delay(retry, 1, "r", 11.0) is None


def test_fallback_defaults_and_exhaustive_list() -> None:
    assert may_fall_back(UpstreamError("x"), FallbackConfig())
    assert not may_fall_back(InvalidRequestError("x"), FallbackConfig())
    assert not may_fall_back(UpstreamError("x"), FallbackConfig(enabled=False))
    assert not may_fall_back(UpstreamError("x"), FallbackConfig(on_error_codes=("rate_limited",)))
    assert {cls.code for cls in ALL_ERRORS} >= DEFAULT_FALLBACK_CODES


def test_cost_bills_cached_tokens_at_the_cached_price() -> None:
    entry = ModelEntry(
        provider="p",
        model="m",
        input_per_mtok=2.5,
        output_per_mtok=10.0,
        cached_input_per_mtok=1.25,
    )
    usage = Usage(input_tokens=1_000_000, output_tokens=100_000, cached_input_tokens=400_000)
    assert cost_usd(entry, usage) == 0.6 * 2.5 + 0.4 * 1.25 + 0.1 * 10.0
    assert cost_usd(None, usage) is None
    assert cost_usd(entry, None) is None
