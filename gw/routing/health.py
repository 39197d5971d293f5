"""What routing knows of target health: a verdict per ``provider/model`` that is not healthy.

The engine's health book (gw/execution/health.py) produces it; routing stays pure:

- ``unhealthy``: the breaker is open; the target is rejected (``unhealthy``) unless every
  other one is out too, then it is kept and the decision is degraded (invariant 11); the
  gateway still calls it only as its breaker allows (gw/execution/breaker_gate.py);
- ``degraded``: recent consecutive failures; still eligible, ordered last;
- ``trial``: the breaker's cooldown has lapsed and one request may test it; eligible in
  its usual place (the gateway claims the trial or drops the target from the chain).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

import msgspec

VerdictStatus = Literal["degraded", "unhealthy", "trial"]


class TargetVerdict(msgspec.Struct, frozen=True, kw_only=True):
    status: VerdictStatus
    reason: str


HealthView = Mapping[str, TargetVerdict]
