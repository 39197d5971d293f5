"""Retries to one target, bounded by a share of its live traffic (as Finagle and Envoy do).

``max_attempts`` bounds one request; it cannot stop 200 requests to an upstream that is
down from making 400 calls. The budget does: per target (``provider/model``), the retries
of the last ``window`` may be at most ``ratio`` of its calls in that time plus
``min_retries`` (so a quiet target can still retry a stray failure). A retry the budget
refuses is not made: the request falls back to the next target, or fails, at once.

Counted in fixed buckets (a tenth of the window each), so memory is bounded per target;
``retain`` forgets targets no longer in config. No I/O, no clock of its own: every method
takes ``now`` (monotonic seconds). Synchronous, so atomic under asyncio.
"""

from __future__ import annotations

from collections.abc import Iterable

from gw.config.schema import RetryBudgetConfig

_BUCKETS = 10
MAX_TARGETS = 10_000


class _Counts:
    __slots__ = ("calls", "retries", "starts")

    def __init__(self) -> None:
        self.starts = [0.0] * _BUCKETS  # each bucket's start; a stale bucket is reset
        self.calls = [0] * _BUCKETS
        self.retries = [0] * _BUCKETS


class RetryBudget:
    def __init__(self, config: RetryBudgetConfig) -> None:
        self._config = config
        self._targets: dict[str, _Counts] = {}

    def reconfigure(self, config: RetryBudgetConfig) -> None:
        self._config = config

    def retain(self, keys: Iterable[str]) -> None:
        kept = set(keys)
        for key in [k for k in self._targets if k not in kept]:
            del self._targets[key]

    def record_call(self, key: str, *, now: float) -> None:
        """A first call of a request to ``key`` (not a retry): it adds to the budget."""
        counts, index = self._bucket(key, now)
        counts.calls[index] += 1

    def try_retry(self, key: str, *, now: float) -> bool:
        """True, and the retry is counted, when the budget of ``key`` allows one more."""
        counts, index = self._bucket(key, now)
        horizon = now - self._config.window.seconds
        live = [i for i in range(_BUCKETS) if counts.starts[i] > horizon]
        calls = sum(counts.calls[i] for i in live)
        retries = sum(counts.retries[i] for i in live)
        if retries >= self._config.ratio * calls + self._config.min_retries:
            return False
        counts.retries[index] += 1
        return True

    def _bucket(self, key: str, now: float) -> tuple[_Counts, int]:
        counts = self._targets.get(key)
        if counts is None:
            if len(self._targets) >= MAX_TARGETS:
                del self._targets[next(iter(self._targets))]
            counts = self._targets[key] = _Counts()
        width = self._config.window.seconds / _BUCKETS
        slot = int(now // width)
        index = slot % _BUCKETS
        start = slot * width
        if counts.starts[index] != start:  # the bucket last held an older slot: reuse it
            counts.starts[index] = start
            counts.calls[index] = 0
            counts.retries[index] = 0
        return counts, index
