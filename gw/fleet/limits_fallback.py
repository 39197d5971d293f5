"""What the fleet's limits do while Redis is unreachable (``state.redis_failure``).

Per kind of limit a tenant has (budgets, rate limits, concurrency), the policy is
``open``: counted in this gateway alone, each limit divided by ``fleet_size`` (at least
1; a budget counts from nothing, as this gateway cannot know what the others spent), or
``closed``: the request is refused 503 ``overloaded`` with a Retry-After. A request
decided here carries a note (into its decision, so ``gw explain`` shows it) and is
counted per kind and policy (``gw_limits_fallback_total``).

Recovery needs nothing: once ``RETRY_REDIS_AFTER_S`` has passed since the last failure,
the next admission tries Redis again, one a pause, so an outage is not met with a
connection attempt per request. No I/O here: the caller passes the time.
"""

from __future__ import annotations

import logging
from typing import Final, Literal

import msgspec

from gw.config.schema import RedisFailureConfig, TenantBudget, TenantConfig, TenantLimits
from gw.errors import OverloadedError
from gw.execution.limits import TenantLimiter, subject_words
from gw.ports import LimitGrant

log = logging.getLogger("gw.fleet")

LimitKind = Literal["budgets", "rate_limits", "concurrency"]
KINDS: Final[tuple[LimitKind, ...]] = ("budgets", "rate_limits", "concurrency")
RETRY_REDIS_AFTER_S: Final = 1.0  # after a failure, Redis is tried again this much later
RETRY_AFTER_S: Final = 5.0  # what a refused client is told


def kinds_of(tenant: TenantConfig) -> tuple[LimitKind, ...]:
    """The kinds of limit ``tenant`` has."""
    limits, budget = tenant.limits, tenant.budget
    has = {
        "budgets": budget.daily_usd is not None or budget.monthly_usd is not None,
        "rate_limits": limits.requests_per_minute is not None
        or limits.tokens_per_minute is not None,
        "concurrency": limits.max_concurrency is not None,
    }
    return tuple(kind for kind in KINDS if has[kind])


class LimitsFallback:
    def __init__(self, policy: RedisFailureConfig, where: str) -> None:
        self.policy = policy
        self._where = where  # "Redis at redis://...", password hidden
        self._local = TenantLimiter()
        self._admitted: set[str] = set()  # request ids counted here, until settled
        self._retry_at = 0.0
        self._down = False
        self.counts: dict[tuple[str, str], int] = {
            (kind, getattr(policy, kind)): 0 for kind in KINDS
        }

    def redis_due(self, now: float) -> bool:
        """Whether this admission tries Redis: always while it answers; after a failure,
        one admission a ``RETRY_REDIS_AFTER_S`` (a Redis that does not answer at all
        keeps a trial waiting for the socket timeout: the others decide here meanwhile)."""
        if not self._down:
            return True
        if now < self._retry_at:
            return False
        self._retry_at = now + RETRY_REDIS_AFTER_S  # this one is the trial
        return True

    def redis_failed(self, error: Exception, now: float) -> None:
        self._retry_at = now + RETRY_REDIS_AFTER_S
        if not self._down:
            self._down = True
            log.warning(
                "%s is unreachable (%s): limits follow state.redis_failure until it answers",
                self._where,
                type(error).__name__,
            )

    def redis_answered(self) -> None:
        if self._down:
            self._down = False
            log.warning("%s answers again: the fleet's limits count there", self._where)

    def admit(
        self,
        tenant: TenantConfig,
        request_id: str,
        *,
        tokens: int,
        cost_usd: float,
        now: float,
        wall: float,
    ) -> LimitGrant:
        """Decide without Redis: refuse (a closed kind), or count here (open ones)."""
        kinds = kinds_of(tenant)
        closed = [kind for kind in kinds if getattr(self.policy, kind) == "closed"]
        for kind in closed or kinds:
            key = (kind, getattr(self.policy, kind))
            self.counts[key] = self.counts.get(key, 0) + 1
        if closed:
            fields = ", ".join(f"state.redis_failure.{kind}: closed" for kind in closed)
            raise OverloadedError(
                f"{self._where} is unreachable, and the "
                f"{' and '.join(k.replace('_', ' ') for k in closed)} of "
                f"{subject_words(tenant.name)} are counted there for "
                f"the whole fleet ({fields}); retry in {RETRY_AFTER_S:.0f}s",
                retry_after=RETRY_AFTER_S,
            )
        size = self.policy.fleet_size
        warnings = self._local.admit(
            scaled(tenant, size), request_id, tokens=tokens, cost_usd=cost_usd, now=now, wall=wall
        )
        self._admitted.add(request_id)
        return LimitGrant(
            warnings=warnings,
            notes=(
                f"limits counted in this gateway alone: {self._where} was unreachable "
                f"(state.redis_failure: {', '.join(f'{k} open' for k in kinds)}; each limit "
                f"divided by fleet_size {size})",
            ),
        )

    def settle(self, request_id: str, *, tokens: int, cost_usd: float | None) -> bool:
        """Settle here if it was admitted here; whether it was."""
        if request_id not in self._admitted:
            return False
        self._admitted.discard(request_id)
        self._local.settle(request_id, tokens=tokens, cost_usd=cost_usd)
        return True


def scaled(tenant: TenantConfig, fleet_size: int) -> TenantConfig:
    """``tenant`` with this gateway's share of each limit: divided by ``fleet_size``,
    counts at least 1."""
    if fleet_size == 1:
        return tenant
    limits, budget = tenant.limits, tenant.budget

    def share(value: int | None) -> int | None:
        return None if value is None else max(1, value // fleet_size)

    def usd(value: float | None) -> float | None:
        return None if value is None else value / fleet_size

    return msgspec.structs.replace(
        tenant,
        limits=TenantLimits(
            requests_per_minute=share(limits.requests_per_minute),
            tokens_per_minute=share(limits.tokens_per_minute),
            max_concurrency=share(limits.max_concurrency),
        ),
        budget=TenantBudget(daily_usd=usd(budget.daily_usd), monthly_usd=usd(budget.monthly_usd)),
    )
