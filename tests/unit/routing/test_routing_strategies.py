"""Each strategy's order, score and rank, on candidates built directly."""

from __future__ import annotations

import pytest

from gw.routing.decision import Candidate
from gw.routing.strategies import (
    NO_LATENCY_NOTE,
    rank,
    rank_by_cost,
    rank_by_latency,
    rank_by_priority,
    rank_by_quality,
    rank_by_weight,
    uniform,
)


def candidate(
    name: str, *, priority: int = 1, weight: float = 1.0, cost: float | None = None
) -> Candidate:
    provider, model = name.split("/")
    return Candidate(
        provider=provider, model=model, priority=priority, weight=weight, estimated_cost_usd=cost
    )


def names(candidates: tuple[Candidate, ...]) -> list[str]:
    return [f"{c.provider}/{c.model}" for c in candidates]


def test_priority_ascending_then_config_order() -> None:
    ranking = rank_by_priority(
        [candidate("p/c", priority=2), candidate("p/a", priority=1), candidate("p/b", priority=1)]
    )
    assert names(ranking.ranked) == ["p/a", "p/b", "p/c"]
    assert [c.rank for c in ranking.ranked] == [0, 1, 2]
    assert [c.score for c in ranking.ranked] == [1.0, 1.0, 2.0]


def test_lowest_cost_puts_unknown_price_last_then_priority() -> None:
    ranking = rank_by_cost(
        [
            candidate("p/unknown-late", priority=2),
            candidate("p/unknown-early", priority=1),
            candidate("p/dear", cost=0.02),
            candidate("p/cheap", cost=0.001),
            candidate("p/free-late", cost=0.0, priority=3),
            candidate("p/free", cost=0.0, priority=2),
        ]
    )
    assert names(ranking.ranked) == [
        "p/free",
        "p/free-late",
        "p/cheap",
        "p/dear",
        "p/unknown-early",
        "p/unknown-late",
    ]
    assert [c.score for c in ranking.ranked] == [0.0, 0.0, 0.001, 0.02, None, None]


def test_highest_quality_descending_unknown_last() -> None:
    ranking = rank_by_quality(
        [candidate("p/none"), candidate("p/ok"), candidate("p/best"), candidate("p/also-ok")],
        {"p/ok": 0.5, "p/best": 0.9, "p/also-ok": 0.5},
    )
    assert names(ranking.ranked) == ["p/best", "p/ok", "p/also-ok", "p/none"]
    assert [c.score for c in ranking.ranked] == [0.9, 0.5, 0.5, None]


def test_lowest_latency_with_no_observations_is_priority_order() -> None:
    ranking = rank_by_latency([candidate("p/b", priority=2), candidate("p/a", priority=1)], {})
    assert names(ranking.ranked) == ["p/a", "p/b"]
    assert ranking.notes == (NO_LATENCY_NOTE,)
    assert NO_LATENCY_NOTE == "no latency observed yet; ordered by priority"


def test_lowest_latency_tries_the_unmeasured_first_then_the_fastest() -> None:
    ranking = rank_by_latency(
        [candidate("p/slow"), candidate("p/unmeasured", priority=3), candidate("p/fast")],
        {"p/slow": 900.0, "p/fast": 120.0},
    )
    assert names(ranking.ranked) == ["p/unmeasured", "p/fast", "p/slow"]
    assert [c.score for c in ranking.ranked] == [None, 120.0, 900.0]
    assert ranking.notes == (
        "no latency observed yet for p/unmeasured; tried first, by priority, to measure it",
    )


def test_weighted_is_fixed_by_the_request_id() -> None:
    targets = [candidate(f"p/m{i}", weight=float(i + 1)) for i in range(5)]
    first = rank_by_weight(targets, request_id="req-1")
    assert rank_by_weight(targets, request_id="req-1") == first
    orders = {tuple(names(rank_by_weight(targets, request_id=f"r{i}").ranked)) for i in range(50)}
    assert len(orders) > 1
    scores = [c.score for c in first.ranked if c.score is not None]
    assert len(scores) == len(targets)
    assert all(0 < score < 1 for score in scores)
    assert scores == sorted(scores, reverse=True)


def test_weighted_rejects_zero_weights() -> None:
    ranking = rank_by_weight(
        [candidate("p/zero", weight=0.0), candidate("p/one")], request_id="req"
    )
    assert names(ranking.ranked) == ["p/one"]
    (rejected,) = ranking.rejected
    assert rejected.rejected == "zero_weight"
    assert rejected.rank is None
    assert rejected.detail


def test_weighted_all_zero_keeps_everything_with_equal_chance() -> None:
    ranking = rank_by_weight(
        [candidate("p/a", weight=0.0), candidate("p/b", weight=0.0)], request_id="req"
    )
    assert sorted(names(ranking.ranked)) == ["p/a", "p/b"]
    assert ranking.rejected == ()
    assert ranking.notes


def test_uniform_is_strictly_inside_the_unit_interval() -> None:
    values = [uniform(f"req-{i}", "p/m") for i in range(1000)]
    assert all(0.0 < value < 1.0 for value in values)
    assert uniform("ab", "c/d") != uniform("a", "bc/d")


@pytest.mark.parametrize(
    ("weights", "expected"),
    [
        ((1.0, 1.0), (0.5, 0.5)),
        ((1.0, 3.0), (0.25, 0.75)),
        ((1.0, 2.0, 7.0), (0.1, 0.2, 0.7)),
        ((0.01, 0.99), (0.01, 0.99)),
    ],
)
def test_weighted_first_pick_follows_weights(
    weights: tuple[float, ...], expected: tuple[float, ...]
) -> None:
    # Deterministic: the same 2000 ids always hash the same, so this cannot flake.
    targets = [candidate(f"p/m{i}", weight=weight) for i, weight in enumerate(weights)]
    ids = [f"req-{n:05d}" for n in range(2000)]
    firsts = [rank_by_weight(targets, request_id=i).ranked[0].model for i in ids]
    for index, share in enumerate(expected):
        observed = firsts.count(f"m{index}") / len(ids)
        assert abs(observed - share) < 0.04, (weights, index, observed)


def test_rank_dispatches_every_strategy() -> None:
    targets = [candidate("p/a", priority=2, cost=0.1), candidate("p/b", priority=1, cost=0.2)]
    assert names(rank("priority", targets, request_id="r").ranked) == ["p/b", "p/a"]
    assert names(rank("lowest_cost", targets, request_id="r").ranked) == ["p/a", "p/b"]
    quality = {"p/a": 0.9}
    assert names(rank("highest_quality", targets, request_id="r", quality=quality).ranked) == [
        "p/a",
        "p/b",
    ]
    assert names(rank("lowest_latency", targets, request_id="r").ranked) == ["p/b", "p/a"]
    assert len(rank("weighted", targets, request_id="r").ranked) == 2
