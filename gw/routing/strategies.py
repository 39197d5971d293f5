"""Strategies: how the candidates that passed the filters are ordered into the chain.

Each ``rank_by_*`` function takes candidates in config order and returns a ``Ranking``:
the kept candidates in chain order, each with ``rank`` 0..n-1 and ``score`` set to what it
was ranked by, in the strategy's own unit:

- ``priority``: the target's priority number, ascending; ties keep config order.
- ``weighted``: the Efraimidis-Spirakis key ``u ** (1 / weight)``, descending, where ``u``
  in (0, 1) comes from sha256 of the request id and the target key, so a retry or a replay
  with the same request id gets the same order (invariant 4). Targets of weight 0 are
  rejected (``zero_weight``) unless every candidate has weight 0, then all count equally.
- ``lowest_cost``: projected cost in USD, ascending; unknown price last, then priority.
- ``highest_quality``: the catalog's ``quality``, descending; unknown last, then priority.
- ``lowest_latency``: observed latency in ms, ascending; unmeasured targets first, by
  priority, so a target never tried gets measured.

A value the strategy could not know (price, quality, latency) leaves ``score`` as ``None``.
Sorting is stable everywhere, so config order is the final tie-break.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from operator import attrgetter, itemgetter

import msgspec

from gw.config.schema import Strategy
from gw.routing.decision import Candidate

NO_LATENCY_NOTE = "no latency observed yet; ordered by priority"


class Ranking(msgspec.Struct, frozen=True, kw_only=True):
    """Candidates in chain order, those the strategy itself rejected, and what it noted."""

    ranked: tuple[Candidate, ...]
    rejected: tuple[Candidate, ...] = ()
    notes: tuple[str, ...] = ()


def rank(
    strategy: Strategy,
    candidates: Sequence[Candidate],
    *,
    request_id: str,
    quality: Mapping[str, float] | None = None,
    latency_ms: Mapping[str, float] | None = None,
) -> Ranking:
    """Order ``candidates`` by ``strategy``; views keyed by ``provider/model``."""
    match strategy:
        case "priority":
            return rank_by_priority(candidates)
        case "weighted":
            return rank_by_weight(candidates, request_id=request_id)
        case "lowest_cost":
            return rank_by_cost(candidates)
        case "highest_quality":
            return rank_by_quality(candidates, quality or {})
        case "lowest_latency":
            return rank_by_latency(candidates, latency_ms or {})


def rank_by_priority(candidates: Sequence[Candidate]) -> Ranking:
    # The priority is both the sort key and the score, so no (key, score) pairs to build.
    ordered = sorted(candidates, key=attrgetter("priority"))
    return Ranking(
        ranked=tuple(
            [
                msgspec.structs.replace(c, score=float(c.priority), rank=position)
                for position, c in enumerate(ordered)
            ]
        )
    )


def rank_by_weight(candidates: Sequence[Candidate], *, request_id: str) -> Ranking:
    positive = [c for c in candidates if c.weight > 0]
    rejected: tuple[Candidate, ...] = ()
    notes: tuple[str, ...] = ()
    if positive:
        rejected = tuple(
            msgspec.structs.replace(
                c, rejected="zero_weight", detail="weight 0: the weighted strategy never picks it"
            )
            for c in candidates
            if not c.weight > 0
        )
        weights = [(c, c.weight) for c in positive]
    else:
        notes = ("every remaining target has weight 0; all picked with equal chance",)
        weights = [(c, 1.0) for c in candidates]
    scored = []
    for candidate, weight in weights:
        u = uniform(request_id, _key(candidate))
        # log(u) / w orders exactly like u ** (1 / w) but does not underflow to 0 for
        # small weights, so near-zero keys still sort by their true value.
        scored.append(((-math.log(u) / weight,), u ** (1.0 / weight), candidate))
    return Ranking(ranked=_ranked(scored), rejected=rejected, notes=notes)


def rank_by_cost(candidates: Sequence[Candidate]) -> Ranking:
    scored = [
        (
            _unknown_last(c.estimated_cost_usd, c.priority),
            c.estimated_cost_usd,
            c,
        )
        for c in candidates
    ]
    return Ranking(ranked=_ranked(scored))


def rank_by_quality(candidates: Sequence[Candidate], quality: Mapping[str, float]) -> Ranking:
    scored = []
    for c in candidates:
        value = quality.get(_key(c))
        key = _unknown_last(None if value is None else -value, c.priority)
        scored.append((key, value, c))
    return Ranking(ranked=_ranked(scored))


def rank_by_latency(candidates: Sequence[Candidate], latency_ms: Mapping[str, float]) -> Ranking:
    scored = []
    unmeasured = []
    for c in candidates:
        value = latency_ms.get(_key(c))
        if value is None:
            unmeasured.append(_key(c))
        # Unmeasured first (by priority): otherwise a target never tried would never be
        # measured, and traffic could never move to it however fast it is.
        key = (0, 0.0, c.priority) if value is None else (1, value, c.priority)
        scored.append((key, value, c))
    notes: tuple[str, ...] = ()
    if candidates and len(unmeasured) == len(candidates):
        notes = (NO_LATENCY_NOTE,)
    elif unmeasured:
        notes = (
            f"no latency observed yet for {', '.join(unmeasured)}; "
            "tried first, by priority, to measure it",
        )
    return Ranking(ranked=_ranked(scored), notes=notes)


def uniform(request_id: str, target: str) -> float:
    """A number in the open interval (0, 1), fixed by the request id and target key."""
    # A NUL separator keeps ("ab", "c/d") and ("a", "bc/d") apart.
    digest = hashlib.sha256(f"{request_id}\0{target}".encode()).digest()
    # 53 bits fill a double's mantissa exactly; the +0.5 keeps both 0 and 1 out.
    return ((int.from_bytes(digest[:8], "big") >> 11) + 0.5) / 2.0**53


def _unknown_last(value: float | None, priority: int) -> tuple[float, ...]:
    return (1, 0.0, priority) if value is None else (0, value, priority)


def _ranked(
    scored: Sequence[tuple[tuple[float, ...], float | None, Candidate]],
) -> tuple[Candidate, ...]:
    ordered = sorted(scored, key=itemgetter(0))
    return tuple(
        [
            msgspec.structs.replace(candidate, score=score, rank=position)
            for position, (_, score, candidate) in enumerate(ordered)
        ]
    )


def _key(candidate: Candidate) -> str:
    return f"{candidate.provider}/{candidate.model}"
