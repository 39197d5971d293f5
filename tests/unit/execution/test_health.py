"""HealthBook: degraded and unhealthy thresholds, the breaker's cooldown and trial, probes.

Time is a fake monotonic clock advanced by hand; nothing sleeps.
"""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gw.config.schema import HealthConfig
from gw.config.units import Duration
from gw.execution.health import HealthBook, closed_reason

KEY = "openai/gpt-4o-mini"
DEFAULTS = HealthConfig()  # degraded 3, unhealthy 9, 50% over 60s from 10 calls, 5s..5m, 30s


class FakeClock:
    """The ``monotonic()`` half of ``gw.ports.Clock``, moved only by ``advance``."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start

    def monotonic(self) -> float:
        return self.now

    def advance(self, seconds: float) -> float:
        self.now += seconds
        return self.now


def fail(book: HealthBook, clock: FakeClock, times: int, key: str = KEY) -> None:
    for _ in range(times):
        book.record(key, False, now=clock.monotonic())


def open_breaker(book: HealthBook, clock: FakeClock, key: str = KEY) -> None:
    fail(book, clock, DEFAULTS.unhealthy_after, key)
    assert book.state(key, now=clock.now).breaker == "open"


def test_an_unseen_target_is_healthy_and_has_no_trial() -> None:
    book = HealthBook(DEFAULTS)
    health = book.state(KEY, now=0.0)
    assert (health.status, health.breaker) == ("healthy", "closed")
    assert "no calls" in health.reason
    assert not book.claim_trial(KEY, now=0.0)


def test_consecutive_failures_degrade_and_a_success_restores() -> None:
    book, clock = HealthBook(DEFAULTS), FakeClock()
    fail(book, clock, 2)
    assert book.state(KEY, now=clock.now).status == "healthy"
    fail(book, clock, 1)
    health = book.state(KEY, now=clock.now)
    assert (health.status, health.breaker, health.consecutive_failures) == ("degraded", "closed", 3)
    assert "3 consecutive failures" in health.reason
    assert not book.claim_trial(KEY, now=clock.now)  # closed: nothing to claim
    book.record(KEY, True, now=clock.now)
    assert book.state(KEY, now=clock.now).status == "healthy"


def test_unhealthy_after_consecutive_failures_opens_the_breaker() -> None:
    book, clock = HealthBook(DEFAULTS), FakeClock()
    fail(book, clock, 8)
    assert book.state(KEY, now=clock.now).status == "degraded"
    fail(book, clock, 1)
    health = book.state(KEY, now=clock.now)
    assert (health.status, health.breaker, health.openings) == ("unhealthy", "open", 1)
    assert health.cooldown_until == clock.now + 5.0
    assert "9 consecutive failures" in health.reason
    assert "cooldown 5s" in health.reason
    assert not health.trial_available
    assert not book.claim_trial(KEY, now=clock.advance(4.9))


def alternate(book: HealthBook, now: float, calls: int, failures: int) -> None:
    """``calls`` outcomes, ``failures`` of them, the last included, never two in a row."""
    spare = calls - failures - (failures - 1)
    assert spare >= 0
    outcomes = [True] * spare + [False, True] * (failures - 1) + [False]  # the last one fails
    for ok in outcomes:
        book.record(KEY, ok, now=now)


@pytest.mark.parametrize(
    ("calls", "failures", "breaker"),
    [
        (10, 5, "closed"),  # 50% is not above 50%
        (11, 6, "open"),  # 54.5% of at least 10 calls
        (9, 5, "closed"),  # above 50%, but the window holds fewer than min_requests
    ],
)
def test_error_rate_over_the_window_opens_the_breaker(
    calls: int, failures: int, breaker: str
) -> None:
    book = HealthBook(DEFAULTS)
    alternate(book, 100.0, calls, failures)
    health = book.state(KEY, now=100.0)
    assert health.consecutive_failures <= 1
    assert health.breaker == breaker
    if breaker == "open":
        assert "above the 50% error rate" in health.reason


@pytest.mark.parametrize(("later", "breaker"), [(30.0, "open"), (53.9, "open"), (60.0, "closed")])
def test_window_buckets_age_out(later: float, breaker: str) -> None:
    book = HealthBook(DEFAULTS)
    alternate(book, 0.0, 9, 5)  # 9 calls, 5 failed: one more failure opens while they count
    assert book.state(KEY, now=later).window_calls == (9 if breaker == "open" else 0)
    book.record(KEY, False, now=later)
    assert book.state(KEY, now=later).breaker == breaker


def test_window_counts_only_its_last_buckets() -> None:
    book = HealthBook(DEFAULTS)
    for second in range(120):
        book.record(KEY, True, now=float(second))
    health = book.state(KEY, now=119.0)
    # 60s in 10 buckets of 6s: the current bucket (114-119) and the nine before it.
    assert (health.window_calls, health.window_failures) == (60, 0)
    assert book.state(KEY, now=500.0).window_calls == 0


def test_a_report_older_than_the_window_is_dropped() -> None:
    book = HealthBook(DEFAULTS)
    book.record(KEY, True, now=100.0)
    book.record(KEY, False, now=40.0)  # a stale reading that maps to the same bucket slot
    assert (
        book.state(KEY, now=100.0).window_calls,
        book.state(KEY, now=100.0).window_failures,
    ) == (1, 0)


def test_cooldown_widens_exponentially_up_to_the_cap() -> None:
    book, clock = HealthBook(DEFAULTS), FakeClock()
    open_breaker(book, clock)
    waits = []
    for _ in range(9):
        health = book.state(KEY, now=clock.now)
        assert health.cooldown_until is not None
        wait = health.cooldown_until - clock.now
        waits.append(wait)
        clock.advance(wait)
        assert book.claim_trial(KEY, now=clock.now)
        book.record(KEY, False, now=clock.now, trial=True)
    assert waits == [5.0, 10.0, 20.0, 40.0, 80.0, 160.0, 300.0, 300.0, 300.0]
    assert book.state(KEY, now=clock.now).openings == 10


def test_cooldown_stays_capped_after_thousands_of_openings() -> None:
    book, clock = HealthBook(DEFAULTS), FakeClock()
    open_breaker(book, clock)
    for _ in range(3000):
        clock.advance(DEFAULTS.max_cooldown.seconds)
        assert book.claim_trial(KEY, now=clock.now)
        book.record(KEY, False, now=clock.now, trial=True)
    assert book.state(KEY, now=clock.now).cooldown_until == clock.now + 300.0


def test_exactly_one_of_many_concurrent_claimers_gets_the_trial() -> None:
    book, clock = HealthBook(DEFAULTS), FakeClock()
    open_breaker(book, clock)
    clock.advance(5.0)
    assert book.state(KEY, now=clock.now).trial_available

    async def claimer() -> bool:
        await asyncio.sleep(0)  # let every task reach this point before any claims
        return book.claim_trial(KEY, now=clock.monotonic())

    async def race() -> list[bool]:
        return list(await asyncio.gather(*(claimer() for _ in range(50))))

    assert sorted(asyncio.run(race())) == [False] * 49 + [True]
    health = book.state(KEY, now=clock.now)
    assert (health.breaker, health.status, health.trial_available) == (
        "half_open",
        "unhealthy",
        False,
    )
    assert "trial request is in flight" in health.reason
    assert not book.claim_trial(KEY, now=clock.advance(29.0))  # still in flight


def test_a_trial_never_reported_expires_after_trial_timeout() -> None:
    book, clock = HealthBook(DEFAULTS), FakeClock()
    open_breaker(book, clock)
    assert book.claim_trial(KEY, now=clock.advance(5.0))
    assert not book.claim_trial(KEY, now=clock.advance(29.9))
    assert book.state(KEY, now=clock.advance(0.1)).trial_available
    assert book.claim_trial(KEY, now=clock.now)  # a fresh trial
    assert not book.claim_trial(KEY, now=clock.now)


def test_only_the_trials_success_closes_and_it_resets_everything() -> None:
    book, clock = HealthBook(DEFAULTS), FakeClock()
    open_breaker(book, clock)
    book.record(KEY, True, now=clock.now)  # an attempt already in flight when it opened
    assert book.state(KEY, now=clock.now).breaker == "open"
    clock.advance(5.0)
    book.record(KEY, True, now=clock.now, trial=True)  # claims "trial" but never claimed
    assert book.state(KEY, now=clock.now).breaker == "half_open"
    assert book.claim_trial(KEY, now=clock.now)
    book.record(KEY, True, now=clock.now)  # someone else's success is not the trial's
    assert book.state(KEY, now=clock.now).breaker == "half_open"
    book.record(KEY, True, now=clock.now, trial=True)
    health = book.state(KEY, now=clock.now)
    assert (health.status, health.breaker, health.openings) == ("healthy", "closed", 0)
    assert (health.consecutive_failures, health.window_calls) == (0, 0)
    open_breaker(book, clock)  # the widening starts over
    assert book.state(KEY, now=clock.now).cooldown_until == clock.now + 5.0


def test_a_failed_trial_reopens_wider() -> None:
    book, clock = HealthBook(DEFAULTS), FakeClock()
    open_breaker(book, clock)
    assert book.claim_trial(KEY, now=clock.advance(5.0))
    book.record(KEY, False, now=clock.now, trial=True)
    health = book.state(KEY, now=clock.now)
    assert (health.breaker, health.openings, health.cooldown_until) == ("open", 2, clock.now + 10.0)
    assert "half-open trial failed" in health.reason
    assert not book.claim_trial(KEY, now=clock.advance(9.9))
    assert book.claim_trial(KEY, now=clock.advance(0.1))


def test_a_probe_success_resets_a_degraded_target_while_closed() -> None:
    book, clock = HealthBook(DEFAULTS), FakeClock()
    fail(book, clock, 5)
    book.record_probe(KEY, True, now=clock.now)
    health = book.state(KEY, now=clock.now)
    assert (health.status, health.consecutive_failures, health.last_probe_ok) == (
        "healthy",
        0,
        True,
    )
    assert health.window_failures == 5  # probes never touch the window


def test_probe_failures_degrade_but_never_open() -> None:
    book, clock = HealthBook(DEFAULTS), FakeClock()
    for _ in range(100):
        book.record_probe(KEY, False, now=clock.advance(1.0))
    health = book.state(KEY, now=clock.now)
    assert (health.status, health.breaker) == ("degraded", "closed")
    assert (health.consecutive_failures, health.window_calls) == (3, 0)
    fail(book, clock, 6)  # live failures continue the count from there
    assert book.state(KEY, now=clock.now).breaker == "open"


def test_probes_never_close_or_shorten_an_open_breaker() -> None:
    book, clock = HealthBook(DEFAULTS), FakeClock()
    open_breaker(book, clock)
    until = book.state(KEY, now=clock.now).cooldown_until
    book.record_probe(KEY, True, now=clock.advance(1.0))
    health = book.state(KEY, now=clock.now)
    assert (health.breaker, health.cooldown_until, health.last_probe_ok) == ("open", until, True)
    clock.advance(4.0)
    for _ in range(5):
        book.record_probe(KEY, True, now=clock.now)
    health = book.state(KEY, now=clock.now)
    assert (health.status, health.breaker, health.trial_available) == (
        "unhealthy",
        "half_open",
        True,
    )


def test_probe_successes_do_not_keep_a_failing_target_closed() -> None:
    """Live traffic keeps failing while probes succeed: the window still opens it."""
    book, clock = HealthBook(DEFAULTS), FakeClock()
    for _ in range(5):
        fail(book, clock, 2)
        book.record_probe(KEY, True, now=clock.advance(1.0))
    health = book.state(KEY, now=clock.now)
    assert health.breaker == "open"
    assert "10 of 10 calls failed" in health.reason
    book.record_probe(KEY, True, now=clock.advance(5.0))
    assert book.claim_trial(KEY, now=clock.now)
    book.record(KEY, False, now=clock.now, trial=True)
    book.record_probe(KEY, True, now=clock.now)
    assert book.state(KEY, now=clock.now).breaker == "open"


def test_retain_forgets_targets_no_longer_configured() -> None:
    book, clock = HealthBook(DEFAULTS), FakeClock()
    open_breaker(book, clock, "a/m")
    open_breaker(book, clock, "b/m")
    book.retain(["b/m", "c/m"])
    assert [health.key for health in book.states(now=clock.now)] == ["b/m"]
    assert book.state("a/m", now=clock.now).status == "healthy"
    assert book.state("b/m", now=clock.now).status == "unhealthy"


def test_past_max_targets_the_oldest_closed_entry_is_forgotten() -> None:
    book, clock = HealthBook(DEFAULTS, max_targets=2), FakeClock()
    open_breaker(book, clock, "a/m")
    fail(book, clock, 3, "b/m")
    fail(book, clock, 1, "c/m")
    assert [health.key for health in book.states(now=clock.now)] == ["a/m", "c/m"]
    assert book.state("a/m", now=clock.now).breaker == "open"


def test_reconfigure_applies_new_thresholds_and_keeps_breakers() -> None:
    book, clock = HealthBook(DEFAULTS), FakeClock()
    fail(book, clock, 2)
    open_breaker(book, clock, "b/m")
    book.reconfigure(HealthConfig(degraded_after=2, window=Duration(30.0)))
    health = book.state(KEY, now=clock.now)
    assert (health.status, health.window_calls) == ("degraded", 0)  # a new window starts
    assert book.state("b/m", now=clock.now).breaker == "open"


# -- properties ------------------------------------------------------------------------

SMALL = HealthConfig(
    degraded_after=2,
    unhealthy_after=4,
    error_rate=0.5,
    window=Duration(10.0),
    min_requests=3,
    cooldown=Duration(1.0),
    max_cooldown=Duration(4.0),
    trial_timeout=Duration(3.0),
)
operations = st.lists(
    st.one_of(
        st.tuples(st.just("live"), st.booleans(), st.booleans()),  # ok, trial
        st.tuples(st.just("probe"), st.booleans(), st.just(False)),
        st.tuples(st.just("claim"), st.just(False), st.just(False)),
        st.tuples(
            st.just("wait"), st.sampled_from([0.0, 0.5, 1.0, 2.9, 3.0, 7.0, 30.0]), st.just(False)
        ),
    ),
    max_size=120,
)


@settings(max_examples=300, deadline=None)
@given(operations, st.sampled_from([SMALL, DEFAULTS]))
def test_any_history_keeps_the_breaker_rules(
    ops: list[tuple[str, bool | float, bool]], config: HealthConfig
) -> None:
    book, clock = HealthBook(config), FakeClock(start=0.0)
    trial_deadline: float | None = None  # the model's view of the one outstanding trial
    failure_run = 0  # live failures since the last live or probe success
    for kind, value, trial in ops:
        now = clock.now
        if kind == "wait":
            clock.advance(float(value))
        elif kind == "claim":
            won = book.claim_trial(KEY, now=now)
            if won:
                assert trial_deadline is None or now >= trial_deadline, "two trials at once"
                trial_deadline = now + config.trial_timeout.seconds
        elif kind == "probe":
            book.record_probe(KEY, bool(value), now=now)
            failure_run = 0 if value else failure_run
        else:
            book.record(KEY, bool(value), now=now, trial=trial)
            failure_run = 0 if value else failure_run + 1
            if trial:
                trial_deadline = None
        health = book.state(KEY, now=clock.now)
        if failure_run >= config.unhealthy_after:
            assert health.status == "unhealthy"
        assert (health.breaker == "closed") == (health.status != "unhealthy")
        if health.cooldown_until is not None:
            assert health.openings >= 1
        if health.trial_until is not None:
            assert health.trial_until - clock.now <= config.trial_timeout.seconds + 1e-9
            assert not health.trial_available


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([0.0, 0.5, 1.0, 3.0, 11.0]), min_size=1, max_size=40))
def test_every_cooldown_is_within_cooldown_and_max_cooldown(waits: list[float]) -> None:
    book, clock = HealthBook(SMALL), FakeClock(start=0.0)
    fail(book, clock, SMALL.unhealthy_after)
    for wait in waits:
        clock.advance(wait)
        if book.claim_trial(KEY, now=clock.now):
            book.record(KEY, False, now=clock.now, trial=True)
            until = book.state(KEY, now=clock.now).cooldown_until
            assert until is not None
            assert SMALL.cooldown.seconds <= until - clock.now <= SMALL.max_cooldown.seconds


def test_a_closed_breaker_whose_window_emptied_says_so() -> None:
    assert closed_reason(0, 0, 2, Duration(60.0)) == (
        "closed; no calls in the last 1m; the last 2 calls failed"
    )
    assert closed_reason(0, 0, 0, Duration(60.0)) == "closed; no calls in the last 1m"
    assert closed_reason(5, 1, 0, Duration(60.0)) == "closed; 1 of 5 calls failed in the last 1m"
