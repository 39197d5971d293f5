"""Routing hints a request may carry (HTTP headers): they can only narrow what policy allows.

- ``strategy`` (``x-gw-strategy``) orders the same candidates another way;
- ``max_cost_usd`` (``x-gw-max-cost-usd``) lowers the policy's cost ceiling, never raises it;
- ``provider`` (``x-gw-provider``) keeps only the route's targets on that provider;
- ``session`` (``x-gw-session-id``) names the conversation for sticky sessions, when its
  policy has them (gw/execution/sticky_sessions.py): it orders, never widens.
"""

from __future__ import annotations

import msgspec

from gw.config.schema import Strategy


class RoutingHints(msgspec.Struct, frozen=True, kw_only=True):
    strategy: Strategy | None = None
    max_cost_usd: float | None = None
    provider: str | None = None
    session: str | None = None
