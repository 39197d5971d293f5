"""RedisBreakerChannel against the real Redis at 127.0.0.1:6379: the keys, the claim, the
channel, and two mirrors (two gateways' breakers) kept in step through it.

Each test uses its own key prefix and deletes its keys after. Without a Redis there the
tests skip, except in CI (env CI set), where they fail.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
import redis.asyncio as aioredis
from redis_service import REDIS_URL, redis_unavailable

from gw.config.schema import HealthConfig
from gw.config.units import Duration
from gw.execution.health import HealthBook
from gw.fleet.breaker_mirror import BreakerMirror
from gw.fleet.breaker_notes import BreakerNote, Closed, Opened
from gw.fleet.redis_health import RedisBreakerChannel
from gw.startup.plan import SystemClock

from e2e.waiting import await_until

KEY = "flaky/gpt-f"
CONFIG = HealthConfig(
    degraded_after=2, unhealthy_after=2, cooldown=Duration(30.0), trial_timeout=Duration(60.0)
)


def redis_or_skip() -> None:
    async def ping() -> None:
        client = aioredis.Redis.from_url(REDIS_URL, socket_connect_timeout=1.0)
        try:
            await client.ping()
        finally:
            await client.aclose()

    try:
        asyncio.run(ping())
    except (OSError, aioredis.ConnectionError) as error:
        redis_unavailable(error)


@pytest.fixture
def prefix() -> str:
    redis_or_skip()
    return f"gwtest:{uuid.uuid4().hex[:12]}:"


def run(prefix: str, test: Callable[[aioredis.Redis], Awaitable[None]]) -> None:
    async def main() -> None:
        client = aioredis.Redis.from_url(REDIS_URL)
        try:
            await test(client)
        finally:
            keys = [key async for key in client.scan_iter(f"{prefix}*")]
            if keys:
                await client.delete(*keys)
            await client.aclose()

    asyncio.run(main())


async def first_note(notes: AsyncIterator[BreakerNote]) -> BreakerNote:
    async with asyncio.timeout(10):
        return await anext(aiter(notes))


def test_an_opening_is_kept_for_its_hold_and_announced(prefix: str) -> None:
    async def body(client: aioredis.Redis) -> None:
        channel = RedisBreakerChannel(REDIS_URL, prefix=prefix)
        try:
            async with channel.subscribe() as notes:
                seconds, micros = await client.time()
                await channel.publish_open(
                    KEY, gateway="gw-a", cooldown=5.0, openings=2, cause="2 failures", hold=25.0
                )
                heard = await first_note(notes)
            assert isinstance(heard, Opened)
            assert (heard.target, heard.gateway, heard.cooldown, heard.openings) == (
                KEY,
                "gw-a",
                5.0,
                2,
            )
            assert heard.cause == "2 failures"
            assert 0 <= heard.opened_at - (seconds + micros / 1e6) < 5  # Redis's own clock
            stored = json.loads(await client.get(f"{prefix}breaker:{KEY}"))
            assert stored["gateway"] == "gw-a"
            assert 20_000 < await client.pttl(f"{prefix}breaker:{KEY}") <= 25_000
            now, opened = await channel.open_breakers()
            assert opened == [heard]
            assert now >= heard.opened_at
        finally:
            await channel.close()

    run(prefix, body)


def test_one_claim_wins_until_it_lapses_and_a_close_clears_everything(prefix: str) -> None:
    async def body(client: aioredis.Redis) -> None:
        channel = RedisBreakerChannel(REDIS_URL, prefix=prefix)
        try:
            claims = await asyncio.gather(
                *(channel.claim_trial(KEY, gateway=f"gw-{n}", ttl=20.0) for n in range(5))
            )
            holders = {holder for holder, _ in claims}
            assert len(holders) == 1  # one winner; the four others are told its name
            winner = holders.pop()
            assert all(0 < left <= 20.0 for _, left in claims)
            again, left = await channel.claim_trial(KEY, gateway=winner, ttl=20.0)
            assert again == winner  # a winner asking again (its answer lost) still holds it
            assert 0 < left <= 20.0

            await channel.publish_open(
                KEY, gateway="gw-x", cooldown=5.0, openings=1, cause="c", hold=10.0
            )
            assert not await client.exists(f"{prefix}trial:{KEY}")  # an opening frees it
            async with channel.subscribe() as notes:
                await channel.publish_close(KEY, gateway="gw-y")
                assert await first_note(notes) == Closed(target=KEY, gateway="gw-y")
            assert await channel.open_breakers() == (pytest.approx(await _now(client), abs=5), [])
        finally:
            await channel.close()

    run(prefix, body)


async def _now(client: aioredis.Redis) -> float:
    seconds, micros = await client.time()
    return float(seconds + micros / 1e6)


def test_two_gateways_share_an_opening_one_trial_and_the_close(prefix: str) -> None:
    async def body(client: aioredis.Redis) -> None:
        del client
        clock = SystemClock()
        books: list[HealthBook] = []
        mirrors: list[BreakerMirror] = []
        for name in ("gw-a", "gw-b"):
            mirror = BreakerMirror(
                RedisBreakerChannel(REDIS_URL, prefix=prefix),
                name,
                clock,
                asyncio.sleep,
                linger=lambda: 20.0,
            )
            book = HealthBook(CONFIG, share=mirror)
            mirror.attach(book)
            await mirror.start()
            books.append(book)
            mirrors.append(mirror)
        a, b = books
        try:
            await await_until(lambda: all(m.counts.reachable for m in mirrors), "connected")
            for _ in range(2):
                a.record(KEY, False, now=clock.monotonic())
            await await_until(
                lambda: b.state(KEY, now=clock.monotonic()).opened_by == "gw-a", "the opening"
            )
            # The cooldown is 30 s: pretend it lapsed by asking with a later `now`.
            later = clock.monotonic() + 31.0
            assert not a.claim_trial(KEY, now=later)
            assert not b.claim_trial(KEY, now=later)
            await await_until(
                lambda: all("asking" not in x.state(KEY, now=later).reason for x in books),
                "both answered",
            )
            winners = [x for x in books if x.claim_trial(KEY, now=later)]
            assert len(winners) == 1
            winner = winners[0]
            loser = b if winner is a else a
            assert loser.state(KEY, now=later).trial_holder in {"gw-a", "gw-b"}
            winner.record(KEY, True, now=later, trial=True)
            await await_until(lambda: loser.state(KEY, now=later).breaker == "closed", "the close")
        finally:
            await asyncio.gather(*(m.stop() for m in mirrors))

    run(prefix, body)


def test_an_unreachable_redis_leaves_the_breakers_local() -> None:
    async def main() -> None:
        clock = SystemClock()
        # Port 1 on loopback: nothing listens, the connection is refused at once.
        mirror = BreakerMirror(
            RedisBreakerChannel("redis://127.0.0.1:1/0"),
            "gw-a",
            clock,
            asyncio.sleep,
            linger=lambda: 20.0,
        )
        book = HealthBook(CONFIG, share=mirror)
        mirror.attach(book)
        await mirror.start()
        try:
            await await_until(lambda: mirror.counts.errors >= 1, "a failed connection")
            for _ in range(2):
                book.record(KEY, False, now=clock.monotonic())
            later = clock.monotonic() + 31.0
            assert book.claim_trial(KEY, now=later)  # decided here, at once
            assert mirror.counts.local_trials == 1
            await await_until(lambda: mirror.counts.dropped == 1, "the opening dropped")
            assert not mirror.counts.reachable
        finally:
            await mirror.stop()

    asyncio.run(main())


class OwnRedis:
    """A redis-server of this test's own on a free loopback port, to stop and restart."""

    def __init__(self) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                REDIS_SERVER,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)


REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"


def test_a_restarted_redis_is_found_again_and_sharing_resumes() -> None:
    if not os.path.exists(REDIS_SERVER):
        if os.environ.get("CI"):
            pytest.fail("redis-server is needed in CI")
        pytest.skip("no redis-server to start")
    server = OwnRedis()
    server.start()

    async def main() -> None:
        clock = SystemClock()
        books: list[HealthBook] = []
        mirrors: list[BreakerMirror] = []
        for name in ("gw-a", "gw-b"):
            mirror = BreakerMirror(
                RedisBreakerChannel(server.url), name, clock, asyncio.sleep, linger=lambda: 20.0
            )
            book = HealthBook(CONFIG, share=mirror)
            mirror.attach(book)
            await mirror.start()
            books.append(book)
            mirrors.append(mirror)
        a, b = books
        try:
            await await_until(lambda: all(m.counts.reachable for m in mirrors), "connected", 60)
            server.stop()
            await await_until(
                lambda: not any(m.counts.reachable for m in mirrors), "the loss noticed", 60
            )
            for _ in range(2):  # opened while Redis is down: this gateway's alone
                a.record(KEY, False, now=clock.monotonic())
            await await_until(lambda: mirrors[0].counts.dropped == 1, "the note dropped")
            assert b.state(KEY, now=clock.monotonic()).breaker == "closed"

            server.start()
            await await_until(lambda: all(m.counts.reachable for m in mirrors), "reconnected", 60)
            # gw-a's opening made meanwhile goes out now, ...
            await await_until(
                lambda: b.state(KEY, now=clock.monotonic()).opened_by == "gw-a",
                "the opening made while Redis was down",
                60,
            )
            # ... and sharing resumes: gw-b's next opening reaches gw-a.
            other = "other/model"
            for _ in range(2):
                b.record(other, False, now=clock.monotonic())
            await await_until(
                lambda: a.state(other, now=clock.monotonic()).opened_by == "gw-b",
                "the opening after the restart",
                60,
            )
        finally:
            await asyncio.gather(*(m.stop() for m in mirrors))

    try:
        asyncio.run(main())
    finally:
        server.stop()
