"""BreakerMirror: this gateway's circuit breakers, mirrored to and from the fleet's.

It is the health book's ``BreakerShare`` (gw/ports.py). The book decides every request
from its own memory; the mirror only carries transitions: what the book calls
(``opened``, ``closed``, ``claim_trial``) is queued and sent by a background task, and a
second task listens to the other gateways' notes and applies them to the book
(gw/fleet/breaker_notes.py). On (re)connecting the listener first subscribes, then reads
the breakers already open, so an outage that began before this gateway started, or while
it was cut off, is learnt too.

When the store (Redis) cannot be reached the breakers keep working as on one machine:
notes are dropped, and a half-open trial is this gateway's own to send (fail-open to
local health). The first failure of a kind is logged and the rest at most once a minute;
every one is counted (``counts``, for ``/metrics``), and the listener reconnects with a
growing backoff. The channel (``BreakerChannel``) is the Redis part, so this logic is
tested without a server.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Final, Protocol

from gw.execution.health import HealthBook
from gw.fleet.breaker_notes import BreakerNote, Opened, apply_note, remaining_cooldown
from gw.ports import Clock, Sleep, TrialClaim
from gw.telemetry.throttled_log import ThrottledLog, error_kind

logger = logging.getLogger("gw.fleet")
MAX_QUEUED: Final = 1024  # transitions waiting to be sent; past it they are dropped
FIRST_BACKOFF_S: Final = 0.2
MAX_BACKOFF_S: Final = 5.0
STOP_WAIT_S: Final = 2.0


class BreakerChannel(Protocol):
    """Where the fleet's breakers live (gw/fleet/redis_health.py). Every method may raise
    when the store cannot be reached; the mirror counts it and carries on."""

    async def publish_open(
        self,
        target: str,
        *,
        gateway: str,
        cooldown: float,
        openings: int,
        cause: str,
        hold: float,
    ) -> None:
        """Record and announce an opening; the record lasts ``hold`` seconds."""
        ...

    async def publish_close(self, target: str, *, gateway: str) -> None: ...

    async def claim_trial(self, target: str, *, gateway: str, ttl: float) -> tuple[str, float]:
        """Claim ``target``'s half-open trial for ``ttl`` seconds: (the gateway that holds
        it, ``gateway`` when this one won; seconds its claim has left)."""
        ...

    async def open_breakers(self) -> tuple[float, list[Opened]]:
        """(Redis's clock now, every breaker open in the fleet)."""
        ...

    def subscribe(self) -> contextlib.AbstractAsyncContextManager[AsyncIterator[BreakerNote]]:
        """The notes published from now on, until the context ends or the link breaks."""
        ...

    async def close(self) -> None: ...


@dataclass
class MirrorCounts:
    """For ``/metrics`` and ``gw status``: what went through, and what failed."""

    published: int = 0  # notes sent
    received: int = 0  # other gateways' notes applied
    errors: int = 0  # store operations that failed (unreachable, timeout, refused)
    dropped: int = 0  # notes not sent (the store was unreachable or the queue full)
    local_trials: int = 0  # half-open trials decided alone while the store was unreachable
    reachable: bool = False


@dataclass(frozen=True)
class _Open:
    target: str
    cooldown: float
    openings: int
    cause: str


@dataclass(frozen=True)
class _Close:
    target: str


@dataclass(frozen=True)
class _Claim:
    target: str
    ttl: float


_Work = _Open | _Close | _Claim


class BreakerMirror:
    """``BreakerShare`` over a ``BreakerChannel``; ``attach`` the book, then ``start``."""

    def __init__(
        self,
        channel: BreakerChannel,
        gateway: str,
        clock: Clock,
        sleep: Sleep,
        *,
        linger: Callable[[], float],
        where: str = "Redis",
    ) -> None:
        self.gateway = gateway
        self.where = where  # the store, for log lines (a URL without its password)
        self.counts = MirrorCounts()
        self._channel = channel
        self._clock = clock
        self._sleep = sleep
        # How long an opening's record outlives its cooldown (the trial timeout): a gateway
        # that starts while the breaker is half-open still learns of it.
        self._linger = linger
        self._book: HealthBook | None = None
        self._queue: asyncio.Queue[_Work] = asyncio.Queue()
        self._tasks: list[asyncio.Task[None]] = []
        self._offset = 0.0  # Redis's clock minus this host's wall clock
        self._log = ThrottledLog(logger)
        self._stopping = False

    def attach(self, book: HealthBook) -> None:
        self._book = book

    async def start(self) -> None:
        self._tasks = [
            asyncio.create_task(self._send_loop(), name="gw-fleet-breakers-send"),
            asyncio.create_task(self._listen_loop(), name="gw-fleet-breakers-listen"),
        ]

    async def stop(self) -> None:
        self._stopping = True
        for task in self._tasks:
            task.cancel()
        if self._tasks:
            # Bounded: redis-py can swallow a cancellation that lands inside a call (the
            # loops then see _stopping and end), and shutdown must not wait on Redis.
            await asyncio.wait(self._tasks, timeout=STOP_WAIT_S)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._channel.close(), STOP_WAIT_S)

    # BreakerShare: called by the health book on the request path; never blocks.

    def opened(self, key: str, *, cooldown: float, openings: int, cause: str) -> None:
        self._put(_Open(key, cooldown, openings, cause))

    def closed(self, key: str) -> None:
        self._put(_Close(key))

    def claim_trial(self, key: str, *, ttl: float) -> TrialClaim:
        if not self.counts.reachable or not self._put(_Claim(key, ttl)):
            self.counts.local_trials += 1  # fail-open: decided alone, as on one machine
            return "won"
        return "asking"

    def _put(self, work: _Work) -> bool:
        if self._queue.qsize() >= MAX_QUEUED:
            self.counts.dropped += 1
            return False
        self._queue.put_nowait(work)
        return True

    # The background tasks.

    async def _send_loop(self) -> None:
        while not self._stopping:
            work = await self._queue.get()
            try:
                await self._send(work)
            except Exception as error:  # noqa: BLE001 -- the store is down: stay local
                if self._stopping:
                    return
                self._failed("send", error)
                if isinstance(work, _Claim):
                    self._answer(work.target, None, work.ttl)
                    self.counts.local_trials += 1
                else:
                    self.counts.dropped += 1

    async def _send(self, work: _Work) -> None:
        channel, me = self._channel, self.gateway
        if isinstance(work, _Open):
            hold = work.cooldown + max(self._linger(), 0.0)
            await channel.publish_open(
                work.target,
                gateway=me,
                cooldown=work.cooldown,
                openings=work.openings,
                cause=work.cause,
                hold=hold,
            )
            self.counts.published += 1
        elif isinstance(work, _Close):
            await channel.publish_close(work.target, gateway=me)
            self.counts.published += 1
        else:
            holder, remaining = await channel.claim_trial(work.target, gateway=me, ttl=work.ttl)
            self._answer(work.target, None if holder == me else holder, remaining)
        self._reached()

    def _answer(self, target: str, holder: str | None, remaining: float) -> None:
        if self._book is not None:
            now = self._clock.monotonic()
            self._book.fleet_trial(target, holder=holder, remaining=remaining, now=now)

    async def _listen_loop(self) -> None:
        backoff = FIRST_BACKOFF_S
        while not self._stopping:
            try:
                async with self._channel.subscribe() as notes:
                    await self._catch_up()
                    backoff = FIRST_BACKOFF_S
                    async for note in notes:
                        self._apply(note)
                raise ConnectionError("the subscription ended")  # noqa: TRY301 -- reconnect
            except Exception as error:  # noqa: BLE001 -- reconnect, whatever broke
                if self._stopping:
                    return
                self._failed("listen", error)
            await self._sleep(backoff)
            backoff = min(backoff * 2, MAX_BACKOFF_S)

    async def _catch_up(self) -> None:
        """The breakers already open in the fleet, and Redis's clock against this host's;
        then this gateway's own openings the fleet does not know (made while Redis was
        unreachable) go out, for the cooldown they have left."""
        redis_now, opened = await self._channel.open_breakers()
        self._offset = redis_now - self._clock.time()
        self._reached()
        for note in opened:
            self._apply(note, redis_now=redis_now)
        if self._book is None:
            return
        known = {note.target for note in opened}
        for key, left, openings, cause in self._book.own_openings(now=self._clock.monotonic()):
            if key not in known:
                self._put(_Open(key, left, openings, cause))

    def _apply(self, note: BreakerNote, *, redis_now: float | None = None) -> None:
        if self._book is None:
            return
        if redis_now is None:
            redis_now = self._clock.time() + self._offset
        now = self._clock.monotonic()
        if apply_note(self._book, note, me=self.gateway, redis_now=redis_now, now=now):
            self.counts.received += 1
            if isinstance(note, Opened):
                left = remaining_cooldown(note, redis_now)
                logger.info(
                    "breaker of %s opened by gateway %s (%.1fs of cooldown left)",
                    note.target,
                    note.gateway,
                    left,
                )

    def _reached(self) -> None:
        if not self.counts.reachable:
            self.counts.reachable = True
            if self.counts.errors:
                logger.warning("fleet breakers: %s is reachable again", self.where)

    def _failed(self, what: str, error: Exception) -> None:
        self.counts.errors += 1
        self.counts.reachable = False
        self._log.warning(
            "fleet breakers: %s unreachable (%s: %s); breakers decide on this gateway's "
            "own health until it returns",
            self.where,
            what,
            error_kind(error),
        )
