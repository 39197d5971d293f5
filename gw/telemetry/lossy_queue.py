"""LossyQueue: items taken on the request path, consumed in batches off it, dropped (and
counted) under pressure. The trace store's queue, the request log and the OpenTelemetry
exporter are each one; the usage ledger is not (it must not lose rows: gw/telemetry/usage.py).

Strategy: ``submit`` only does ``put_nowait`` on a bounded queue, so a request never waits
for a consumer; when the queue is full the item is dropped and counted (invariant 8). One
background task waits on the queue (no polling while idle); when an item arrives it lingers
``linger`` seconds (unless a full batch is already waiting), takes up to ``batch_size``,
then hands the batch to ``consume``. A batch whose ``consume`` raises is counted in
``errors`` and its items as dropped, logged by error type only: telemetry never fails a
request.

``stop`` consumes what is queued for at most its timeout, then cancels the consumer; the
batch it was in and everything still queued are counted as dropped, as is anything
submitted afterwards. At quiescence ``submitted == written + dropped + queue_depth``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Generic, TypeVar

from gw.telemetry.throttled_log import ThrottledLog, error_kind

T = TypeVar("T")
logger = logging.getLogger("gw.telemetry")


class LossyQueue(Generic[T]):
    """A bounded queue of ``T`` consumed in batches by one task (see the module docstring).

    ``name`` names it in log lines and its task. Counters (plain ints, read them for
    metrics): ``submitted`` (every ``submit`` call), ``written`` (items ``consume`` took
    without raising), ``dropped`` and ``errors`` (failed ``consume`` calls).
    ``on_drop``, when given, sees every item dropped, for a consumer that counts them by
    kind.
    """

    def __init__(
        self,
        consume: Callable[[list[T]], Awaitable[None]],
        *,
        name: str,
        maxsize: int = 10_000,
        batch_size: int = 1024,
        linger: float = 0.0,
        on_drop: Callable[[Sequence[T]], None] | None = None,
    ) -> None:
        if maxsize < 1 or batch_size < 1:
            raise ValueError("maxsize and batch_size must be >= 1")
        self._consume = consume
        self.name = name
        self._queue: asyncio.Queue[T] = asyncio.Queue(maxsize)
        self._batch_size = batch_size
        self._linger = linger
        self._on_drop = on_drop
        self._task: asyncio.Task[None] | None = None
        self._idle = False  # the consumer waits for a first item with nothing in hand
        self._stopping = False
        self._closed = False
        self._errors_log = ThrottledLog(logger)
        self.submitted = 0
        self.written = 0
        self.dropped = 0
        self.errors = 0

    @property
    def queue_depth(self) -> int:
        return self._queue.qsize()

    def submit(self, item: T) -> None:
        """Queue ``item``; never blocks, never raises. Drops (and counts) when full or
        stopped."""
        self.submitted += 1
        if self._closed:
            self._drop((item,))
            return
        try:
            self._queue.put_nowait(item)
        except asyncio.QueueFull:
            self._drop((item,))

    async def start(self) -> None:
        """Start the consumer task (call from the event loop that will submit)."""
        if self._task is None and not self._closed:
            self._task = asyncio.create_task(self._run(), name=f"gw-{self.name}")

    async def stop(self, timeout: float) -> None:  # noqa: ASYNC109 -- items left when the time runs out are counted as dropped, which a caller's asyncio.timeout could not do
        """Consume everything queued (for at most ``timeout`` seconds), then stop."""
        if self._closed:
            return
        self._stopping = True
        if self._task is None:
            # Never started: consume with a task now, so stop() always flushes.
            self._task = asyncio.create_task(self._run(), name=f"gw-{self.name}")
        elif self._idle and self._queue.empty():
            self._task.cancel()  # parked on an empty queue: nothing to flush
        task = self._task
        _done, pending = await asyncio.wait({task}, timeout=timeout)
        if pending:
            task.cancel()
            await asyncio.wait({task})
        self._closed = True
        self._task = None
        left = [self._queue.get_nowait() for _ in range(self._queue.qsize())]
        if left:
            self._drop(left)
            logger.warning("%s stopped with %d items unwritten (dropped)", self.name, len(left))

    async def _run(self) -> None:
        while not (self._stopping and self._queue.empty()):
            batch = await self._collect()
            await self._hand_over(batch)
            await asyncio.sleep(0)  # a burst must not hold the loop from requests

    async def _collect(self) -> list[T]:
        """Wait for one item, then linger once for more and take up to a full batch.

        One sleep, not a wake-up per item: waiting on the queue with a timeout woke this
        task for every item submitted during the linger, a cost on every request.
        """
        self._idle = True
        try:
            batch = [await self._queue.get()]
        finally:
            self._idle = False
        if self._linger > 0 and not self._stopping and self._queue.qsize() < self._batch_size - 1:
            try:
                await asyncio.sleep(self._linger)
            except asyncio.CancelledError:
                self._drop(batch)  # what is still queued, stop() counts
                raise
        while not self._queue.empty() and len(batch) < self._batch_size:
            batch.append(self._queue.get_nowait())
        return batch

    async def _hand_over(self, batch: list[T]) -> None:
        try:
            await self._consume(batch)
        except asyncio.CancelledError:
            self._drop(batch)
            raise
        except Exception as exc:  # noqa: BLE001 -- telemetry must never fail a request: any consumer error is counted and the batch dropped
            self.errors += 1
            self._drop(batch)
            self._errors_log.warning(
                "%s write failed: %s; dropped %d (errors so far: %d, dropped: %d)",
                self.name,
                error_kind(exc),
                len(batch),
                self.errors,
                self.dropped,
            )
        else:
            self.written += len(batch)

    def _drop(self, items: Sequence[T]) -> None:
        self.dropped += len(items)
        if self._on_drop is not None:
            self._on_drop(items)


class QueueCounters:
    """The counters of a consumer built on a ``LossyQueue`` named ``queue``, for metrics
    and tests: ``submitted``, ``written``, ``dropped``, ``write_errors``, ``queue_depth``."""

    queue: LossyQueue[Any]

    @property
    def submitted(self) -> int:
        return self.queue.submitted

    @property
    def written(self) -> int:
        return self.queue.written

    @property
    def dropped(self) -> int:
        return self.queue.dropped

    @property
    def write_errors(self) -> int:
        return self.queue.errors

    @property
    def queue_depth(self) -> int:
        return self.queue.queue_depth
