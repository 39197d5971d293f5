"""Budgets that start counting while the gateway runs read what was already spent.

A gateway counts a subject's spend (a tenant's, a policy's, an API key's, the global
one) only while that subject has a budget, and reads the ledger back once, at start. A
budget added later (a key given one by ``gw keys update``, a tenant or policy given one
by a reload) would otherwise start from what was spent before the start alone, missing
the spend since. So the first time a subject is admitted with a budget it did not have
(or another one), its spend is read back from the ledger again and its counters raised
to it (``TenantLimits.seed`` never lowers one). What the usage queue has not written
yet is the only spend such a budget can miss.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping

from gw.config.schema import TenantBudget, TenantConfig
from gw.ports import LimitGrant, TenantLimits

log = logging.getLogger(__name__)

Ledger = Callable[[float], Awaitable[list[tuple[str, str, float]]]]
_NO_BUDGET = TenantBudget()


REREAD_AFTER_S = 60.0  # a budget idle this long is read back again on its next request


class LedgerSeededLimits:
    """``TenantLimits`` over ``inner``, topping a subject up from ``ledger`` (the store's
    ``budget_spend``) the first time it is admitted with each budget, and again after a
    pause (``REREAD_AFTER_S``): a budget removed and given back meanwhile, or spend a
    subject made while it had none, is then counted too."""

    def __init__(self, inner: TenantLimits, ledger: Ledger) -> None:
        self._inner = inner
        self._ledger = ledger
        # subject -> the budget it was read back for, and when it was last admitted
        self._seen: dict[str, tuple[TenantBudget, float]] = {}
        self._reading: dict[str, asyncio.Task[None]] = {}

    async def admit(
        self,
        tenant: TenantConfig,
        request_id: str,
        *,
        tokens: int,
        cost_usd: float,
        lease_ttl: float,
        now: float,
        wall: float,
    ) -> LimitGrant:
        if tenant.budget != _NO_BUDGET:
            seen = self._seen.get(tenant.name)
            if seen is None or seen[0] != tenant.budget or wall - seen[1] > REREAD_AFTER_S:
                await self._read_back(tenant, wall)
            self._seen[tenant.name] = (tenant.budget, wall)
        return await self._inner.admit(
            tenant,
            request_id,
            tokens=tokens,
            cost_usd=cost_usd,
            lease_ttl=lease_ttl,
            now=now,
            wall=wall,
        )

    async def _read_back(self, subject: TenantConfig, wall: float) -> None:
        """One ledger read per subject at a time, in a task of its own: those admitted
        meanwhile wait for it, and a request that is cancelled (its client left) does
        not cut it short."""
        reading = self._reading.get(subject.name)
        if reading is None:
            reading = asyncio.get_running_loop().create_task(self._read(subject.name, wall))
            self._reading[subject.name] = reading
            reading.add_done_callback(lambda _: self._reading.pop(subject.name, None))
        await asyncio.shield(reading)

    async def _read(self, name: str, wall: float) -> None:
        try:
            rows = await self._ledger(wall)
            await self._inner.seed(row for row in rows if row[0] == name)
        except Exception:  # the ledger unreachable: count from here, say so
            log.warning(
                "could not read %s's spend back from the usage ledger; its budget counts "
                "from now on",
                name,
                exc_info=True,
            )

    def settle(self, request_id: str, *, tokens: int, cost_usd: float | None) -> None:
        self._inner.settle(request_id, tokens=tokens, cost_usd=cost_usd)

    async def seed(self, spend: Iterable[tuple[str, str, float]]) -> None:
        await self._inner.seed(spend)

    async def spent(self, tenant: str, label: str) -> float:
        return await self._inner.spent(tenant, label)

    async def in_flight(self, tenant: str) -> int:
        return await self._inner.in_flight(tenant)

    def fallback_counts(self) -> Mapping[tuple[str, str], int]:
        return self._inner.fallback_counts()

    async def drain(self) -> None:
        await self._inner.drain()

    async def aclose(self) -> None:
        await self._inner.aclose()
