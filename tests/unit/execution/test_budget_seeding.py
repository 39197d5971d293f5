"""LedgerSeededLimits (gw/execution/budget_seeding.py): a subject admitted with a budget
for the first time, or with another budget, has its spend read back from the ledger
once; those admitted meanwhile wait for that one read; a ledger that fails is logged and
counting goes on."""

from __future__ import annotations

import asyncio

import pytest

from gw.config.schema import TenantBudget, TenantConfig
from gw.errors import BudgetExceededError
from gw.execution.budget_seeding import LedgerSeededLimits
from gw.execution.local_limits import LocalLimits

DAY = 1_764_547_200.0  # 2025-12-01T00:00:00Z
SPEND = [("@key:k", "d:2025-12-01", 0.5), ("other", "d:2025-12-01", 5.0)]


def key(daily: float | None) -> TenantConfig:
    return TenantConfig(name="@key:k", budget=TenantBudget(daily_usd=daily))


async def admit(
    limits: LedgerSeededLimits, config: TenantConfig, request_id: str, cost: float = 0.05
) -> None:
    await limits.admit(config, request_id, tokens=1, cost_usd=cost, lease_ttl=60, now=0, wall=DAY)


def test_a_new_budget_reads_the_subjects_spend_back_once() -> None:
    reads: list[float] = []

    async def ledger(wall: float) -> list[tuple[str, str, float]]:
        reads.append(wall)
        await asyncio.sleep(0)  # others arrive while it reads
        return SPEND

    async def go() -> None:
        inner = LocalLimits()
        limits = LedgerSeededLimits(inner, ledger)
        await asyncio.gather(*(admit(limits, key(1.0), f"r{n}") for n in range(3)))
        assert reads == [DAY]
        assert await limits.spent("@key:k", "d:2025-12-01") == pytest.approx(0.5)
        assert await limits.spent("other", "d:2025-12-01") == 0.0  # only that subject
        with pytest.raises(BudgetExceededError):  # 0.5 spent, 0.15 reserved, 0.4 more
            await admit(limits, key(1.0), "r4", cost=0.4)
        await admit(limits, key(2.0), "r5")  # another budget: read again
        assert reads == [DAY, DAY]

    asyncio.run(go())


def test_no_budget_reads_nothing_and_a_failing_ledger_does_not_refuse() -> None:
    async def broken(wall: float) -> list[tuple[str, str, float]]:
        raise OSError("database is gone")

    async def go() -> None:
        limits = LedgerSeededLimits(LocalLimits(), broken)
        await admit(limits, key(None), "a")
        await admit(limits, key(1.0), "b")  # logged; counts from here on
        assert await limits.in_flight("@key:k") == 2

    asyncio.run(go())


def test_a_request_cancelled_during_the_read_does_not_cut_it_short() -> None:
    async def go() -> None:
        started, release = asyncio.Event(), asyncio.Event()

        async def slow(wall: float) -> list[tuple[str, str, float]]:
            started.set()
            await release.wait()
            return SPEND

        limits = LedgerSeededLimits(LocalLimits(), slow)
        first = asyncio.create_task(admit(limits, key(1.0), "a"))
        await started.wait()
        first.cancel()  # its client left while the ledger was read
        waiting = asyncio.create_task(admit(limits, key(1.0), "b"))
        release.set()
        await waiting
        assert await limits.spent("@key:k", "d:2025-12-01") == pytest.approx(0.5)

    asyncio.run(go())


def test_a_budget_idle_for_a_while_is_read_back_again() -> None:
    reads: list[float] = []

    async def ledger(wall: float) -> list[tuple[str, str, float]]:
        reads.append(wall)
        return SPEND

    async def go() -> None:
        limits = LedgerSeededLimits(LocalLimits(), ledger)
        await limits.admit(key(1.0), "a", tokens=1, cost_usd=0.0, lease_ttl=60, now=0, wall=DAY)
        await limits.admit(
            key(1.0), "b", tokens=1, cost_usd=0.0, lease_ttl=60, now=0, wall=DAY + 30
        )
        await limits.admit(
            key(1.0), "c", tokens=1, cost_usd=0.0, lease_ttl=60, now=0, wall=DAY + 200
        )
        assert reads == [DAY, DAY + 200]  # not while in use; again after a pause

    asyncio.run(go())
