"""What routing sees of the targets' health for one request: a verdict for each target
that is not healthy, from the breakers (the health book) and the account locks."""

from __future__ import annotations

from gw.config.snapshot import Snapshot
from gw.execution.accounts import AccountBook
from gw.execution.health import HealthBook, TargetHealth
from gw.routing.health import TargetVerdict, VerdictStatus


def health_view(
    snapshot: Snapshot, health: HealthBook | None, accounts: AccountBook | None, *, now: float
) -> dict[str, TargetVerdict]:
    """A verdict for each target that is not healthy (breaker, or every account locked);
    empty (and free) when all are fine. A breaker an operator forced closed
    (gw/config/switches.py) gives no verdict: the target is tried as if healthy."""
    view: dict[str, TargetVerdict] = {}
    if health is not None:
        flagged = health.flagged(now=now)
        closed = snapshot.switches.breakers_closed
        view = {key: _verdict(state) for key, state in flagged.items() if key not in closed}
    if accounts is not None:
        for key, reason in accounts.fully_locked(snapshot.accounts, now=now).items():
            view[key] = TargetVerdict(status="unhealthy", reason=reason)
    return view


def _verdict(health: TargetHealth) -> TargetVerdict:
    """The health book's view of one target, as routing reads it."""
    if health.trial_available:
        return TargetVerdict(status="trial", reason=health.reason)
    status: VerdictStatus = "unhealthy" if health.status == "unhealthy" else "degraded"
    return TargetVerdict(status=status, reason=health.reason)
