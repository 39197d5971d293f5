"""TracePruner's loop with a fake store and a fake sleep: when rounds run, what they ask of
the store, that a failing round does not end the loop, and that stop is prompt."""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable, Coroutine
from typing import Any

import pytest

from gw.config.schema import StateConfig
from gw.config.units import ByteSize, Duration
from gw.telemetry.pruner import FIRST_ROUND_DELAY_S, TracePruner


class FakeStore:
    """Rows of ``row_bytes`` each; ``old`` of them are past the age limit; ``old_usage``
    usage rows past theirs."""

    def __init__(self, rows: int, old: int, row_bytes: int = 100, old_usage: int = 0) -> None:
        self.rows, self.old, self.row_bytes = rows, old, row_bytes
        self.old_usage = old_usage
        self.calls: list[str] = []
        self.fail_next = 0
        self.reclaimed = 0

    async def trace_volume(self) -> tuple[int, int]:
        self.calls.append("volume")
        if self.fail_next:
            self.fail_next -= 1
            raise OSError("disk I/O error")
        return self.rows, self.rows * self.row_bytes

    async def delete_traces_before(self, cutoff: float, *, limit: int) -> tuple[int, int]:
        self.calls.append(f"before {cutoff:g} {limit}")
        n = min(limit, self.old)
        self.old, self.rows = self.old - n, self.rows - n
        return n, n * self.row_bytes

    async def delete_oldest_traces(self, *, limit: int) -> tuple[int, int]:
        self.calls.append(f"oldest {limit}")
        n = min(limit, self.rows)
        self.rows -= n
        return n, n * self.row_bytes

    async def delete_usage_before(self, cutoff: float, *, limit: int) -> int:
        self.calls.append(f"usage before {cutoff:g} {limit}")
        n = min(limit, self.old_usage)
        self.old_usage -= n
        return n

    async def reclaim_space(self) -> int:
        self.reclaimed += 1
        return 0


class Clock:
    def time(self) -> float:
        return 10_000.0

    def monotonic(self) -> float:
        return 0.0


class FakeSleep:
    """Records each wait; after ``rounds`` waits it blocks until cancelled."""

    def __init__(self, rounds: int) -> None:
        self.waits: list[float] = []
        self.rounds = rounds
        self.done = asyncio.Event()

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)
        if len(self.waits) > self.rounds:
            self.done.set()
            await asyncio.Event().wait()
        await asyncio.sleep(0)


def run(test: Callable[..., Coroutine[Any, Any, None]]) -> Callable[..., None]:
    """Run an async test body in a fresh event loop (the suite has no async plugin)."""

    @functools.wraps(test)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        asyncio.run(test(*args, **kwargs))

    return wrapper


def settings(**fields: object) -> StateConfig:
    return StateConfig(**fields)  # type: ignore[arg-type]  # test builder


@run
async def test_rounds_run_shortly_after_start_then_every_interval() -> None:
    store = FakeStore(rows=0, old=0)
    sleep = FakeSleep(rounds=3)
    pruner = TracePruner(store, lambda: settings(prune_interval=Duration(300)), Clock(), sleep)
    await pruner.start()
    await asyncio.wait_for(sleep.done.wait(), 5)
    await asyncio.wait_for(pruner.stop(), 1)  # prompt, though the sleep never ends by itself
    assert sleep.waits == [FIRST_ROUND_DELAY_S, 300.0, 300.0, 300.0]
    assert pruner.rounds == 3


@run
async def test_an_interval_shorter_than_the_first_delay_is_used_first() -> None:
    sleep = FakeSleep(rounds=1)
    pruner = TracePruner(
        FakeStore(0, 0), lambda: settings(prune_interval=Duration(1)), Clock(), sleep
    )
    await pruner.start()
    await asyncio.wait_for(sleep.done.wait(), 5)
    await pruner.stop()
    assert sleep.waits[0] == 1.0


@run
async def test_a_failing_round_is_logged_and_the_loop_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = FakeStore(rows=5, old=0)
    store.fail_next = 1
    sleep = FakeSleep(rounds=2)
    pruner = TracePruner(store, settings, Clock(), sleep)
    with caplog.at_level(logging.WARNING, logger="gw.telemetry"):
        await pruner.start()
        await asyncio.wait_for(sleep.done.wait(), 5)
        await pruner.stop()
    assert (pruner.failures, pruner.rounds) == (1, 1)
    assert "pruning traces failed: OSError" in caplog.text


@run
async def test_age_then_size_in_batches_with_the_settings_of_each_round() -> None:
    store = FakeStore(rows=50, old=25)
    current = settings(trace_max_age=Duration(1000), trace_max_bytes=ByteSize(1_000))
    pruner = TracePruner(store, lambda: current, Clock(), asyncio.sleep, batch_size=10)
    report = await pruner.prune()
    # Age first, batch by batch until a short batch; then the oldest, only as many as needed.
    assert store.calls == [
        "before 9000 10",
        "before 9000 10",
        "before 9000 10",
        "volume",
        "oldest 10",
        "oldest 5",
    ]
    assert (report.expired, report.evicted, report.remaining) == (25, 15, 10)
    assert report.remaining_bytes == 1_000
    assert store.reclaimed == 1

    store.calls.clear()
    current = settings(trace_max_bytes=ByteSize(2_000))  # a reload raised the limit
    again = await pruner.prune()
    assert (again.expired, again.evicted) == (0, 0)
    assert store.reclaimed == 1  # nothing deleted, nothing to reclaim


@run
async def test_usage_rows_go_by_age_in_batches_only_when_a_limit_is_set() -> None:
    store = FakeStore(rows=0, old=0, old_usage=25)
    current = settings()
    pruner = TracePruner(store, lambda: current, Clock(), asyncio.sleep, batch_size=10)
    report = await pruner.prune()
    assert (report.usage_deleted, store.old_usage, store.reclaimed) == (0, 25, 0)
    assert not any(call.startswith("usage") for call in store.calls)

    store.calls.clear()
    current = settings(usage_max_age=Duration(4000))  # a reload set it
    report = await pruner.prune()
    assert [call for call in store.calls if call.startswith("usage")] == [
        "usage before 6000 10",
        "usage before 6000 10",
        "usage before 6000 10",
    ]
    assert (report.usage_deleted, store.old_usage, store.reclaimed) == (25, 0, 1)


@run
async def test_stop_before_start_and_twice_is_harmless() -> None:
    pruner = TracePruner(FakeStore(0, 0), settings, Clock(), asyncio.sleep)
    await pruner.stop()
    await pruner.start()
    await pruner.stop()
    await pruner.stop()


class ManualClock(Clock):
    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now


class BlockingSleep:
    """Each wait but one of 0 blocks until cancelled; records what it was asked to wait."""

    def __init__(self) -> None:
        self.waits: list[float] = []
        self.waiting = asyncio.Event()

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.waiting.set()
        if seconds > 0:
            await asyncio.Event().wait()


async def wait_for_waits(sleep: BlockingSleep, count: int) -> None:
    while len(sleep.waits) < count:
        sleep.waiting.clear()
        await asyncio.wait_for(sleep.waiting.wait(), 5)


@run
async def test_a_changed_interval_rearms_the_wait_at_once() -> None:
    """Lowered from 1 h to 60 s 40 s into the first wait: the wait is cut to the 20 s left;
    lowered below what has passed, the round runs now; an unchanged reload re-arms alike."""
    current = settings(prune_interval=Duration(3600))
    clock, sleep = ManualClock(), BlockingSleep()
    pruner = TracePruner(FakeStore(0, 0), lambda: current, clock, sleep)
    await pruner.start()
    await wait_for_waits(sleep, 1)
    assert sleep.waits == [FIRST_ROUND_DELAY_S]
    clock.now = 40.0
    current = settings(prune_interval=Duration(60))
    pruner.settings_changed()
    await wait_for_waits(sleep, 2)
    assert sleep.waits[1] == 20.0
    assert pruner.rounds == 0
    current = settings(prune_interval=Duration(10))
    pruner.settings_changed()
    await wait_for_waits(sleep, 4)  # a wait of 0, the round, then the next full interval
    await pruner.stop()
    assert sleep.waits[2:] == [0.0, 10.0]
    assert pruner.rounds == 1
