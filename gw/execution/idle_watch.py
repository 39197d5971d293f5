"""Bound each wait for the next stream event without a timer per event.

``asyncio.timeout`` around every read arms and cancels a loop timer per chunk, a
measurable share of a stream's CPU. Here one timer follows the stream: it fires at most
once per budget, and re-arms itself when a wait it finds is younger than the budget.
"""

from __future__ import annotations

import asyncio


class IdleWatch:
    """Cancel ``task`` when one wait (``begin`` .. ``end``) outlasts its budget."""

    def __init__(self, task: asyncio.Task[object]) -> None:
        self._task = task
        self._loop = task.get_loop()
        self._timer: asyncio.TimerHandle | None = None
        self._since: float | None = None  # loop time the current wait began; None: no wait
        self._budget = 0.0
        self.fired = False  # True once this watch cancelled the task

    def begin(self, budget: float) -> None:
        self._since = self._loop.time()
        self._budget = budget
        if self._timer is None:
            self._timer = self._loop.call_at(self._since + budget, self._check)

    def end(self) -> None:
        self._since = None

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _check(self) -> None:
        self._timer = None
        if self._since is None:
            return  # no wait now; the next begin() arms a timer
        due = self._since + self._budget
        if self._loop.time() >= due:
            self.fired = True
            self._task.cancel()
        else:
            self._timer = self._loop.call_at(due, self._check)
