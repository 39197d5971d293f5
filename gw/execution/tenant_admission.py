"""The admission of one routed request by its limits, before any upstream call: the
routes its tenant may use, and what the global limits (``limits:``), its tenant's, the
budget of the policy that decided it and its API key's are charged up front
(gw/execution/limits.py settles the real figures once the request ends).
"""

from __future__ import annotations

import functools
from fnmatch import fnmatchcase

import msgspec

from gw.config.schema import GlobalLimits, PolicyConfig, TenantBudget, TenantConfig
from gw.config.snapshot import Snapshot
from gw.errors import GatewayError, PermissionDeniedError
from gw.execution.budget_reserve import reserved_cost_usd
from gw.execution.limits import (
    GLOBAL_SUBJECT,
    KEY_PREFIX,
    POLICY_PREFIX,
    budget_subject,
    global_subject,
    subject_words,
)
from gw.execution.local_limits import ADMITTED
from gw.execution.request_context import RequestContext
from gw.ports import Clock, LimitGrant, TenantLimits
from gw.routing.decision import RouteDecision
from gw.routing.filters import PROJECTED_OUTPUT_TOKENS

LEASE_GRACE_S = 60.0  # a lease outlives its request's timeout.total by at most this much


async def admitted(
    ctx: RequestContext,
    decision: RouteDecision,
    policy: PolicyConfig,
    limits: TenantLimits | None,
    clock: Clock,
) -> RouteDecision:
    """The decision once the tenant's routes and the limits (its own, the global ones,
    the policy's and the key's budgets) let the request go, before any upstream call;
    what the limits noted (a decision taken in a fallback) joins its notes, for
    ``gw explain``, and their warnings its warnings."""
    total_timeout = policy.timeout.total.seconds
    grant = await admit_request(
        ctx.snapshot,
        ctx.tenant,
        decision,
        limits=limits,
        request_id=ctx.request_id,
        clock=clock,
        # A request ends within its timeout.total (streams included), then settles: a
        # share still held after that plus a grace (as long again, at most a minute)
        # belongs to a process that died, and is released (the fleet's leases).
        lease_ttl=total_timeout + min(total_timeout, LEASE_GRACE_S),
        policy=policy,
        key_id=ctx.key_id,
        key_budget=ctx.key_budget,
    )
    if not grant.notes and not grant.warnings:
        return decision
    return msgspec.structs.replace(
        decision,
        notes=(*decision.notes, *grant.notes, *grant.warnings),
        warnings=(*decision.warnings, *grant.warnings),
    )


def ticket_ids(request_id: str) -> tuple[str, str, str, str]:
    """The ids a request's shares are held under: its tenant's, the global one's, its
    policy's and its key's. Settling all is always right: an id with no share settles
    nothing."""
    return (
        request_id,
        request_id + GLOBAL_SUBJECT,
        request_id + POLICY_PREFIX,
        request_id + KEY_PREFIX,
    )


def limited(
    snapshot: Snapshot,
    tenant: str | None,
    policy: PolicyConfig | None = None,
    key_budget: TenantBudget | None = None,
) -> bool:
    """Whether a request of ``tenant`` (None: no key, e.g. open mode), decided by
    ``policy``, sent with a key of ``key_budget``, has limits to pass."""
    return (
        tenant is not None
        or _global(snapshot.config.limits) is not None
        or (policy is not None and policy.budget != _NO_BUDGET)
        or (key_budget is not None and key_budget != _NO_BUDGET)
    )


_NO_BUDGET = TenantBudget()


async def admit_request(
    snapshot: Snapshot,
    tenant_name: str | None,
    decision: RouteDecision,
    *,
    limits: TenantLimits | None,
    request_id: str,
    clock: Clock,
    lease_ttl: float = 660.0,
    policy: PolicyConfig | None = None,
    key_id: str | None = None,
    key_budget: TenantBudget | None = None,
) -> LimitGrant:
    """Raise ``PermissionDeniedError`` (or a limiter's error) if the request may not be
    sent now; otherwise its share of its tenant's limits, of the global ones, of its
    policy's budget and of its key's is taken (under ``ticket_ids``), each held at most
    ``lease_ttl`` seconds should this process die before settling it. A refusal by one
    releases what the others took, except a request counted by a requests-per-minute
    limit, which stays counted."""
    subjects = _subjects(
        snapshot,
        tenant_name,
        decision,
        request_id=request_id,
        policy=policy,
        key_id=key_id,
        key_budget=key_budget,
    )
    for subject, _ in subjects:
        if _has_budget(subject):
            _refuse_unpriced(subject.name, decision)
    if limits is None or not subjects:
        return ADMITTED
    tokens, cost = _projected_tokens(decision), reserved_cost_usd(snapshot, decision)
    held: list[str] = []
    notes: list[str] = []
    warnings: list[str] = []
    for subject, ticket in subjects:
        try:
            grant = await limits.admit(
                subject,
                ticket,
                tokens=tokens,
                cost_usd=cost,
                lease_ttl=lease_ttl,
                now=clock.monotonic(),
                wall=clock.time(),
            )
        except GatewayError:
            for taken in held:
                limits.settle(taken, tokens=0, cost_usd=None)
            raise
        held.append(ticket)
        notes.extend(grant.notes)
        warnings.extend(grant.warnings)
    if not notes and not warnings:
        return ADMITTED
    return LimitGrant(notes=tuple(notes), warnings=tuple(warnings))


def _subjects(
    snapshot: Snapshot,
    tenant_name: str | None,
    decision: RouteDecision,
    *,
    request_id: str,
    policy: PolicyConfig | None,
    key_id: str | None,
    key_budget: TenantBudget | None,
) -> list[tuple[TenantConfig, str]]:
    """What the request is counted by, each with the ticket its share is held under: its
    tenant, the global limits, its policy's budget and its key's, those that apply."""
    tenant_ticket, global_ticket, policy_ticket, key_ticket = ticket_ids(request_id)
    tenant = None if tenant_name is None else _tenant(snapshot, tenant_name, decision)
    decided = None if policy is None else _budgeted(POLICY_PREFIX + policy.name, policy.budget)
    keyed = (
        None if key_id is None or key_budget is None else _budgeted(KEY_PREFIX + key_id, key_budget)
    )
    counted = (
        (tenant, tenant_ticket),
        (_global(snapshot.config.limits), global_ticket),
        (decided, policy_ticket),
        (keyed, key_ticket),
    )
    return [(subject, ticket) for subject, ticket in counted if subject is not None]


def _has_budget(subject: TenantConfig) -> bool:
    budget = subject.budget
    return any(
        usd is not None
        for usd in (budget.daily_usd, budget.weekly_usd, budget.monthly_usd, budget.total_usd)
    )


@functools.lru_cache(maxsize=8)  # one per config revision's limits: read by every request
def _global(limits: GlobalLimits) -> TenantConfig | None:
    return global_subject(limits)


@functools.lru_cache(maxsize=1024)  # a policy's or a key's: read by each of its requests
def _budgeted(name: str, budget: TenantBudget) -> TenantConfig | None:
    return budget_subject(name, budget)


def check_tenant_route(snapshot: Snapshot, name: str, decision: RouteDecision) -> None:
    """403 ``permission_denied`` when tenant ``name`` is not configured or may not use
    ``decision``'s route, as admission checks it (``gw replay`` asks without admitting)."""
    _tenant(snapshot, name, decision)


def _tenant(snapshot: Snapshot, name: str, decision: RouteDecision) -> TenantConfig:
    tenant = snapshot.tenants.get(name)
    if tenant is None:
        raise PermissionDeniedError(
            f"the key's tenant {name!r} is not in the config; add it under tenants"
        )
    allowed = tenant.allowed_routes
    if allowed is not None and not any(fnmatchcase(decision.route, p) for p in allowed):
        raise PermissionDeniedError(
            f"tenant {tenant.name} may not use {decision.route!r}; its allowed_routes: "
            + ", ".join(allowed)
        )
    return tenant


def _projected_tokens(decision: RouteDecision) -> int:
    """What a tokens-per-minute limit is charged up front: input plus max output."""
    output = decision.max_output_tokens
    return decision.estimated_input_tokens + (PROJECTED_OUTPUT_TOKENS if output is None else output)


def _refuse_unpriced(subject: str, decision: RouteDecision) -> None:
    """A budget cannot guard a target whose price gw does not know: refuse it up front."""
    keys = {target.key for target in decision.chain}
    unpriced = sorted(
        f"{c.provider}/{c.model}"
        for c in decision.candidates
        if f"{c.provider}/{c.model}" in keys and c.estimated_cost_usd is None
    )
    if unpriced:
        if subject == GLOBAL_SUBJECT:
            who = "gw has a budget (limits.budget)"
        elif subject.startswith(POLICY_PREFIX):
            who = f"{subject_words(subject)} has a budget (policies[].budget)"
        else:
            who = f"{subject_words(subject)} has a budget"
        raise PermissionDeniedError(
            f"{who}, and gw knows no price for {', '.join(unpriced)}; "
            "add its prices under models (input_per_mtok, output_per_mtok) to use it"
        )
