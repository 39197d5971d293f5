"""The breaker sharing of a gateway alone (no ``state.redis_url``): nothing to share.

Its breakers are this process's own, decided as before a fleet existed: every half-open
trial the health book offers is this gateway's to send.
"""

from __future__ import annotations

from typing import Final

from gw.ports import BreakerShare, TrialClaim


class LocalBreakers:
    """``BreakerShare`` for one gateway: shares nothing, wins every trial."""

    def opened(self, key: str, *, cooldown: float, openings: int, cause: str) -> None:
        del key, cooldown, openings, cause

    def closed(self, key: str) -> None:
        del key

    def claim_trial(self, key: str, *, ttl: float) -> TrialClaim:
        del key, ttl
        return "won"


LOCAL_BREAKERS: Final[BreakerShare] = LocalBreakers()
