"""Observed latency per target, for the ``lowest_latency`` strategy: exponential moving
averages of time to first token (streams) and of total time (whole answers), apart,
because a stream's first token and a whole answer's end are not comparable.

Only successful attempts count; a latency ranks targets and never cuts a request.
"""

from __future__ import annotations

from collections.abc import Mapping

ALPHA = 0.2  # weight of the newest observation: about the last ten calls matter


class LatencyBook:
    def __init__(self) -> None:
        self._first_token: dict[str, float] = {}
        self._whole: dict[str, float] = {}

    def record(self, key: str, ms: float, *, streaming: bool) -> None:
        averages = self._first_token if streaming else self._whole
        old = averages.get(key)
        averages[key] = ms if old is None else old + ALPHA * (ms - old)

    def view(self, *, streaming: bool) -> Mapping[str, float]:
        """Milliseconds by ``provider/model``; the live mapping, which routing only reads."""
        return self._first_token if streaming else self._whole
