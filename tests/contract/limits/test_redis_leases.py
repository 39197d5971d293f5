"""What only the fleet's limits in Redis have to do: leases that a dead gateway leaves
behind run out, giving back their slot and reservation; gateways starting together seed a
budget once; each admission is one round trip."""

from __future__ import annotations

import asyncio
import time

import pytest

from gw.config.schema import TenantBudget, TenantConfig, TenantLimits
from gw.errors import BudgetExceededError, ConcurrencyLimitedError
from gw.fleet.redis_limits import RedisLimits, RedisUnreachableError

from contract.limits.conftest import REDIS_URL

DAY = 1_764_547_200.0
CONFIG = TenantConfig(
    name="t", limits=TenantLimits(max_concurrency=1), budget=TenantBudget(daily_usd=1.0)
)


async def connect(prefix: str) -> RedisLimits:
    return await RedisLimits.connect(REDIS_URL, prefix=prefix)


def test_a_dead_gateways_lease_runs_out_and_gives_back_its_reservation(redis_prefix: str) -> None:
    async def go() -> None:
        dead, alive = await connect(redis_prefix), await connect(redis_prefix)
        # The dead one admits with a short lease and never settles (killed mid-request).
        await dead.admit(CONFIG, "a", tokens=1, cost_usd=0.9, lease_ttl=0.3, now=0, wall=DAY)
        await dead.aclose()
        with pytest.raises(ConcurrencyLimitedError):
            await alive.admit(CONFIG, "b", tokens=1, cost_usd=0.9, lease_ttl=60, now=0, wall=DAY)
        deadline = time.monotonic() + 10
        while True:  # bounded poll until Redis's clock passes the lease's end
            try:
                await alive.admit(
                    CONFIG, "b", tokens=1, cost_usd=0.9, lease_ttl=60, now=0, wall=DAY
                )
                break
            except ConcurrencyLimitedError:
                assert time.monotonic() < deadline, "the lease never ran out"
                await asyncio.sleep(0.05)
        # The dead request's $0.9 went back with its lease: only b's is reserved.
        assert await alive.in_flight("t") == 1
        alive.settle("b", tokens=1, cost_usd=0.1)
        await alive.drain()
        assert await alive.spent("t", "d:2025-12-01") == pytest.approx(0.1)
        await alive.admit(CONFIG, "c", tokens=1, cost_usd=0.9, lease_ttl=60, now=0, wall=DAY)
        await alive.aclose()

    asyncio.run(go())


def test_gateways_starting_together_seed_a_budget_once(redis_prefix: str) -> None:
    async def go() -> None:
        one, two = await connect(redis_prefix), await connect(redis_prefix)
        await asyncio.gather(
            one.seed([("t", "d:2025-12-01", 0.5)]), two.seed([("t", "d:2025-12-01", 0.5)])
        )
        assert await two.spent("t", "d:2025-12-01") == pytest.approx(0.5)
        with pytest.raises(BudgetExceededError):
            await one.admit(CONFIG, "a", tokens=1, cost_usd=0.6, lease_ttl=60, now=0, wall=DAY)
        await one.aclose()
        await two.aclose()

    asyncio.run(go())


def test_an_admission_is_one_round_trip(redis_prefix: str) -> None:
    async def go() -> int:
        limits = await connect(redis_prefix)
        calls = 0
        client = limits._client
        real = client.execute_command

        async def counted(*args: object, **kwargs: object) -> object:
            nonlocal calls
            calls += 1
            return await real(*args, **kwargs)

        client.execute_command = counted  # type: ignore[method-assign]
        config = TenantConfig(
            name="t",
            limits=TenantLimits(
                requests_per_minute=100, tokens_per_minute=10_000, max_concurrency=5
            ),
            budget=TenantBudget(daily_usd=10.0, monthly_usd=100.0),
        )
        await limits.admit(config, "warm", tokens=1, cost_usd=0.1, lease_ttl=60, now=0, wall=DAY)
        calls = 0  # the first may have sent the script whole (NOSCRIPT, then EVAL)
        await limits.admit(config, "a", tokens=1, cost_usd=0.1, lease_ttl=60, now=0, wall=DAY)
        admitted = calls
        await limits.aclose()
        return admitted

    assert asyncio.run(go()) == 1


def test_an_unreachable_redis_is_named_without_its_password() -> None:
    async def go() -> None:
        with pytest.raises(RedisUnreachableError) as refused:
            await RedisLimits.connect("redis://:hunter2@127.0.0.1:1/0")
        assert "hunter2" not in str(refused.value)
        assert "redis://:***@127.0.0.1:1/0" in str(refused.value)

    asyncio.run(go())


def test_settles_of_many_requests_share_a_pipeline_even_after_a_script_flush(
    redis_prefix: str,
) -> None:
    config = TenantConfig(
        name="t",
        limits=TenantLimits(max_concurrency=50, tokens_per_minute=10_000),
        budget=TenantBudget(daily_usd=10.0),
    )

    async def go() -> None:
        limits = await connect(redis_prefix)
        for n in range(20):
            await limits.admit(
                config, f"r{n}", tokens=100, cost_usd=0.2, lease_ttl=60, now=0, wall=DAY
            )
        await limits._client.script_flush()  # as a restarted Redis would have forgotten it
        for n in range(20):  # all queued before the flushing task first runs
            limits.settle(f"r{n}", tokens=10, cost_usd=0.01)
        await limits.drain()
        assert await limits.in_flight("t") == 0
        assert await limits.spent("t", "d:2025-12-01") == pytest.approx(0.2)
        # Every reservation went back: 40 more x $0.2 fit in what is left of $10.
        for n in range(40):
            await limits.admit(
                config, f"s{n}", tokens=1, cost_usd=0.2, lease_ttl=60, now=0, wall=DAY
            )
        await limits.aclose()

    asyncio.run(go())
