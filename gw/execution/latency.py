"""Observed latency per target, for the ``lowest_latency`` strategy: exponential moving
averages of time to first token (streams) and of total time (whole answers), apart,
because a stream's first token and a whole answer's end are not comparable.

Only successful attempts count; a latency ranks targets and never cuts a request.
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

ALPHA = 0.2  # weight of the newest observation: about the last ten calls matter


class LatencyAverage(msgspec.Struct, frozen=True, kw_only=True):
    """One target's averages (``None``: no such call yet) and how many calls fed them."""

    total_ms: float | None
    ttft_ms: float | None
    samples: int


class LatencyBook:
    def __init__(self) -> None:
        self._first_token: dict[str, float] = {}
        self._whole: dict[str, float] = {}
        self._samples: dict[str, int] = {}

    def record(self, key: str, ms: float, *, streaming: bool) -> None:
        averages = self._first_token if streaming else self._whole
        old = averages.get(key)
        averages[key] = ms if old is None else old + ALPHA * (ms - old)
        self._samples[key] = self._samples.get(key, 0) + 1

    def averages(self) -> dict[str, LatencyAverage]:
        """Every target's averages by ``provider/model`` (for ``gw health``)."""
        return {
            key: LatencyAverage(
                total_ms=self._whole.get(key), ttft_ms=self._first_token.get(key), samples=count
            )
            for key, count in self._samples.items()
        }

    def view(self, *, streaming: bool) -> Mapping[str, float]:
        """Milliseconds by ``provider/model``; the live mapping, which routing only reads."""
        return self._first_token if streaming else self._whole
