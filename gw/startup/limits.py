"""The limits a starting gateway counts with: in this process, or the fleet's in Redis,
with the budgets' spend read back from the usage ledger."""

from __future__ import annotations

from gw.execution.budget_seeding import LedgerSeededLimits
from gw.execution.local_limits import LocalLimits
from gw.ports import TenantLimits
from gw.startup.plan import ServeError, ServePlan, SystemClock
from gw.store.port import StateStore


async def seeded_limiter(
    store: StateStore, clock: SystemClock, shared: TenantLimits | None = None
) -> TenantLimits:
    """The limits (the fleet's in Redis when ``state.redis_url`` is set, see
    ``shared_limits``), with each budget's spend in its current day, week, month and in
    total, the tenants', policies', keys' and the global limits' alike, read back from
    the ledger; and again for a subject given a budget while gw runs."""
    limits, wall = shared or LocalLimits(), clock.time()
    await limits.seed(await store.budget_spend(wall))
    return LedgerSeededLimits(limits, store.budget_spend)


async def shared_limits(plan: ServePlan) -> TenantLimits | None:
    """The fleet's limits in Redis, connected before anything else starts: a gateway that
    cannot reach them would count alone, so it does not start."""
    url = plan.config.state.redis_url
    if url is None:
        return None
    from gw.fleet.redis_limits import RedisLimits, RedisUnreachableError  # noqa: PLC0415 - redis only when used

    try:
        return await RedisLimits.connect(url, failure=plan.config.state.redis_failure)
    except RedisUnreachableError as exc:
        raise ServeError(
            f"state.redis_url: {exc}. Start Redis there, correct state.redis_url (or "
            "GW_REDIS_URL), or remove it to count limits in this process alone"
        ) from None
