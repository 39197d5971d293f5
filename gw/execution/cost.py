"""What a request cost, from the catalog's prices and the usage: one number everywhere."""

from __future__ import annotations

from gw.config.schema import ModelEntry
from gw.ir import Usage

PER_MILLION = 1_000_000


def cost_usd(entry: ModelEntry | None, usage: Usage | None) -> float | None:
    """USD for ``usage`` at ``entry``'s prices; ``None`` when either is unknown.

    Cached input tokens are billed at ``cached_input_per_mtok`` when the catalog has it,
    else at the input price; reasoning tokens are part of output tokens.
    """
    if entry is None or usage is None:
        return None
    cached = min(usage.cached_input_tokens, usage.input_tokens)
    cached_price = (
        entry.cached_input_per_mtok
        if entry.cached_input_per_mtok is not None
        else entry.input_per_mtok
    )
    total = (
        (usage.input_tokens - cached) * entry.input_per_mtok
        + cached * cached_price
        + usage.output_tokens * entry.output_per_mtok
    ) / PER_MILLION
    return round(total, 10)
