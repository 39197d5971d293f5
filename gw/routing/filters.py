"""Filters: which route targets can serve a request, and why the others cannot.

Each target becomes a ``Candidate``; the filters run in this order and the first that
fails records its reason and a human ``detail`` on the candidate:

1. ``missing_capability``: the catalog entry lacks a capability the request needs.
2. ``context_window``: estimated input + max output tokens exceed the known window.
3. ``cost_ceiling``: the projected cost is above ``limits.max_cost_per_request_usd``.

A target with no catalog entry is treated as capable, with an unknown window and price:
it passes every filter and the decision notes that. An unknown price is never rejected.

The projected cost is ``input_estimate * input_per_mtok / 1e6 + projected_output *
output_per_mtok / 1e6``, where ``projected_output`` is the request's max output tokens or,
when it sets none, ``PROJECTED_OUTPUT_TOKENS`` (1024), a typical chat answer: enough to
rank targets by price without pretending to know the answer's length.

Relaxation (invariant 11): when the cost ceiling alone would leave no candidate, the
targets it rejected are kept (``relaxed=True``) and the screening is ``degraded``.
Capability and context-window rejections are never relaxed: such a call cannot succeed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import msgspec

from gw.config.schema import Capability, ModelEntry, TargetConfig
from gw.routing.decision import Candidate, RejectReason

PROJECTED_OUTPUT_TOKENS = 1024


class Screening(msgspec.Struct, frozen=True, kw_only=True):
    """Candidates in config order (kept: ``rejected is None``), with notes and relaxations."""

    candidates: tuple[Candidate, ...]
    notes: tuple[str, ...] = ()
    degraded_reasons: tuple[str, ...] = ()


def screen_targets(
    targets: Sequence[TargetConfig],
    catalog: Mapping[tuple[str, str], ModelEntry],
    *,
    needs: frozenset[Capability],
    input_tokens: int,
    max_output_tokens: int | None,
    max_cost_usd: float | None,
) -> Screening:
    """Run every filter over ``targets`` and relax the cost ceiling if it empties the list."""
    candidates: list[Candidate] = []
    notes: list[str] = []
    for target in targets:
        entry = catalog.get((target.provider, target.model))
        if entry is None:
            notes.append(
                f"no catalog entry for {target.provider}/{target.model}; "
                "capabilities and price unknown"
            )
        cost = projected_cost_usd(entry, input_tokens, max_output_tokens)
        candidate = Candidate(
            provider=target.provider,
            model=target.model,
            priority=target.priority,
            weight=target.weight,
            estimated_cost_usd=cost,
        )
        rejection = _rejection(
            entry,
            needs=needs,
            input_tokens=input_tokens,
            max_output_tokens=max_output_tokens,
            cost=cost,
            max_cost_usd=max_cost_usd,
        )
        if rejection is not None:
            reason, detail = rejection
            candidate = msgspec.structs.replace(candidate, rejected=reason, detail=detail)
        candidates.append(candidate)
    screening = Screening(candidates=tuple(candidates), notes=tuple(notes))
    return _relax_cost_ceiling(screening, max_cost_usd)


def projected_cost_usd(
    entry: ModelEntry | None, input_tokens: int, max_output_tokens: int | None
) -> float | None:
    """What one call would cost at most (see the module docstring); ``None``: unknown."""
    if entry is None:
        return None
    output_tokens = PROJECTED_OUTPUT_TOKENS if max_output_tokens is None else max_output_tokens
    return input_tokens * entry.input_per_mtok / 1e6 + output_tokens * entry.output_per_mtok / 1e6


def format_usd(amount: float) -> str:
    """``$0.25``, ``$0.000315``: enough digits to tell small per-request costs apart."""
    text = f"{amount:.6f}".rstrip("0").rstrip(".")
    if text == "0" and amount > 0:
        text = f"{amount:.2e}"
    return f"${text}"


def _rejection(
    entry: ModelEntry | None,
    *,
    needs: frozenset[Capability],
    input_tokens: int,
    max_output_tokens: int | None,
    cost: float | None,
    max_cost_usd: float | None,
) -> tuple[RejectReason, str] | None:
    if entry is None:
        return None
    missing = sorted(needs.difference(entry.capabilities))
    if missing:
        return "missing_capability", f"lacks {', '.join(missing)}"
    window = entry.context_window
    if window is not None and input_tokens + (max_output_tokens or 0) > window:
        output = f" + {max_output_tokens} output" if max_output_tokens else ""
        return (
            "context_window",
            f"about {input_tokens} input{output} tokens exceed its {window}-token context window",
        )
    if cost is not None and max_cost_usd is not None and cost > max_cost_usd:
        return (
            "cost_ceiling",
            f"projected {format_usd(cost)} is above the {format_usd(max_cost_usd)} ceiling",
        )
    return None


def _relax_cost_ceiling(screening: Screening, max_cost_usd: float | None) -> Screening:
    candidates = screening.candidates
    if max_cost_usd is None or any(c.rejected is None for c in candidates):
        return screening
    if not any(c.rejected == "cost_ceiling" for c in candidates):
        return screening
    relaxed = tuple(
        msgspec.structs.replace(
            c, rejected=None, relaxed=True, detail=f"{c.detail}; kept: no target fits"
        )
        if c.rejected == "cost_ceiling"
        else c
        for c in candidates
    )
    reason = f"cost ceiling {format_usd(max_cost_usd)} relaxed: no target fits"
    return msgspec.structs.replace(
        screening, candidates=relaxed, degraded_reasons=(*screening.degraded_reasons, reason)
    )
