"""Which of a provider's accounts serves the next call, and which are locked. No I/O.

An account (a key or an endpoint, ``providers[].accounts``) that answers ``rate_limited``
or ``upstream_auth_failed`` is locked together with the model it was asked for: rate
limits are per model at most providers, and a key refused for one model may serve
another. The lock lasts the upstream's retry-after when it sent one (capped at
``health.max_cooldown``), else ``health.rate_limit_cooldown`` or
``health.auth_failure_cooldown``. The engine then tries the provider's next account
before the next target (two-level fallback); routing sees a target whose every account
is locked as unhealthy, so other targets go first (and it is still tried, relaxed, when
nothing else is left: invariant 11).

Selection among unlocked accounts is ``fill_first`` (config order: the first account
takes everything until it is locked) or ``round_robin`` (the starting account rotates per
(provider, model) with each request). When all are locked the one freed soonest is tried.

Every method takes ``now`` (the caller's ``Clock.monotonic()``); like the health book,
the methods are synchronous and so atomic under asyncio.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import msgspec

from gw.config.schema import HealthConfig, ProviderConfig
from gw.config.snapshot import ProviderAccount
from gw.config.units import Duration
from gw.errors import GatewayError, InvalidRequestError
from gw.routing.decision import RouteDecision

LOCKING_CODES = frozenset({"rate_limited", "upstream_auth_failed"})
# Clients may address provider/any-model directly: bounded, and small enough that the
# per-request scan in fully_locked stays cheap.
MAX_LOCKS = 1_000


class AccountPin(msgspec.Struct, frozen=True, kw_only=True):
    """Only ``account`` of ``provider`` may serve the request: it holds state the request
    refers to (a Responses upstream's stored response, for ``previous_response_id``)."""

    provider: str
    account: str


def pinned_decision(decision: RouteDecision, pin: AccountPin) -> RouteDecision:
    """The chain kept to the pinned provider's targets (one account serves them all, the
    engine sees to that); none left is the client's error, named."""
    chain = tuple(target for target in decision.chain if target.provider == pin.provider)
    if not chain:
        raise InvalidRequestError(
            f"previous_response_id: that response is held by provider {pin.provider} "
            f"(account {pin.account}), and no target of route {decision.route!r} on it "
            "can serve this request; send the whole conversation as input instead, or "
            f"use a route with a target on {pin.provider}",
            param="previous_response_id",
        )
    note = (
        f"previous_response_id: only {pin.provider} (account {pin.account}), which holds "
        "the previous response"
    )
    return msgspec.structs.replace(decision, chain=chain, notes=(*decision.notes, note))


def preferred_first(
    ordered: list[ProviderAccount], prefer: AccountPin | None, provider: str
) -> list[ProviderAccount]:
    """``ordered`` with the preferred account first when it is among them (a locked one,
    left out by ``AccountBook.order``, stays out)."""
    if prefer is None or prefer.provider != provider or len(ordered) < 2:
        return ordered
    first = [a for a in ordered if a.name == prefer.account]
    return first + [a for a in ordered if a.name != prefer.account] if first else ordered


class AccountLock(msgspec.Struct, frozen=True, kw_only=True):
    """``account`` of ``provider`` may not serve ``model`` until ``until`` (monotonic)."""

    provider: str
    account: str
    model: str
    until: float
    reason: str

    @property
    def target_key(self) -> str:
        return f"{self.provider}/{self.model}"


class AccountBook:
    def __init__(self, config: HealthConfig) -> None:
        self._config = config
        self._locks: dict[tuple[str, str, str], AccountLock] = {}
        self._turns: dict[str, int] = {}  # round-robin position per provider

    def reconfigure(self, config: HealthConfig) -> None:
        self._config = config

    def order(
        self,
        provider: ProviderConfig,
        accounts: Sequence[ProviderAccount],
        model: str,
        *,
        now: float,
    ) -> list[ProviderAccount]:
        """The accounts to try for one request, in order: the unlocked ones by the
        provider's selection, else the one whose lock ends first."""
        if len(accounts) == 1 and not self._locks:
            return list(accounts)
        free = [a for a in accounts if self._lock(provider.name, a.name, model, now) is None]
        if not free:
            return [min(accounts, key=lambda a: self._until(provider.name, a.name, model))]
        if provider.account_selection == "round_robin" and len(free) > 1:
            turn = self._turns.get(provider.name, 0)
            self._turns[provider.name] = turn + 1
            start = turn % len(free)
            free = free[start:] + free[:start]
        return free

    def lock_after(
        self, provider: str, account: str, model: str, error: GatewayError, *, now: float
    ) -> AccountLock | None:
        """Lock the account for the model when ``error`` says it cannot serve it now.

        A credential gw itself could not supply (an unset env variable: blame gateway) is
        a config problem, not the upstream's verdict: it locks nothing."""
        if not self._config.lock_accounts or error.code not in LOCKING_CODES:
            return None
        if error.blame == "gateway":
            return None
        if error.code == "rate_limited":
            seconds = self._config.rate_limit_cooldown.seconds
            if error.retry_after is not None:
                seconds = min(error.retry_after, self._config.max_cooldown.seconds)
            reason = f"rate limited; locked for {Duration(seconds)}"
        else:
            seconds = self._config.auth_failure_cooldown.seconds
            reason = f"the upstream refused its credentials; locked for {Duration(seconds)}"
        if len(self._locks) >= MAX_LOCKS:
            self._forget_expired(now)
        key = (provider, account, model)
        held = self._locks.get(key)
        if held is not None and held.until > now + seconds:
            return held  # a longer lock stands (an auth lock outlives a short 429)
        lock = AccountLock(
            provider=provider, account=account, model=model, until=now + seconds, reason=reason
        )
        if len(self._locks) < MAX_LOCKS:
            self._locks[key] = lock
        return lock

    def unlock(self, provider: str, account: str, model: str) -> None:
        """The account answered for the model: whatever locked it no longer holds."""
        if self._locks:
            self._locks.pop((provider, account, model), None)

    def locks(self, *, now: float) -> list[AccountLock]:
        """Every lock still in force, soonest freed first (for ``gw health``)."""
        self._forget_expired(now)
        return sorted(self._locks.values(), key=lambda lock: lock.until)

    def fully_locked(
        self, accounts: Mapping[str, Sequence[ProviderAccount]], *, now: float
    ) -> dict[str, str]:
        """``provider/model`` -> why, for each target none of whose accounts may serve."""
        if not self._locks:
            return {}
        by_target: dict[tuple[str, str], list[AccountLock]] = {}
        for lock in self._locks.values():
            if lock.until > now:
                by_target.setdefault((lock.provider, lock.model), []).append(lock)
        verdicts: dict[str, str] = {}
        for (provider, model), held in by_target.items():
            configured = accounts.get(provider, ())
            locked_names = {lock.account for lock in held}
            if configured and all(account.name in locked_names for account in configured):
                soonest = min(held, key=lambda lock: lock.until)
                verdicts[f"{provider}/{model}"] = (
                    f"every account is locked ({soonest.account}: {soonest.reason}, "
                    f"{soonest.until - now:.1f}s more)"
                )
        return verdicts

    def _lock(self, provider: str, account: str, model: str, now: float) -> AccountLock | None:
        lock = self._locks.get((provider, account, model))
        if lock is not None and lock.until <= now:
            del self._locks[(provider, account, model)]
            return None
        return lock

    def _until(self, provider: str, account: str, model: str) -> float:
        lock = self._locks.get((provider, account, model))
        return lock.until if lock is not None else 0.0

    def _forget_expired(self, now: float) -> None:
        for key in [key for key, lock in self._locks.items() if lock.until <= now]:
            del self._locks[key]
