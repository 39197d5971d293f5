"""LossyQueue: batches in order, drops when full or stopped, bounded stop, failing consumers
counted and logged by type only."""

from __future__ import annotations

import asyncio
import logging

import pytest

from gw.telemetry.lossy_queue import LossyQueue


class Consumer:
    def __init__(self, *, fail: bool = False, delay: float = 0.0) -> None:
        self.batches: list[list[int]] = []
        self.fail = fail
        self.delay = delay
        self.called = asyncio.Event()  # set at the first batch, before any delay

    async def __call__(self, batch: list[int]) -> None:
        self.called.set()
        if self.delay:
            await asyncio.sleep(self.delay)
        if self.fail:
            raise RuntimeError(f"secret item {batch[0]}")
        self.batches.append(batch)


def test_items_are_consumed_in_batches_in_order() -> None:
    consumer = Consumer()
    lossy: LossyQueue[int] = LossyQueue(consumer, name="test", batch_size=4, linger=0.01)

    async def main() -> None:
        await lossy.start()
        for n in range(10):
            lossy.submit(n)
        await lossy.stop(timeout=1.0)

    asyncio.run(main())
    assert consumer.batches == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert (lossy.submitted, lossy.written, lossy.dropped, lossy.errors) == (10, 10, 0, 0)


def test_full_and_stopped_queues_drop_and_count() -> None:
    consumer = Consumer()
    lossy: LossyQueue[int] = LossyQueue(consumer, name="test", maxsize=3)
    for n in range(5):  # not started, no loop: the queue fills up
        lossy.submit(n)
    assert (lossy.submitted, lossy.dropped, lossy.queue_depth) == (5, 2, 3)
    asyncio.run(lossy.stop(timeout=1.0))  # never started: stop still consumes what is queued
    assert consumer.batches == [[0, 1, 2]]
    lossy.submit(5)
    assert (lossy.submitted, lossy.written, lossy.dropped, lossy.queue_depth) == (6, 3, 3, 0)


def test_stop_is_bounded_and_counts_what_is_left_as_dropped() -> None:
    consumer = Consumer(delay=30)
    lossy: LossyQueue[int] = LossyQueue(consumer, name="test", batch_size=2)

    async def main() -> float:
        await lossy.start()
        for n in range(5):
            lossy.submit(n)
        await consumer.called.wait()  # the consumer holds the first batch
        loop = asyncio.get_running_loop()
        started = loop.time()
        await lossy.stop(timeout=0.1)
        return loop.time() - started

    assert asyncio.run(main()) < 1.0
    assert (lossy.written, lossy.dropped, lossy.queue_depth) == (0, 5, 0)


def test_a_failing_consumer_is_counted_and_logged_by_type_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    lossy: LossyQueue[int] = LossyQueue(Consumer(fail=True), name="test queue", batch_size=2)

    async def main() -> None:
        await lossy.start()
        for n in range(5):
            lossy.submit(n)
        await lossy.stop(timeout=1.0)

    with caplog.at_level(logging.WARNING, logger="gw.telemetry"):
        asyncio.run(main())
    assert (lossy.errors, lossy.dropped, lossy.written) == (3, 5, 0)
    assert "test queue write failed: RuntimeError" in caplog.text
    assert "secret" not in caplog.text
    assert len(caplog.records) == 1


def test_stop_of_an_idle_queue_returns_at_once() -> None:
    lossy: LossyQueue[int] = LossyQueue(Consumer(), name="test", linger=5.0)

    async def main() -> None:
        await lossy.start()
        await asyncio.sleep(0)
        await asyncio.wait_for(lossy.stop(timeout=5.0), timeout=1.0)

    asyncio.run(main())


def test_a_burst_does_not_hold_the_event_loop() -> None:
    """Each batch yields to the loop, even when the consumer itself never awaits."""
    ticks: list[int] = []
    lossy: LossyQueue[int] = LossyQueue(Consumer(), name="test", batch_size=1)

    async def ticker() -> None:
        for n in range(5):
            ticks.append(n)
            await asyncio.sleep(0)

    async def main() -> int:
        await lossy.start()
        for n in range(1000):
            lossy.submit(n)
        tick = asyncio.create_task(ticker())
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        await tick
        written_when_ticker_done = lossy.written
        await lossy.stop(timeout=1.0)
        return written_when_ticker_done

    assert asyncio.run(main()) < 1000
    assert lossy.written == 1000


def test_bad_sizes_are_refused() -> None:
    with pytest.raises(ValueError, match="must be >= 1"):
        LossyQueue(Consumer(), name="test", maxsize=0)


def test_items_arriving_during_the_linger_join_one_batch_and_a_cut_linger_counts() -> None:
    consumer = Consumer()
    lossy: LossyQueue[int] = LossyQueue(consumer, name="test", linger=0.05)
    stuck: LossyQueue[int] = LossyQueue(Consumer(), name="stuck", linger=30.0)

    async def main() -> None:
        await lossy.start()
        await stuck.start()
        for n in range(5):  # one item per loop turn, all within the linger
            lossy.submit(n)
            stuck.submit(n)
            await asyncio.sleep(0)
        await lossy.stop(timeout=1.0)
        await stuck.stop(timeout=0.05)  # cancelled while lingering

    asyncio.run(main())
    assert consumer.batches == [[0, 1, 2, 3, 4]]
    assert (stuck.submitted, stuck.written, stuck.dropped, stuck.queue_depth) == (5, 0, 5, 0)


def test_on_drop_sees_every_item_dropped_on_every_path() -> None:
    seen: list[int] = []
    failing = Consumer(fail=True)
    lossy: LossyQueue[int] = LossyQueue(
        failing, name="test", maxsize=3, batch_size=2, on_drop=seen.extend
    )
    for n in range(5):  # not started: 3 and 4 find the queue full
        lossy.submit(n)
    assert seen == [3, 4]
    asyncio.run(lossy.stop(timeout=1.0))  # each batch fails: dropped
    lossy.submit(5)  # after stop
    assert sorted(seen) == [0, 1, 2, 3, 4, 5]
    assert lossy.dropped == len(seen)

    seen.clear()
    stuck: LossyQueue[int] = LossyQueue(
        Consumer(delay=30), name="test", batch_size=2, on_drop=seen.extend
    )

    async def main() -> None:
        await stuck.start()
        for n in range(5):
            stuck.submit(n)
        await stuck.stop(timeout=0.1)  # cut: the batch the consumer holds and the rest

    asyncio.run(main())
    assert sorted(seen) == [0, 1, 2, 3, 4]
    assert stuck.dropped == 5
