"""How many output tokens one target is asked for (DESIGN.md invariant 7).

Routing has clamped the client's ``max_tokens`` to the policy's ``limits.max_output_tokens``
(for every target alike). Here each target's catalog ``max_output_tokens`` clamps it
further, since a provider refuses a request for more than its model can produce; the
attempt's notes say so. A request with no limit keeps none, but the adapter of a provider
that requires one (Anthropic) learns the ceiling, so its default stays under it.
"""

from __future__ import annotations

import msgspec

from gw.config.schema import ModelEntry


class OutputLimit(msgspec.Struct, frozen=True):
    max_tokens: int | None  # what the request asks for, as sent; None: no limit
    ceiling: int | None  # the most this target may be asked for; None: no ceiling
    notes: tuple[str, ...] = ()


def output_limit(
    max_tokens: int | None, policy_ceiling: int | None, entry: ModelEntry | None, target: str
) -> OutputLimit:
    """``max_tokens`` as routing settled it, for ``target`` with its catalog ``entry``."""
    model_ceiling = entry.max_output_tokens if entry is not None else None
    if model_ceiling is None:
        return OutputLimit(max_tokens, policy_ceiling)
    ceiling = model_ceiling if policy_ceiling is None else min(policy_ceiling, model_ceiling)
    if max_tokens is None or max_tokens <= model_ceiling:
        return OutputLimit(max_tokens, ceiling)
    note = f"max_tokens {max_tokens} clamped to {target}'s max_output_tokens {model_ceiling}"
    return OutputLimit(model_ceiling, ceiling, (note,))
