"""admit_request(): a tenant's routes, unpriced targets under a budget, what the limits
are charged up front, and the global limits beside the tenant's."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from gw.config import Snapshot, compile_snapshot, load_config
from gw.config.schema import TenantBudget
from gw.errors import BudgetExceededError, ConcurrencyLimitedError, PermissionDeniedError
from gw.execution.limits import TenantLimiter
from gw.execution.local_limits import LocalLimits
from gw.execution.periods import period_label
from gw.execution.tenant_admission import admit_request, limited, ticket_ids
from gw.ir import ChatRequest, TextPart, UserMessage
from gw.routing import RouteDecision, decide

CONFIG = """
providers:
  - {name: openai, kind: openai}
  - {name: local, kind: openai_compatible, base_url: "http://127.0.0.1:11434/v1"}
models:
  - {provider: openai, model: mini, input_per_mtok: 1000000, output_per_mtok: 1000000,
     context_window: 128000}
routes:
  - name: chat-priced
    targets: [{provider: openai, model: mini}]
  - name: chat-local
    targets: [{provider: local, model: tiny}]
tenants:
  - {name: open-team}
  - {name: narrow, allowed_routes: ["chat-l*"]}
  - {name: frugal, budget: {daily_usd: 1.0}}
"""


class FixedClock:
    def time(self) -> float:
        return 1_764_547_200.0

    def monotonic(self) -> float:
        return 0.0


def snapshot() -> Snapshot:
    return compile_snapshot(load_config(CONFIG, "gw.yaml"), revision=1, source="t")


def routed(snap: Snapshot, route: str, tenant: str, max_tokens: int | None = 10) -> RouteDecision:
    request = ChatRequest(
        model=route,
        messages=(UserMessage(content=(TextPart(text="hi"),)),),
        max_tokens=max_tokens,
    )
    return decide(request, snap, request_id="r1", tenant=tenant)[0]


def admit(snap: Snapshot, tenant: str, route: str, limits: LocalLimits | None = None) -> None:
    decision = routed(snap, route, tenant)
    asyncio.run(
        admit_request(snap, tenant, decision, limits=limits, request_id="r1", clock=FixedClock())
    )


def test_a_tenant_missing_from_the_config_is_refused_with_the_fix() -> None:
    snap = snapshot()
    with pytest.raises(PermissionDeniedError, match="'gone' is not in the config; add it"):
        admit(snap, "gone", "chat-local")


def test_allowed_routes_are_glob_patterns() -> None:
    snap = snapshot()
    admit(snap, "narrow", "chat-local")
    with pytest.raises(PermissionDeniedError, match=r"may not use 'chat-priced'.*chat-l\*"):
        admit(snap, "narrow", "chat-priced")
    admit(snap, "open-team", "chat-priced")  # no allowed_routes: every route


def test_a_budget_refuses_a_target_without_a_price() -> None:
    # local/tiny has no catalog entry: its price is unknown (an entry without prices is free).
    snap = snapshot()
    with pytest.raises(PermissionDeniedError, match="knows no price for local/tiny"):
        admit(snap, "frugal", "chat-local")


def test_a_budget_too_small_for_the_projection_refuses_up_front() -> None:
    # At $1 a token, even a short request projects far beyond the $1 daily budget.
    snap, limits = snapshot(), LocalLimits()
    with pytest.raises(BudgetExceededError):
        admit(snap, "frugal", "chat-priced", limits)


class RecordingLimiter(TenantLimiter):
    """A limiter that records what each admission was charged."""

    def __init__(self) -> None:
        super().__init__()
        self.charged: list[tuple[int, float]] = []

    def admit(self, tenant: object, request_id: str, **charge: Any) -> None:  # type: ignore[override]
        self.charged.append((charge["tokens"], charge["cost_usd"]))


def charge(snap: Snapshot, decision: RouteDecision, limiter: TenantLimiter) -> None:
    limits = LocalLimits(limiter)
    asyncio.run(
        admit_request(
            snap, "open-team", decision, limits=limits, request_id="r1", clock=FixedClock()
        )
    )


def test_the_charge_is_input_plus_max_output_at_the_dearest_targets_price() -> None:
    snap = compile_snapshot(load_config(CHAIN, "gw.yaml"), revision=1, source="t")
    limits = RecordingLimiter()
    decision = routed(snap, "chain", "open-team", max_tokens=10)
    charge(snap, decision, limits)
    [(tokens, cost)] = limits.charged
    assert tokens == decision.estimated_input_tokens + 10
    # The chain may reach either target: the dearer one's upper bound is reserved, the
    # input estimate with its margin (twice, plus 64 tokens) and the output ceiling.
    reserved_input = 2 * decision.estimated_input_tokens + 64
    assert cost == pytest.approx((reserved_input + 10) * 2.0 / 1e6)


def test_a_request_without_max_tokens_reserves_the_stated_default() -> None:
    snap = compile_snapshot(load_config(CHAIN, "gw.yaml"), revision=1, source="t")
    limits = RecordingLimiter()
    decision = routed(snap, "chain", "open-team", max_tokens=None)
    charge(snap, decision, limits)
    [(_, cost)] = limits.charged
    reserved_input = 2 * decision.estimated_input_tokens + 64
    assert cost == pytest.approx((reserved_input + 4096) * 2.0 / 1e6)


CHAIN = """
providers:
  - {name: a, kind: openai}
  - {name: b, kind: openai}
models:
  - {provider: a, model: cheap, input_per_mtok: 1.0, output_per_mtok: 1.0}
  - {provider: b, model: dear, input_per_mtok: 2.0, output_per_mtok: 2.0}
routes:
  - name: chain
    targets: [{provider: a, model: cheap, priority: 1}, {provider: b, model: dear, priority: 2}]
tenants:
  - {name: open-team}
"""


GLOBAL = CHAIN.replace(
    "tenants:", "limits: {max_concurrency: 1, budget: {weekly_usd: 5.0}}\ntenants:"
)


def test_global_limits_count_every_request_with_or_without_a_tenant() -> None:
    snap = compile_snapshot(load_config(GLOBAL, "gw.yaml"), revision=1, source="t")
    limits = LocalLimits()
    decision = routed(snap, "chain", "open-team")

    def admit_as(tenant: str | None, request_id: str) -> None:
        asyncio.run(
            admit_request(
                snap, tenant, decision, limits=limits, request_id=request_id, clock=FixedClock()
            )
        )

    admit_as(None, "r1")  # open mode: no tenant, the global limits still count
    with pytest.raises(ConcurrencyLimitedError, match=r"gw \(limits: every request counts\)"):
        admit_as("open-team", "r2")
    # The refusal released the tenant's share it had taken: its ticket is gone.
    assert asyncio.run(limits.in_flight("open-team")) == 0
    for ticket in ticket_ids("r1"):
        limits.settle(ticket, tokens=0, cost_usd=0.001)
    admit_as("open-team", "r3")
    assert asyncio.run(limits.in_flight("open-team")) == 1
    assert asyncio.run(limits.in_flight("@gw")) == 1


def test_a_global_budget_refuses_an_unpriced_target_naming_limits() -> None:
    snap = compile_snapshot(
        load_config(CONFIG + "limits: {budget: {total_usd: 10}}\n", "gw.yaml"),
        revision=1,
        source="t",
    )
    decision = routed(snap, "chat-local", "open-team")
    with pytest.raises(PermissionDeniedError, match=r"gw has a budget \(limits.budget\)"):
        asyncio.run(
            admit_request(
                snap, None, decision, limits=LocalLimits(), request_id="r1", clock=FixedClock()
            )
        )


POLICY = CONFIG + "policies:\n  - {name: batch, match: {routes: ['*']}, budget: {total_usd: 10}}\n"


def test_a_policy_budget_refuses_an_unpriced_target_naming_the_policy() -> None:
    snap = compile_snapshot(load_config(POLICY, "gw.yaml"), revision=1, source="t")
    decision = routed(snap, "chat-local", "open-team")
    policy = snap.config.policies[0]
    assert limited(snap, None, policy)
    with pytest.raises(PermissionDeniedError, match=r"policy batch has a budget \(policies"):
        asyncio.run(
            admit_request(
                snap,
                None,
                decision,
                limits=LocalLimits(),
                request_id="r1",
                clock=FixedClock(),
                policy=policy,
            )
        )


def test_a_keys_budget_is_counted_under_its_own_subject_and_released_by_its_ticket() -> None:
    snap = compile_snapshot(load_config(CHAIN, "gw.yaml"), revision=1, source="t")
    decision = routed(snap, "chain", "open-team")
    limits, budget = LocalLimits(), TenantBudget(daily_usd=0.0)
    assert not limited(snap, None, None, TenantBudget())  # no budget: nothing to pass
    assert limited(snap, None, None, budget)

    def admit_with(key_budget: TenantBudget, request_id: str) -> None:
        asyncio.run(
            admit_request(
                snap,
                "open-team",
                decision,
                limits=limits,
                request_id=request_id,
                clock=FixedClock(),
                key_id="key_abc",
                key_budget=key_budget,
            )
        )

    with pytest.raises(BudgetExceededError, match=r"API key key_abc has spent \$0\.000000 of"):
        admit_with(budget, "r1")
    assert asyncio.run(limits.in_flight("open-team")) == 0  # the tenant's share released
    admit_with(TenantBudget(daily_usd=1.0), "r2")
    assert asyncio.run(limits.in_flight("@key:key_abc")) == 1
    for ticket in ticket_ids("r2"):
        limits.settle(ticket, tokens=0, cost_usd=0.25)
    assert asyncio.run(limits.in_flight("@key:key_abc")) == 0
    label = period_label("day", FixedClock().time())
    assert asyncio.run(limits.spent("@key:key_abc", label)) == pytest.approx(0.25)
    assert asyncio.run(limits.spent("open-team", label)) == 0.0  # the tenant has no budget
