"""TracePruner: keeps the traces table within ``state.trace_max_age`` and ``trace_max_bytes``,
and the usage rows within ``state.usage_max_age`` when that is set.

Strategy: a background task wakes shortly after start, then every ``state.prune_interval``
(read from the current snapshot). A reload that changes the interval re-arms the wait at
once (``settings_changed``): the next round comes one new interval after the last one, or
now when that has passed, not when the old wait would have ended. A round deletes traces
older than the age limit, then, while the traces' estimated size (see the retention
section of ``gw/store/sqlite.py``) is above the byte limit, the oldest ones; then usage
rows older than ``usage_max_age`` (whole UTC hours: the store rounds the cutoff down), whose
sums the store's rollup keeps for reports and budgets. Deletes run in batches of
``batch_size`` rows, one short transaction each, and the store's lock is released between
them, so trace and usage writes from the request path wait at most one batch. Config
revisions are never touched. Afterwards the store may hand free pages back to the file
system (``reclaim_space``); either way SQLite reuses them, so the file does not grow
without bound.

A failed round is logged and the loop goes on: pruning never takes the server down.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from collections.abc import Callable
from typing import Final, Protocol

import msgspec

from gw.config.schema import StateConfig
from gw.ports import Clock, Sleep

logger = logging.getLogger("gw.telemetry")

BATCH_SIZE: Final = 1000
FIRST_ROUND_DELAY_S: Final = 5.0
"""The first round runs this long after start (or after one interval, when shorter)."""


class PrunableStore(Protocol):
    """The store as the pruner sees it; ``SqliteStore`` is one. Trace counts are (rows,
    estimated bytes)."""

    async def trace_volume(self) -> tuple[int, int]: ...

    async def delete_traces_before(self, cutoff: float, *, limit: int) -> tuple[int, int]: ...

    async def delete_oldest_traces(self, *, limit: int) -> tuple[int, int]: ...

    async def delete_usage_before(self, cutoff: float, *, limit: int) -> int: ...

    async def reclaim_space(self) -> int: ...


class PruneReport(msgspec.Struct, frozen=True, kw_only=True):
    """What one round did."""

    expired: int  # traces older than trace_max_age
    evicted: int  # further oldest traces, to get under trace_max_bytes
    freed_bytes: int  # estimated
    remaining: int
    remaining_bytes: int  # estimated
    usage_deleted: int = 0  # usage rows older than usage_max_age (their sums are kept)


class TracePruner:
    """Deletes old traces in the background; ``start`` and ``stop`` bracket the server."""

    def __init__(
        self,
        store: PrunableStore,
        settings: Callable[[], StateConfig],
        clock: Clock,
        sleep: Sleep,
        *,
        batch_size: int = BATCH_SIZE,
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        self._store = store
        self._settings = settings
        self._clock = clock
        self._sleep = sleep
        self._batch_size = batch_size
        self._task: asyncio.Task[None] | None = None
        self._rearm = asyncio.Event()
        self.rounds = 0  # completed rounds, for tests and status
        self.failures = 0

    async def start(self) -> None:
        self._task = asyncio.create_task(self._loop())

    async def stop(self) -> None:
        """Cancel the loop; a delete in flight rolls back (its transaction is atomic)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(BaseException):  # a crashed loop must not stop shutdown
                await self._task

    def settings_changed(self, _snapshot: object = None) -> None:
        """A config revision was applied: a changed ``prune_interval`` applies now."""
        self._rearm.set()

    async def prune(self) -> PruneReport:
        """One round: expired traces first, then the oldest while over the byte limit,
        then expired usage rows."""
        settings = self._settings()
        cutoff = self._clock.time() - settings.trace_max_age.seconds
        expired = freed = 0
        while True:
            rows, size = await self._store.delete_traces_before(cutoff, limit=self._batch_size)
            expired, freed = expired + rows, freed + size
            if rows < self._batch_size:
                break
            await asyncio.sleep(0)  # let request-path writes in between batches
        remaining, volume = await self._store.trace_volume()
        evicted = 0
        limit = settings.trace_max_bytes.bytes
        while volume > limit and remaining > 0:
            # Delete about as many rows as the excess needs, at the average row size.
            average = volume / remaining
            wanted = min(self._batch_size, max(1, math.ceil((volume - limit) / average)))
            rows, size = await self._store.delete_oldest_traces(limit=wanted)
            if rows == 0:
                break
            evicted, freed = evicted + rows, freed + size
            remaining, volume = remaining - rows, max(volume - size, 0)
            await asyncio.sleep(0)
        usage = await self._prune_usage(settings)
        report = PruneReport(
            expired=expired,
            evicted=evicted,
            freed_bytes=freed,
            remaining=remaining,
            remaining_bytes=volume,
            usage_deleted=usage,
        )
        if expired or evicted or usage:
            await self._store.reclaim_space()
        if usage:
            logger.info("deleted %d usage rows older than %s", usage, settings.usage_max_age)
        if expired or evicted:
            logger.info(
                "pruned %d traces older than %s and %d more over %s (~%d bytes); %d traces"
                " (~%d bytes) kept",
                expired,
                settings.trace_max_age,
                evicted,
                settings.trace_max_bytes,
                freed,
                remaining,
                volume,
            )
        return report

    async def _prune_usage(self, settings: StateConfig) -> int:
        """Delete the usage rows older than ``usage_max_age`` (none when it is not set)."""
        if settings.usage_max_age is None:
            return 0
        cutoff = self._clock.time() - settings.usage_max_age.seconds
        deleted = 0
        while True:
            rows = await self._store.delete_usage_before(cutoff, limit=self._batch_size)
            deleted += rows
            if rows < self._batch_size:
                return deleted
            await asyncio.sleep(0)  # let request-path writes in between batches

    async def _loop(self) -> None:
        await self._wait(min(FIRST_ROUND_DELAY_S, self._settings().prune_interval.seconds))
        while True:
            try:
                await self.prune()
                self.rounds += 1
            except Exception as exc:  # noqa: BLE001 -- the loop outlives any one round
                self.failures += 1
                logger.warning("pruning traces failed: %s: %s", type(exc).__name__, exc)
            await self._wait(self._settings().prune_interval.seconds)

    async def _wait(self, first: float) -> None:
        """Sleep ``first`` seconds from now; when the settings change meanwhile, until one
        (new) ``prune_interval`` after the start of the wait instead."""
        started, delay = self._clock.monotonic(), first
        while True:
            self._rearm.clear()
            sleeping = asyncio.ensure_future(self._sleep(max(delay, 0.0)))
            rearmed = asyncio.ensure_future(self._rearm.wait())
            try:
                await asyncio.wait((sleeping, rearmed), return_when=asyncio.FIRST_COMPLETED)
            finally:
                for waiter in (sleeping, rearmed):
                    waiter.cancel()
            if sleeping.done() and not sleeping.cancelled():
                return
            interval = self._settings().prune_interval.seconds
            delay = started + interval - self._clock.monotonic()
