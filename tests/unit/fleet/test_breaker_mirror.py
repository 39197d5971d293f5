"""BreakerMirror over an in-memory channel: two gateways' health books kept in step, one
fleet-wide trial, and what happens while the store is unreachable and after.

``FakeFleet`` plays Redis (keys, NX claims, a channel and its clock); each gateway gets a
``FakeChannel`` onto it. The mirrors' background tasks run for real on an event loop;
tests wait for their effects with ``await_until``, never for a time.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable

from gw.config.schema import HealthConfig
from gw.config.units import Duration
from gw.execution.health import HealthBook
from gw.fleet.breaker_mirror import BreakerMirror
from gw.fleet.breaker_notes import (
    BreakerNote,
    Closed,
    Opened,
    apply_note,
    decode_note,
    encode_note,
    remaining_cooldown,
)

from e2e.waiting import await_until

KEY = "flaky/gpt-f"
CONFIG = HealthConfig(
    degraded_after=2, unhealthy_after=2, cooldown=Duration(5.0), trial_timeout=Duration(30.0)
)


class FakeClock:
    def __init__(self) -> None:
        self.mono = 100.0
        self.wall = 1_000_000.0

    def monotonic(self) -> float:
        return self.mono

    def time(self) -> float:
        return self.wall

    def advance(self, seconds: float) -> None:
        self.mono += seconds
        self.wall += seconds


class FakeFleet:
    """What Redis keeps for the fleet's breakers; ``up`` False makes every call fail."""

    def __init__(self, clock: FakeClock, skew: float = 0.0) -> None:
        self.clock = clock
        self.skew = skew  # Redis's clock minus the gateways'
        self.breakers: dict[str, Opened] = {}
        self.trials: dict[str, tuple[str, float]] = {}  # target -> (holder, until)
        self.queues: list[asyncio.Queue[BreakerNote | None]] = []
        self.up = True
        self.claims = 0

    def now(self) -> float:
        return self.clock.wall + self.skew

    def check(self) -> None:
        if not self.up:
            raise ConnectionError("fake Redis is down")

    def down(self) -> None:
        self.up = False
        for queue in self.queues:
            queue.put_nowait(None)  # every subscription breaks

    def publish(self, note: BreakerNote) -> None:
        for queue in self.queues:
            queue.put_nowait(note)


class FakeChannel:
    def __init__(self, fleet: FakeFleet) -> None:
        self.fleet = fleet

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
        self.fleet.check()
        note = Opened(
            target=target,
            gateway=gateway,
            opened_at=self.fleet.now(),
            cooldown=cooldown,
            openings=openings,
            cause=cause,
        )
        self.fleet.breakers[target] = note
        self.fleet.trials.pop(target, None)
        self.fleet.publish(note)

    async def publish_close(self, target: str, *, gateway: str) -> None:
        self.fleet.check()
        self.fleet.breakers.pop(target, None)
        self.fleet.trials.pop(target, None)
        self.fleet.publish(Closed(target=target, gateway=gateway))

    async def claim_trial(self, target: str, *, gateway: str, ttl: float) -> tuple[str, float]:
        self.fleet.check()
        self.fleet.claims += 1
        held = self.fleet.trials.get(target)
        now = self.fleet.now()
        if held is None or held[1] <= now:
            self.fleet.trials[target] = (gateway, now + ttl)
            return gateway, ttl
        return held[0], held[1] - now

    async def open_breakers(self) -> tuple[float, list[Opened]]:
        self.fleet.check()
        return self.fleet.now(), list(self.fleet.breakers.values())

    @contextlib.asynccontextmanager
    async def subscribe(self) -> AsyncIterator[AsyncIterator[BreakerNote]]:
        self.fleet.check()
        queue: asyncio.Queue[BreakerNote | None] = asyncio.Queue()
        self.fleet.queues.append(queue)

        async def notes() -> AsyncIterator[BreakerNote]:
            while (note := await queue.get()) is not None:
                yield note
            raise ConnectionError("the subscription broke")

        try:
            yield notes()
        finally:
            self.fleet.queues.remove(queue)

    async def close(self) -> None:
        pass


class Gateway:
    def __init__(self, name: str, fleet: FakeFleet, clock: FakeClock) -> None:
        self.mirror = BreakerMirror(FakeChannel(fleet), name, clock, _no_wait, linger=lambda: 30.0)
        self.book = HealthBook(CONFIG, share=self.mirror)
        self.mirror.attach(self.book)
        self.clock = clock

    def fail_until_open(self) -> None:
        for _ in range(CONFIG.unhealthy_after):
            self.book.record(KEY, False, now=self.clock.mono)

    def breaker(self) -> str:
        return self.book.state(KEY, now=self.clock.mono).breaker


async def _no_wait(seconds: float) -> None:
    del seconds
    await asyncio.sleep(0.001)  # the backoff, shortened: the loop still yields


def run(test: Callable[[FakeFleet, FakeClock, Gateway, Gateway], Awaitable[None]]) -> None:
    async def main() -> None:
        clock = FakeClock()
        fleet = FakeFleet(clock, skew=120.0)  # Redis's clock is two minutes ahead
        a, b = Gateway("gw-a", fleet, clock), Gateway("gw-b", fleet, clock)
        for gateway in (a, b):
            await gateway.mirror.start()
        await await_until(lambda: a.mirror.counts.reachable and b.mirror.counts.reachable, "up")
        await await_until(lambda: len(fleet.queues) == 2, "both subscribed")
        try:
            await test(fleet, clock, a, b)
        finally:
            await asyncio.gather(a.mirror.stop(), b.mirror.stop())

    asyncio.run(main())


def test_an_opening_on_one_gateway_opens_the_breaker_on_the_other() -> None:
    async def body(fleet: FakeFleet, clock: FakeClock, a: Gateway, b: Gateway) -> None:
        a.fail_until_open()
        await await_until(lambda: b.breaker() == "open", "gw-b to learn the opening")
        seen = b.book.state(KEY, now=clock.mono)
        assert seen.opened_by == "gw-a"
        assert seen.cooldown_until == clock.mono + 5.0  # measured on Redis's clock, not skewed
        assert "opened by gateway gw-a, fleet-wide: 2 consecutive failures" in seen.reason
        assert a.book.state(KEY, now=clock.mono).opened_by is None
        assert (a.mirror.counts.published, b.mirror.counts.received) == (1, 1)
        assert a.mirror.counts.received == 0  # its own note, heard back, is ignored

    run(body)


def test_one_trial_for_the_fleet_and_its_success_closes_both() -> None:
    async def body(fleet: FakeFleet, clock: FakeClock, a: Gateway, b: Gateway) -> None:
        a.fail_until_open()
        await await_until(lambda: b.breaker() == "open", "gw-b to learn the opening")
        clock.advance(5.0)  # the cooldown lapses on both

        # Both ask; the fleet answers each; exactly one wins.
        assert not a.book.claim_trial(KEY, now=clock.mono)
        assert not b.book.claim_trial(KEY, now=clock.mono)
        await await_until(lambda: fleet.claims == 2, "both claims")
        await await_until(
            lambda: (
                a.book.state(KEY, now=clock.mono).reason.find("asking") < 0
                and b.book.state(KEY, now=clock.mono).reason.find("asking") < 0
            ),
            "both answers",
        )
        won = [g for g in (a, b) if g.book.claim_trial(KEY, now=clock.mono)]
        assert [g.mirror.gateway for g in won] == ["gw-a"]  # the first to ask
        assert b.book.state(KEY, now=clock.mono).trial_holder == "gw-a"

        a.book.record(KEY, True, now=clock.mono, trial=True)
        await await_until(lambda: b.breaker() == "closed", "gw-b to hear the close")
        assert a.breaker() == "closed"
        assert fleet.breakers == {}
        assert fleet.trials == {}

    run(body)


def test_a_failed_trial_reopens_the_fleet_wider() -> None:
    async def body(fleet: FakeFleet, clock: FakeClock, a: Gateway, b: Gateway) -> None:
        b.fail_until_open()
        await await_until(lambda: a.breaker() == "open", "gw-a to learn the opening")
        clock.advance(5.0)
        a.book.claim_trial(KEY, now=clock.mono)
        await await_until(lambda: a.book.state(KEY, now=clock.mono).trial_available, "a won")
        assert a.book.claim_trial(KEY, now=clock.mono)
        a.book.record(KEY, False, now=clock.mono, trial=True)
        await await_until(
            lambda: b.book.state(KEY, now=clock.mono).opened_by == "gw-a", "the reopening"
        )
        again = b.book.state(KEY, now=clock.mono)
        assert (again.breaker, again.openings, again.cooldown_until) == (
            "open",
            2,
            clock.mono + 10.0,
        )
        assert KEY not in fleet.trials  # the next trial is free to claim after the cooldown

    run(body)


def test_a_gateway_that_starts_late_learns_the_breakers_already_open() -> None:
    async def body(fleet: FakeFleet, clock: FakeClock, a: Gateway, b: Gateway) -> None:
        a.fail_until_open()
        await await_until(lambda: KEY in fleet.breakers, "the opening recorded")
        clock.advance(2.0)
        late = Gateway("gw-c", fleet, clock)
        await late.mirror.start()
        try:
            await await_until(lambda: late.breaker() == "open", "gw-c to catch up")
            assert late.book.state(KEY, now=clock.mono).cooldown_until == clock.mono + 3.0
        finally:
            await late.mirror.stop()

    run(body)


def test_while_the_store_is_down_breakers_are_local_and_it_catches_up_after() -> None:
    async def body(fleet: FakeFleet, clock: FakeClock, a: Gateway, b: Gateway) -> None:
        fleet.down()
        a.fail_until_open()  # its note cannot be sent
        await await_until(lambda: a.mirror.counts.dropped == 1, "the note dropped")
        assert not a.mirror.counts.reachable
        assert a.mirror.counts.errors >= 1
        assert b.breaker() == "closed"  # nobody told it

        clock.advance(5.0)  # half-open on gw-a: its trial is its own to send, at once
        assert a.book.claim_trial(KEY, now=clock.mono)
        assert a.mirror.counts.local_trials == 1
        a.book.record(KEY, False, now=clock.mono, trial=True)  # reopened, still down

        fleet.up = True
        await await_until(lambda: len(fleet.queues) == 2, "both resubscribed")
        await await_until(lambda: a.mirror.counts.reachable, "gw-a reconnected")
        # Back: gw-a tells the fleet its opening, for the cooldown it has left.
        await await_until(lambda: b.breaker() == "open", "gw-b to learn it now")
        seen = b.book.state(KEY, now=clock.mono)
        assert seen.opened_by == "gw-a"
        assert seen.openings == 2
        assert seen.cooldown_until == a.book.state(KEY, now=clock.mono).cooldown_until
        assert "its half-open trial failed" in seen.reason

    run(body)


def test_a_claim_that_fails_is_decided_locally() -> None:
    async def body(fleet: FakeFleet, clock: FakeClock, a: Gateway, b: Gateway) -> None:
        a.fail_until_open()
        await await_until(lambda: b.breaker() == "open", "gw-b to learn the opening")
        clock.advance(5.0)
        fleet.up = False  # fails from the next call on; the subscriptions linger
        assert not b.book.claim_trial(KEY, now=clock.mono)  # asked: the claim then fails
        await await_until(lambda: b.book.state(KEY, now=clock.mono).trial_available, "answer")
        assert b.book.claim_trial(KEY, now=clock.mono)
        assert b.mirror.counts.local_trials == 1
        assert b.mirror.counts.errors == 1

    run(body)


def test_notes_round_trip_and_garbage_is_ignored() -> None:
    note = Opened(target=KEY, gateway="g", opened_at=10.0, cooldown=5.0, openings=1, cause="c")
    assert decode_note(encode_note(note)) == note
    assert decode_note(encode_note(Closed(target=KEY, gateway="g"))) == Closed(
        target=KEY, gateway="g"
    )
    assert decode_note(b"{not json") is None
    assert decode_note(b'{"kind": "open", "target": 3}') is None
    assert decode_note(b'{"kind": "melt", "target": "x", "gateway": "g"}') is None
    # Redis's script writes whole numbers without a fraction: still a float here.
    assert decode_note(
        b'{"kind":"open","target":"a/b","gateway":"g","opened_at":12,"cooldown":5,'
        b'"openings":1,"cause":"c"}'
    ) == Opened(target="a/b", gateway="g", opened_at=12.0, cooldown=5.0, openings=1, cause="c")


def test_the_remaining_cooldown_is_bounded_by_the_cooldown() -> None:
    note = Opened(target=KEY, gateway="g", opened_at=100.0, cooldown=5.0, openings=1, cause="c")
    assert remaining_cooldown(note, 102.0) == 3.0
    assert remaining_cooldown(note, 90.0) == 5.0  # a clock behind: never longer
    assert remaining_cooldown(note, 200.0) == 0.0  # lapsed: half-open at once
    book = HealthBook(CONFIG)
    assert not apply_note(book, note, me="g", redis_now=101.0, now=0.0)  # its own
    assert apply_note(book, note, me="other", redis_now=200.0, now=0.0)
    assert book.state(KEY, now=0.0).breaker == "half_open"
