"""Tenant limits, checked after routing and before any upstream spend. No I/O.

Per tenant (``tenants[].limits`` and ``tenants[].budget``):

- ``requests_per_minute`` and ``tokens_per_minute``: token buckets holding a minute's
  allowance and refilling continuously; over either -> 429 ``rate_limited`` with the
  seconds until enough has refilled as retry-after. A request takes its *projected*
  tokens (estimated input + its max output, or ``PROJECTED_OUTPUT_TOKENS`` when it sets
  none) and settles to the actual count when it ends.
- ``max_concurrency``: requests in flight; over -> 429 ``concurrency_limited``.
- ``daily_usd`` / ``weekly_usd`` / ``monthly_usd`` / ``total_usd``: settled spend plus
  what requests in flight have reserved (an upper bound on their cost,
  gw/execution/budget_reserve.py) must stay within the budget, else 402
  ``budget_exceeded``. Settling replaces the reservation with
  the actual cost. Requests racing for the last cents therefore cannot overspend by more
  than the amount by which the actual costs of the requests in flight exceed their
  reservations (the bound and when it can be passed are stated there). A tenant with a
  budget may not use a target whose price is unknown (403). Calls gw cannot measure are
  not counted: an attempt cut off by a timeout, or the losing lane of a hedge, may still
  be billed by the provider.

The top-level ``limits:`` are counted the same way, as a subject named ``GLOBAL_SUBJECT``
that every routed request is charged to, whoever sends it; so are the budgets of a policy
(``policies[].budget``, subject ``@policy:<name>``, charged with every request the policy
decided) and of an API key (``gw keys create/update --daily-usd ...``, ``@key:<id>``).
Subject names start with ``@``, which a tenant's may not.

All checks run before anything is taken, so a refused request holds nothing. Periods are
UTC days, ISO weeks and months, and the total, labelled by ``period_label`` (invariant
10); the spend of the current periods is seeded from the usage ledger at start-up
(``seed``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import msgspec

from gw.config.schema import GlobalLimits, TenantBudget, TenantConfig
from gw.config.schema import TenantLimits as TenantLimitsConfig
from gw.errors import (
    BudgetExceededError,
    ConcurrencyLimitedError,
    InvalidRequestError,
    RateLimitedError,
)
from gw.execution.periods import Period, period_label


class Ticket(msgspec.Struct, kw_only=True):
    """What one admitted request holds until it settles."""

    tenant: str
    tokens: int
    cost_usd: float
    labels: tuple[str, ...]


class _Bucket:
    __slots__ = ("level", "per_second", "size", "updated")

    def __init__(self, per_minute: int, now: float) -> None:
        self.size = float(per_minute)
        self.per_second = per_minute / 60.0
        self.level = self.size
        self.updated = now

    def refill(self, per_minute: int, now: float) -> None:
        if per_minute != self.size:  # the config changed: keep the level within the new size
            self.size, self.per_second = float(per_minute), per_minute / 60.0
        self.level = min(self.size, self.level + (now - self.updated) * self.per_second)
        self.updated = now

    def wait_for(self, amount: float) -> float:
        """Seconds until ``amount`` is available (0: now)."""
        return max(0.0, (amount - self.level) / self.per_second)


class _TenantState:
    __slots__ = ("in_flight", "requests", "tokens")

    def __init__(self) -> None:
        self.in_flight = 0
        self.requests: _Bucket | None = None
        self.tokens: _Bucket | None = None


class TenantLimiter:
    def __init__(self) -> None:
        self._tenants: dict[str, _TenantState] = {}
        self._spent: dict[tuple[str, str], float] = {}  # (tenant, period label) -> USD
        self._reserved: dict[tuple[str, str], float] = {}
        self._tickets: dict[str, Ticket] = {}  # by request id

    def seed(self, spend: Iterable[tuple[str, str, float]]) -> None:
        """Settled spend from the ledger, (tenant, period label, USD) rows: each counter is
        raised to the ledger's sum if it holds less, never lowered (it may already count
        spend the ledger has not written yet)."""
        totals: dict[tuple[str, str], float] = {}
        for tenant, label, usd in spend:
            totals[(tenant, label)] = totals.get((tenant, label), 0.0) + usd
        for key, usd in totals.items():
            self._spent[key] = max(self._spent.get(key, 0.0), usd)

    def spent(self, tenant: str, label: str) -> float:
        return self._spent.get((tenant, label), 0.0)

    def admit(
        self,
        tenant: TenantConfig,
        request_id: str,
        *,
        tokens: int,
        cost_usd: float,
        now: float,
        wall: float,
    ) -> tuple[str, ...]:
        """Take the request's share of every limit, or raise without taking anything; the
        warnings for budgets this request brings to ``WARN_SHARE`` or beyond."""
        state = self._tenants.setdefault(tenant.name, _TenantState())
        limits = tenant.limits
        if limits.max_concurrency is not None and state.in_flight >= limits.max_concurrency:
            raise concurrency_error(tenant.name, state.in_flight, limits.max_concurrency)
        budgets = budgets_for(tenant, wall)
        for period, label, budget in budgets:
            self._check_budget(tenant.name, period, label, budget, cost_usd)
        state.requests = _refilled(state.requests, limits.requests_per_minute, now)
        state.tokens = _refilled(state.tokens, limits.tokens_per_minute, now)
        _check_rate(tenant.name, "requests_per_minute", state.requests, 1)
        _check_rate(tenant.name, "tokens_per_minute", state.tokens, tokens)
        # Every check passed: take.
        state.in_flight += 1
        if state.requests is not None:
            state.requests.level -= 1
        if state.tokens is not None:
            state.tokens.level -= tokens
        labels = tuple(label for _, label, _ in budgets)
        for label in labels:
            key = (tenant.name, label)
            self._reserved[key] = self._reserved.get(key, 0.0) + cost_usd
        self._tickets[request_id] = Ticket(
            tenant=tenant.name, tokens=tokens, cost_usd=cost_usd, labels=labels
        )
        return tuple(
            warning
            for period, label, budget in budgets
            if (
                warning := budget_warning(
                    tenant.name, period, label, budget, self._used(tenant.name, label)
                )
            )
        )

    def _used(self, tenant: str, label: str) -> float:
        key = (tenant, label)
        return self._spent.get(key, 0.0) + self._reserved.get(key, 0.0)

    def settle(self, request_id: str, *, tokens: int, cost_usd: float | None) -> None:
        """The request ended: its actual tokens and cost replace what it reserved."""
        ticket = self._tickets.pop(request_id, None)
        if ticket is None:
            return
        state = self._tenants.get(ticket.tenant)
        if state is not None:
            state.in_flight = max(0, state.in_flight - 1)
            if state.tokens is not None:  # may go below zero: later requests wait longer
                state.tokens.level += ticket.tokens - tokens
        for label in ticket.labels:
            key = (ticket.tenant, label)
            self._reserved[key] = max(0.0, self._reserved.get(key, 0.0) - ticket.cost_usd)
            if cost_usd:
                self._spent[key] = self._spent.get(key, 0.0) + cost_usd

    def in_flight(self, tenant: str) -> int:
        state = self._tenants.get(tenant)
        return 0 if state is None else state.in_flight

    def _check_budget(
        self, tenant: str, period: Period, label: str, budget: float, cost_usd: float
    ) -> None:
        key = (tenant, label)
        spent, reserved = self._spent.get(key, 0.0), self._reserved.get(key, 0.0)
        if over_budget(spent, reserved, cost_usd, budget):
            raise budget_error(
                tenant,
                period,
                label,
                budget=budget,
                spent=spent,
                reserved=reserved,
                cost_usd=cost_usd,
            )


_NAMES: Mapping[Period, str] = {
    "day": "daily",
    "week": "weekly",
    "month": "monthly",
    "total": "total",
}
GLOBAL_SUBJECT = "@gw"
"""The limits of ``limits:`` (every request) are counted as a tenant of this name, which
no configured tenant may take (names starting with ``@`` are refused at load)."""
POLICY_PREFIX = "@policy:"
"""A policy's ``budget`` is counted as the subject ``@policy:<name>``: by name, so a
renamed policy is a new subject that starts from nothing."""
KEY_PREFIX = "@key:"
"""An API key's budget (``gw keys create/update --daily-usd ...``) is counted as the
subject ``@key:<id>``."""


def global_subject(limits: GlobalLimits) -> TenantConfig | None:
    """``limits:`` as the subject the limiters count, or None when it sets nothing."""
    if limits == GlobalLimits():
        return None
    return TenantConfig(
        name=GLOBAL_SUBJECT,
        limits=TenantLimitsConfig(
            requests_per_minute=limits.requests_per_minute,
            tokens_per_minute=limits.tokens_per_minute,
            max_concurrency=limits.max_concurrency,
        ),
        budget=limits.budget,
    )


def budget_subject(name: str, budget: TenantBudget) -> TenantConfig | None:
    """A policy's or a key's budget (``name``: ``@policy:...`` or ``@key:...``) as the
    subject the limiters count, or None when it sets no budget."""
    if budget == TenantBudget():
        return None
    return TenantConfig(name=name, budget=budget)


def subject_words(subject: str) -> str:
    """Who a limit belongs to, in words: ``tenant team-a``, ``policy batch``, ``API key
    key_...``, or the global limits."""
    if subject == GLOBAL_SUBJECT:
        return "gw (limits: every request counts)"
    if subject.startswith(POLICY_PREFIX):
        return f"policy {subject.removeprefix(POLICY_PREFIX)}"
    if subject.startswith(KEY_PREFIX):
        return f"API key {subject.removeprefix(KEY_PREFIX)}"
    return f"tenant {subject}"


def _section(subject: str) -> str:
    """Where the subject's limits are set in the config."""
    if subject.startswith(POLICY_PREFIX):
        return "policies[]"
    return "limits" if subject == GLOBAL_SUBJECT else "tenants[]"


_FLAGS: Mapping[Period, str] = {
    "day": "--daily-usd",
    "week": "--weekly-usd",
    "month": "--monthly-usd",
    "total": "--total-usd",
}


def _raise_budget(subject: str, period: Period) -> str:
    """How to raise the subject's budget: a config field, or the key's CLI flag."""
    if subject.startswith(KEY_PREFIX):
        key = subject.removeprefix(KEY_PREFIX)
        return f"raise it with `gw keys update {key} {_FLAGS[period]} USD`"
    return f"raise {_section(subject)}.budget"


# The checks and their refusals, shared with the fleet's limits in Redis (gw/fleet/) so
# that a client reads the same error from one gateway or many.


WARN_SHARE = 0.8
"""A budget this much used (spent plus reserved, this request's reservation included)
sends the client a warning with its answer (``x-gw-warning``)."""


def budget_warning(
    tenant: str, period: Period, label: str, budget: float, used: float
) -> str | None:
    """The warning for a budget at ``used`` USD (spent plus reserved), or None below
    ``WARN_SHARE``."""
    if budget <= 0 or used < WARN_SHARE * budget:
        return None
    when = "all time" if period == "total" else label[2:]
    return (
        f"{subject_words(tenant)} has used {min(used / budget, 1.0):.0%} of its {_NAMES[period]} "
        f"budget of ${budget:.2f} ({when}), counting requests in flight"
    )


def over_budget(spent: float, reserved: float, cost_usd: float, budget: float) -> bool:
    return spent + reserved + cost_usd > budget or spent >= budget


def concurrency_error(tenant: str, in_flight: int, limit: int) -> ConcurrencyLimitedError:
    return ConcurrencyLimitedError(
        f"{subject_words(tenant)} already has {in_flight} requests in flight "
        f"(limits.max_concurrency {limit}); retry when one ends"
    )


def budget_error(
    tenant: str,
    period: Period,
    label: str,
    *,
    budget: float,
    spent: float,
    reserved: float,
    cost_usd: float,
) -> BudgetExceededError:
    detail = f"; ${reserved:.6f} is reserved by requests in flight" if reserved else ""
    when = "all time" if period == "total" else label[2:]
    fix = _raise_budget(tenant, period)
    if period != "total":  # a total never resets
        fix += f" or wait for the next {period}"
    return BudgetExceededError(
        f"{subject_words(tenant)} has spent ${spent:.6f} of its {_NAMES[period]} budget of "
        f"${budget:.2f} ({when}){detail}, and this request may cost up to "
        f"${cost_usd:.6f}; {fix}"
    )


def too_large_error(tenant: str, field: str, size: float, amount: int) -> InvalidRequestError:
    """A request that can never pass: a 400, which clients do not retry."""
    return InvalidRequestError(
        f"this request may use {amount} tokens, more than the whole limits.{field} "
        f"({size:.0f}) of {subject_words(tenant)}; lower max_tokens or raise the limit"
    )


def rate_error(tenant: str, field: str, size: float, wait: float) -> RateLimitedError:
    return RateLimitedError(
        f"{subject_words(tenant)} is over limits.{field} ({size:.0f}); retry in {wait:.1f}s",
        retry_after=max(1.0, round(wait, 1)),
    )


def budgets_for(tenant: TenantConfig, wall: float) -> list[tuple[Period, str, float]]:
    """The tenant's budgets at ``wall``: (period, label, USD), the shortest period first."""
    budget = tenant.budget
    periods: list[tuple[Period, float | None]] = [
        ("day", budget.daily_usd),
        ("week", budget.weekly_usd),
        ("month", budget.monthly_usd),
        ("total", budget.total_usd),
    ]
    return [(p, period_label(p, wall), usd) for p, usd in periods if usd is not None]


def _refilled(bucket: _Bucket | None, per_minute: int | None, now: float) -> _Bucket | None:
    if per_minute is None:
        return None
    if bucket is None:
        return _Bucket(per_minute, now)
    bucket.refill(per_minute, now)
    return bucket


def _check_rate(tenant: str, field: str, bucket: _Bucket | None, amount: int) -> None:
    if bucket is None:
        return
    if amount > bucket.size:
        raise too_large_error(tenant, field, bucket.size, amount)
    wait = bucket.wait_for(amount)
    if wait > 0:
        raise rate_error(tenant, field, bucket.size, wait)
