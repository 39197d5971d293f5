"""Routing hints from request headers: ``x-gw-strategy``, ``x-gw-max-cost-usd``,
``x-gw-provider``, ``x-gw-session-id``. A bad value is a 400 ``invalid_request`` naming
the header."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import get_args

from gw.config.schema import Strategy
from gw.errors import InvalidRequestError
from gw.routing.hints import RoutingHints

_STRATEGIES: frozenset[str] = frozenset(get_args(Strategy))
HINT_HEADERS = ("x-gw-strategy", "x-gw-max-cost-usd", "x-gw-provider", "x-gw-session-id")


def parse_hints(headers: Mapping[str, str]) -> RoutingHints | None:
    """The hints ``headers`` carry, or ``None`` when there are none (the common case)."""
    strategy, max_cost, provider, session = (headers.get(name) for name in HINT_HEADERS)
    if strategy is None and max_cost is None and provider is None and session is None:
        return None
    if strategy is not None and strategy not in _STRATEGIES:
        raise InvalidRequestError(
            f"x-gw-strategy must be one of {', '.join(sorted(_STRATEGIES))}",
            param="x-gw-strategy",
        )
    return RoutingHints(
        strategy=strategy,  # type: ignore[arg-type]  # checked against Strategy above
        max_cost_usd=None if max_cost is None else _usd(max_cost),
        provider=provider.strip() or None if provider is not None else None,
        session=session.strip() or None if session is not None else None,
    )


def _usd(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise InvalidRequestError(
            "x-gw-max-cost-usd must be a non-negative number of US dollars, e.g. 0.05",
            param="x-gw-max-cost-usd",
        )
    return value
