"""A tenant's admission of one routed request, before any upstream call: the routes it may
use, and what its limits and budgets are charged up front (gw/execution/limits.py settles
the real figures once the request ends)."""

from __future__ import annotations

from fnmatch import fnmatchcase

from gw.config.snapshot import Snapshot
from gw.errors import PermissionDeniedError
from gw.execution.budget_reserve import reserved_cost_usd
from gw.execution.local_limits import ADMITTED
from gw.ports import Clock, LimitGrant, TenantLimits
from gw.routing.decision import RouteDecision
from gw.routing.filters import PROJECTED_OUTPUT_TOKENS


async def admit_tenant(
    snapshot: Snapshot,
    tenant_name: str,
    decision: RouteDecision,
    *,
    limits: TenantLimits | None,
    request_id: str,
    clock: Clock,
    lease_ttl: float = 660.0,
) -> LimitGrant:
    """Raise ``PermissionDeniedError`` (or the limiter's error) if the tenant may not send
    this request now; otherwise its reservation is taken under ``request_id``, held at most
    ``lease_ttl`` seconds should this process die before settling it."""
    tenant = snapshot.tenants.get(tenant_name)
    if tenant is None:
        raise PermissionDeniedError(
            f"the key's tenant {tenant_name!r} is not in the config; add it under tenants"
        )
    allowed = tenant.allowed_routes
    if allowed is not None and not any(fnmatchcase(decision.route, p) for p in allowed):
        raise PermissionDeniedError(
            f"tenant {tenant.name} may not use {decision.route!r}; its allowed_routes: "
            + ", ".join(allowed)
        )
    if tenant.budget.daily_usd is not None or tenant.budget.monthly_usd is not None:
        _refuse_unpriced(tenant.name, decision)
    if limits is None:
        return ADMITTED
    return await limits.admit(
        tenant,
        request_id,
        tokens=_projected_tokens(decision),
        cost_usd=reserved_cost_usd(snapshot, decision),
        lease_ttl=lease_ttl,
        now=clock.monotonic(),
        wall=clock.time(),
    )


def _projected_tokens(decision: RouteDecision) -> int:
    """What a tenant's tokens-per-minute is charged up front: input plus max output."""
    output = decision.max_output_tokens
    return decision.estimated_input_tokens + (PROJECTED_OUTPUT_TOKENS if output is None else output)


def _refuse_unpriced(tenant: str, decision: RouteDecision) -> None:
    """A budget cannot guard a target whose price gw does not know: refuse it up front."""
    keys = {target.key for target in decision.chain}
    unpriced = sorted(
        f"{c.provider}/{c.model}"
        for c in decision.candidates
        if f"{c.provider}/{c.model}" in keys and c.estimated_cost_usd is None
    )
    if unpriced:
        raise PermissionDeniedError(
            f"tenant {tenant} has a budget, and gw knows no price for {', '.join(unpriced)}; "
            "add its prices under models (input_per_mtok, output_per_mtok) to use it"
        )
