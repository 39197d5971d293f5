"""What a request cost, from the catalog's prices and the usage: one number everywhere.

Traces, usage rows and budgets all take the cost from ``cost_usd``, so they never disagree.

How ``gw.ir.Usage`` counts (every codec fills it this way): ``input_tokens`` is the whole
prompt, of which ``cached_input_tokens`` were read from a prompt cache and
``cache_write_tokens`` written to one; ``output_tokens`` is the whole answer, of which
``reasoning_tokens`` were reasoning. So each token is billed once, at one price::

    (input - cached - cache_write) * input     + cached * cached_input
    + cache_write * cache_write                + (output - reasoning) * output
    + reasoning * reasoning

An unset cached-input or cache-write price is the input price; an unset reasoning price
is the output price (OpenAI, Anthropic and Google bill reasoning as output). A provider
that reports parts larger than their whole is clamped, never billed below zero.
"""

from __future__ import annotations

from gw.config.schema import ModelFacts
from gw.ir import Usage

PER_MILLION = 1_000_000
DIGITS = 10
"""Costs are rounded to 1e-10 USD: far below a token's price, and it keeps float noise
(0.1 + 0.2) out of sums and comparisons."""


def cost_usd(entry: ModelFacts | None, usage: Usage | None) -> float | None:
    """USD for ``usage`` at ``entry``'s prices; ``None`` when either is unknown."""
    if entry is None or usage is None:
        return None
    cached = _part(usage.cached_input_tokens, usage.input_tokens)
    cache_write = _part(usage.cache_write_tokens, usage.input_tokens - cached)
    reasoning = _part(usage.reasoning_tokens, usage.output_tokens)
    total = (
        (usage.input_tokens - cached - cache_write) * entry.input_per_mtok
        + cached * _or(entry.cached_input_per_mtok, entry.input_per_mtok)
        + cache_write * _or(entry.cache_write_per_mtok, entry.input_per_mtok)
        + (usage.output_tokens - reasoning) * entry.output_per_mtok
        + reasoning * _or(entry.reasoning_per_mtok, entry.output_per_mtok)
    ) / PER_MILLION
    return round(total, DIGITS)


def _part(part: int, whole: int) -> int:
    return max(0, min(part, whole))


def _or(price: float | None, fallback: float) -> float:
    return fallback if price is None else price
