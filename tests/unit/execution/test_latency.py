"""Observed latency: moving averages per target, streams and whole answers apart."""

from __future__ import annotations

import pytest

from gw.execution.latency import ALPHA, LatencyBook


def test_the_first_observation_is_the_average_then_it_moves_by_alpha() -> None:
    book = LatencyBook()
    book.record("a/m", 100.0, streaming=False)
    assert book.view(streaming=False) == {"a/m": 100.0}
    book.record("a/m", 200.0, streaming=False)
    assert book.view(streaming=False)["a/m"] == pytest.approx(100.0 + ALPHA * 100.0)


def test_first_tokens_and_whole_answers_are_kept_apart() -> None:
    book = LatencyBook()
    book.record("a/m", 30.0, streaming=True)
    book.record("a/m", 900.0, streaming=False)
    assert book.view(streaming=True) == {"a/m": 30.0}
    assert book.view(streaming=False) == {"a/m": 900.0}
