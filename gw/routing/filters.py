"""Filters: which route targets can serve a request, and why the others cannot.

Each target becomes a ``Candidate``; the filters run in this order and the first that
fails records its reason and a human ``detail`` on the candidate:

0. ``native_tools``: the request needs tools its client's provider runs (Anthropic's web
   search, ...; ``ChatRequest.native_tools`` when ``needs.required_native_format`` says
   they are required) and the target's provider kind does not take that format
   (``gw.config.wire_formats``). It overrides the others, as the one no catalog entry can
   change; it costs nothing when the request has no such tools.
1. ``missing_capability``: the catalog entry lacks a capability the request needs.
2. ``context_window``: estimated input + max output tokens exceed the known window
   (for embeddings: the largest single input, ``window_tokens``, as each is embedded alone).
3. ``cost_ceiling``: the projected cost is above ``limits.max_cost_per_request_usd``.

A target with no catalog entry is treated as capable, with an unknown window and price:
it passes every filter and the decision notes that. An unknown price is never rejected.

The projected cost is ``input_estimate * input_per_mtok / 1e6 + projected_output *
output_per_mtok / 1e6``, where ``projected_output`` is the request's max output tokens or,
when it sets none, ``PROJECTED_OUTPUT_TOKENS`` (1024), a typical chat answer: enough to
rank targets by price without pretending to know the answer's length.

Relaxation (invariant 11): when the cost ceiling alone would leave no candidate, the
targets it rejected are kept (``relaxed=True``) and the screening is ``degraded``.
Capability, native-tool and context-window rejections are never relaxed: such a call
cannot succeed.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from gw.config.schema import Capability, ModelEntry
from gw.ir import NativeBlock
from gw.routing.decision import Candidate, RejectReason
from gw.routing.health import HealthView
from gw.routing.needs import native_tool_names
from gw.routing.plan import PlannedTarget

PROJECTED_OUTPUT_TOKENS = 1024
_KEPT: tuple[None, None] = (None, None)  # what _rejection returns for a target that passes


class Screening(msgspec.Struct, frozen=True, kw_only=True):
    """Kept and rejected candidates, each in config order, with notes and relaxations."""

    kept: tuple[Candidate, ...]
    rejected: tuple[Candidate, ...]
    notes: tuple[str, ...] = ()
    degraded_reasons: tuple[str, ...] = ()


def screen_targets(
    targets: Sequence[PlannedTarget],
    *,
    needs: frozenset[Capability],
    input_tokens: int,
    max_output_tokens: int | None,
    max_cost_usd: float | None,
    window_tokens: int | None = None,
    health: HealthView | None = None,
    priority_ranks: Sequence[int] | None = None,
    native_tools: tuple[NativeBlock, ...] = (),
    unpriced_allowed: bool = False,
) -> Screening:
    """Run every filter over ``targets``; when nothing is left, relax health first, then
    the cost ceiling (invariant 11).

    ``window_tokens`` is what must fit the context window, when not ``input_tokens``.
    ``priority_ranks`` (one per target): kept candidates get that rank and their priority
    as score, which is the priority strategy's ranking when every target is kept (the
    router checks; otherwise ranking overwrites both). ``native_tools``: the provider-side
    tools the request needs (one client's, so of one format); empty when none is needed.
    Under a cost ceiling a target with no catalog price cannot be held to it: it is
    rejected (``cost_ceiling``, relaxable like any), unless ``unpriced_allowed`` (the
    policy's ``limits.unpriced: allow``), which keeps it with a note.
    """
    window_input = input_tokens if window_tokens is None else window_tokens
    # What a passing target must satisfy, worked out once (this loop runs per request).
    window_needed = window_input + (max_output_tokens or 0)
    output_tokens = PROJECTED_OUTPUT_TOKENS if max_output_tokens is None else max_output_tokens
    native = native_tools[0].format if native_tools else None
    kept: list[Candidate] = []
    rejected: list[Candidate] = []
    notes: list[str] = []
    for index, planned in enumerate(targets):
        target, entry = planned.target, planned.entry
        reason: RejectReason | None = None
        detail: str | None = None
        if entry is None:
            notes.append(f"no catalog entry for {planned.key}; capabilities and price unknown")
            cost = None
            reason, detail = _unpriced_rule(planned.key, max_cost_usd, unpriced_allowed, notes)
        else:
            # projected_cost_usd, inlined; the same expression, so the same float.
            cost = (
                input_tokens * entry.input_per_mtok / 1e6
                + output_tokens * entry.output_per_mtok / 1e6
            )
            window = entry.context_window
            if (
                (needs and not needs.issubset(entry.capabilities))
                or (window is not None and window_needed > window)
                or (max_cost_usd is not None and cost > max_cost_usd)
            ):
                reason, detail = _rejection(
                    entry,
                    needs=needs,
                    input_tokens=window_input,
                    max_output_tokens=max_output_tokens,
                    cost=cost,
                    max_cost_usd=max_cost_usd,
                )
        if native is not None and planned.native_format != native:
            reason, detail = "native_tools", native_tools_detail(native_tools)
        if planned.switched_off is not None:
            reason, detail = "switched_off", planned.switched_off
        if health:
            verdict = health.get(planned.key)
            if verdict is not None:
                if verdict.status == "unhealthy" and reason in (None, "cost_ceiling"):
                    reason, detail = "unhealthy", verdict.reason
                elif verdict.status == "degraded" and reason is None:
                    notes.append(f"{planned.key} ordered last: {verdict.reason}")
        ranked = priority_ranks is not None and reason is None
        candidate = Candidate(
            provider=target.provider,
            model=target.model,
            priority=target.priority,
            weight=target.weight,
            estimated_cost_usd=cost,
            score=float(target.priority) if ranked else None,
            rank=priority_ranks[index] if ranked else None,  # type: ignore[index]
            rejected=reason,
            detail=detail,
        )
        (kept if reason is None else rejected).append(candidate)
    if not kept and any(c.rejected == "unhealthy" for c in rejected):
        return _relax_health(rejected, notes)
    if not kept and max_cost_usd is not None:
        return _relax_cost_ceiling(rejected, notes, max_cost_usd)
    return Screening(kept=tuple(kept), rejected=tuple(rejected), notes=tuple(notes))


def _unpriced_rule(
    key: str, max_cost_usd: float | None, allowed: bool, notes: list[str]
) -> tuple[RejectReason, str] | tuple[None, None]:
    """A target with no price under a cost ceiling: rejected, or kept with a note."""
    if max_cost_usd is None:
        return _KEPT
    if allowed:
        notes.append(f"{key} has no price: allowed by limits.unpriced: allow")
        return _KEPT
    return "cost_ceiling", (
        f"no known price, so the {format_usd(max_cost_usd)} ceiling cannot hold it; price it "
        "under models, or set the policy's limits.unpriced: allow"
    )


def native_tools_detail(tools: tuple[NativeBlock, ...]) -> str:
    """Why a target cannot take ``tools``: their types, and the provider kind that can."""
    fmt = tools[0].format
    return (
        f"cannot run {', '.join(native_tool_names(tools))} ({fmt} tools, run by the "
        f"provider): only a kind: {fmt} provider can"
    )


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
    entry: ModelEntry,
    *,
    needs: frozenset[Capability],
    input_tokens: int,
    max_output_tokens: int | None,
    cost: float | None,
    max_cost_usd: float | None,
) -> tuple[RejectReason, str] | tuple[None, None]:
    """The first filter ``entry`` fails, with its detail; ``_KEPT`` when it passes them all."""
    if needs and not needs.issubset(entry.capabilities):
        missing = sorted(needs.difference(entry.capabilities))
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
    return _KEPT


def _relax_health(rejected: list[Candidate], notes: list[str]) -> Screening:
    relaxed = tuple(
        msgspec.structs.replace(
            c, rejected=None, relaxed=True, detail=f"unhealthy ({c.detail}); kept: no other target"
        )
        for c in rejected
        if c.rejected == "unhealthy"
    )
    return Screening(
        kept=relaxed,
        rejected=tuple(c for c in rejected if c.rejected != "unhealthy"),
        notes=tuple(notes),
        degraded_reasons=("every eligible target is unhealthy: kept, as its breaker allows",),
    )


def _relax_cost_ceiling(
    rejected: list[Candidate], notes: list[str], max_cost_usd: float
) -> Screening:
    relaxed = tuple(
        msgspec.structs.replace(
            c, rejected=None, relaxed=True, detail=f"{c.detail}; kept: no target fits"
        )
        for c in rejected
        if c.rejected == "cost_ceiling"
    )
    if not relaxed:
        return Screening(kept=(), rejected=tuple(rejected), notes=tuple(notes))
    return Screening(
        kept=relaxed,
        rejected=tuple(c for c in rejected if c.rejected != "cost_ceiling"),
        notes=tuple(notes),
        degraded_reasons=(f"cost ceiling {format_usd(max_cost_usd)} relaxed: no target fits",),
    )
