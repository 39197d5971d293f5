"""The ``TenantLimits`` port counted in this process: one gateway's limits
(gw/execution/limits.py holds the counting). Nothing to write elsewhere, so settling is
done when ``settle`` returns and ``drain`` has nothing to wait for."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from gw.config.schema import TenantConfig
from gw.execution.limits import TenantLimiter
from gw.ports import LimitGrant

ADMITTED = LimitGrant()


class LocalLimits:
    def __init__(self, limiter: TenantLimiter | None = None) -> None:
        self.limiter = limiter or TenantLimiter()

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
        warnings = self.limiter.admit(
            tenant, request_id, tokens=tokens, cost_usd=cost_usd, now=now, wall=wall
        )
        return LimitGrant(warnings=warnings) if warnings else ADMITTED

    def settle(self, request_id: str, *, tokens: int, cost_usd: float | None) -> None:
        self.limiter.settle(request_id, tokens=tokens, cost_usd=cost_usd)

    async def seed(self, spend: Iterable[tuple[str, str, float]]) -> None:
        self.limiter.seed(spend)

    async def spent(self, tenant: str, label: str) -> float:
        return self.limiter.spent(tenant, label)

    async def in_flight(self, tenant: str) -> int:
        return self.limiter.in_flight(tenant)

    def fallback_counts(self) -> Mapping[tuple[str, str], int]:
        return {}  # nothing shared, nothing to fall back from

    async def drain(self) -> None:
        return None

    async def aclose(self) -> None:
        return None
