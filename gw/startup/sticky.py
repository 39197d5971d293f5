"""The sticky sessions a starting gateway keeps (``policies[].sticky``): its pins in this
process, or the fleet's in Redis with ``state.redis_url``; session keys digested under a
key derived from the vault identity, so every gateway sharing the vault key agrees."""

from __future__ import annotations

import hashlib
from typing import Final

from gw.execution.sticky_sessions import LocalSessionPins, StickySessions
from gw.ports import Clock, SessionPins
from gw.startup.plan import ServePlan
from gw.vault.content_seal import ContentSeal

DIGEST_KEY_LABEL: Final = b"gw sticky session key v1\x00"


def sticky_sessions(plan: ServePlan, seal: ContentSeal, clock: Clock) -> StickySessions:
    url = plan.config.state.redis_url
    pins: SessionPins
    if url is None:
        pins = LocalSessionPins(clock)
    else:
        from gw.fleet.redis_sessions import RedisSessionPins  # noqa: PLC0415 - redis only when used

        pins = RedisSessionPins(url)

    def secret() -> bytes:
        identity = seal.identity().secret_text().encode()
        return hashlib.sha256(DIGEST_KEY_LABEL + identity).digest()

    return StickySessions(pins, secret)
