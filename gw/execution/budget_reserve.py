"""What a budget reserves for one request: an upper bound on what its call can cost.

A reservation that undershoots lets racing requests overspend: the outside run's $0.09
budget admitted seven $0.018 requests and spent 40% over, because gw's input estimate (5
tokens for "hi") was less than half of what the provider billed (11: its own framing).
So a budget reserves, for the dearest target the chain may reach:

- input: ``INPUT_MARGIN`` x gw's estimate + ``INPUT_MARGIN_TOKENS`` (the estimate counts
  about 4 characters a token; providers add framing per message and per request);
- output: the request's ``max_tokens`` (clamped to the model's catalog
  ``max_output_tokens``, as the call will be), or, when it sets none,
  ``RESERVED_OUTPUT_TOKENS`` (or the model's own maximum, if smaller).

Settling replaces the reservation with the billed cost. Racing requests therefore stay
within the budget unless a request uses more than it reserved: a prompt of more than
twice the estimate plus 64 tokens (text of under about 2 characters a token, such as CJK
or emoji, or many images), or an answer without ``max_tokens`` longer than 4,096 tokens.
The overshoot is at most that excess, summed over the requests in flight.
"""

from __future__ import annotations

import math

from gw.config.schema import ModelEntry
from gw.config.snapshot import Snapshot
from gw.routing.decision import RouteDecision

INPUT_MARGIN = 2.0
INPUT_MARGIN_TOKENS = 64
RESERVED_OUTPUT_TOKENS = 4096


def reserved_cost_usd(snapshot: Snapshot, decision: RouteDecision) -> float:
    """The reservation for ``decision`` (0 when no target in its chain is priced)."""
    input_tokens = math.ceil(decision.estimated_input_tokens * INPUT_MARGIN) + INPUT_MARGIN_TOKENS
    costs = [
        _cost(entry, input_tokens, decision.max_output_tokens)
        for target in decision.chain
        if (entry := snapshot.catalog.get((target.provider, target.model))) is not None
    ]
    return max(costs, default=0.0)


def _cost(entry: ModelEntry, input_tokens: int, max_tokens: int | None) -> float:
    output = RESERVED_OUTPUT_TOKENS if max_tokens is None else max_tokens
    if entry.max_output_tokens is not None:
        output = min(output, entry.max_output_tokens)
    return input_tokens * entry.input_per_mtok / 1e6 + output * entry.output_per_mtok / 1e6
