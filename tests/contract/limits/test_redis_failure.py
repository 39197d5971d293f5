"""The fleet's limits while Redis is unreachable (``state.redis_failure``): budgets refuse
by default (503 overloaded, Retry-After), rate limits and concurrency count in this
gateway alone, divided by the fleet's size; each decision is noted and counted; Redis is
tried again after a short pause, not per request, and counts again once it answers.

Redis here is a redis-server of the test's own, stopped and started again; the time the
pause is measured by is a test clock."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from gw.config import ConfigError, load_config
from gw.config.schema import RedisFailureConfig, TenantBudget, TenantConfig, TenantLimits
from gw.errors import ConcurrencyLimitedError, OverloadedError, RateLimitedError
from gw.fleet.limits_fallback import RETRY_REDIS_AFTER_S
from gw.fleet.redis_limits import RedisLimits

from fakes.redis_server import RedisServer

DAY = 1_764_547_200.0
SPENDER = TenantConfig(name="spender", budget=TenantBudget(daily_usd=1.0))
PACED = TenantConfig(name="paced", limits=TenantLimits(requests_per_minute=7, max_concurrency=9))


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[RedisServer]:
    with RedisServer(tmp_path / "redis") as server:
        yield server


def limits_on(server: RedisServer, clock: Clock, **policy: object) -> RedisLimits:
    client = aioredis.Redis.from_url(
        server.url, socket_timeout=1, socket_connect_timeout=1, decode_responses=True
    )
    failure = RedisFailureConfig(**policy)  # type: ignore[arg-type]
    return RedisLimits(client, server.url, failure=failure, monotonic=clock)


async def admit(limits: RedisLimits, tenant: TenantConfig, request_id: str) -> tuple[str, ...]:
    grant = await limits.admit(
        tenant, request_id, tokens=1, cost_usd=0.1, lease_ttl=60, now=0, wall=DAY
    )
    return grant.notes


def test_budgets_refuse_and_rate_limits_count_here_while_redis_is_down(
    own_redis: RedisServer,
) -> None:
    clock = Clock()

    async def go() -> None:
        limits = limits_on(own_redis, clock, fleet_size=3)
        assert await admit(limits, PACED, "up") == ()  # Redis answers: no note
        limits.settle("up", tokens=1, cost_usd=0.0)
        await limits.drain()
        own_redis.stop()
        with pytest.raises(OverloadedError) as refused:
            await admit(limits, SPENDER, "s1")
        assert refused.value.status == 503
        assert refused.value.retry_after == 5.0
        assert f"Redis at {own_redis.url} is unreachable" in refused.value.message
        assert "state.redis_failure.budgets: closed" in refused.value.message
        # 7 a minute for the fleet of 3: this gateway alone takes 2 (7 // 3).
        for n in range(2):
            [note] = await admit(limits, PACED, f"p{n}")
            assert "counted in this gateway alone" in note
            assert "fleet_size 3" in note
        with pytest.raises(RateLimitedError):
            await admit(limits, PACED, f"p{n + 1}")
        assert limits.fallback_counts() == {
            ("budgets", "closed"): 1,
            ("rate_limits", "open"): 3,
            ("concurrency", "open"): 3,
        }
        limits.settle("p0", tokens=1, cost_usd=0.0)  # settled here, where it was counted
        await limits.drain()
        await limits.aclose()

    asyncio.run(go())


def test_open_budgets_and_closed_concurrency_when_so_configured(own_redis: RedisServer) -> None:
    clock = Clock()
    own_redis.stop()

    async def go() -> None:
        limits = limits_on(own_redis, clock, budgets="open", concurrency="closed", fleet_size=2)
        # $1 a day for two gateways: $0.5 here, four reservations of $0.1 ... five.
        for n in range(5):
            await admit(limits, SPENDER, f"s{n}")
        with pytest.raises(Exception, match=r"daily budget of \$0\.50"):
            await admit(limits, SPENDER, "s5")
        with pytest.raises(OverloadedError, match="concurrency: closed"):
            await admit(limits, PACED, "p")
        await limits.aclose()

    asyncio.run(go())


def test_redis_is_tried_again_after_a_pause_and_counts_again_once_it_answers(
    own_redis: RedisServer,
) -> None:
    clock = Clock()
    tenant = TenantConfig(name="single", limits=TenantLimits(max_concurrency=1))

    async def go() -> None:
        limits = limits_on(own_redis, clock)
        tries = 0
        real = limits._client.execute_command

        async def counted(*args: object, **kwargs: object) -> object:
            nonlocal tries
            tries += 1
            return await real(*args, **kwargs)

        limits._client.execute_command = counted  # type: ignore[method-assign]
        own_redis.stop()
        assert await admit(limits, tenant, "a")  # a note: counted here
        with pytest.raises(ConcurrencyLimitedError):
            await admit(limits, tenant, "b")  # the local count holds it too
        assert tries == 1  # the second did not knock on a Redis that just failed
        limits.settle("a", tokens=1, cost_usd=None)
        own_redis.start()
        assert await admit(limits, tenant, "c")  # still within the pause: here
        assert tries == 1
        clock.now += RETRY_REDIS_AFTER_S
        assert await admit(limits, tenant, "d") == ()  # Redis again, no note
        assert tries == 3  # EVALSHA, NOSCRIPT (a restarted Redis forgot it), then EVAL
        limits.settle("c", tokens=1, cost_usd=None)
        with pytest.raises(ConcurrencyLimitedError):
            await admit(limits, tenant, "e")  # d holds the fleet's one slot in Redis
        limits.settle("d", tokens=1, cost_usd=None)
        await limits.drain()
        await admit(limits, tenant, "f")
        await limits.aclose()

    asyncio.run(go())


def test_the_policy_loads_from_config_and_a_fleet_of_none_is_refused() -> None:
    text = "state:\n  redis_failure: {budgets: open, fleet_size: 3}\n"
    failure = load_config(text, "gw.yaml").state.redis_failure
    assert (failure.budgets, failure.rate_limits, failure.concurrency) == ("open", "open", "open")
    assert failure.fleet_size == 3
    with pytest.raises(ConfigError) as caught:
        load_config("state:\n  redis_failure: {fleet_size: 0}\n", "gw.yaml")
    assert caught.value.path == "state.redis_failure.fleet_size"
    assert "at least 1" in caught.value.reason
    with pytest.raises(ConfigError):
        load_config("state:\n  redis_failure: {budgets: maybe}\n", "gw.yaml")
