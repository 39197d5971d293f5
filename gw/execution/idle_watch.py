"""Bound each wait for the next stream event without a timer per event.

``asyncio.timeout`` around every read arms and cancels a loop timer per chunk, a
measurable share of a stream's CPU. Here one timer follows the stream: it fires at most
once per budget, and re-arms itself when a wait it finds is younger than the budget. A
wait's budget is the idle timeout, or what is left before the deadline if that is less;
``begin`` only notes the time, since it runs for every chunk.
"""

from __future__ import annotations

import asyncio


class IdleWatch:
    """Cancel ``task`` when one wait (``begin`` .. ``end``) lasts ``idle`` seconds, or
    runs past ``deadline`` (loop time)."""

    def __init__(self, task: asyncio.Task[object], *, idle: float, deadline: float) -> None:
        self._task = task
        self._loop = task.get_loop()
        self._idle = idle
        self._deadline = deadline
        self._timer: asyncio.TimerHandle | None = None
        self._since: float | None = None  # loop time the current wait began; None: no wait
        self.fired = False  # True once this watch cancelled the task

    @property
    def budget(self) -> float:
        """What the current wait (or the next, from now) may last, in seconds."""
        since = self._loop.time() if self._since is None else self._since
        return max(min(self._idle, self._deadline - since), 0.0)

    def begin(self) -> None:
        self._since = self._loop.time()
        if self._timer is None:
            self._timer = self._loop.call_at(self._due(self._since), self._check)

    def end(self) -> None:
        self._since = None

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _due(self, since: float) -> float:
        return min(since + self._idle, self._deadline)

    def _check(self) -> None:
        self._timer = None
        if self._since is None:
            return  # no wait now; the next begin() arms a timer
        due = self._due(self._since)
        if self._loop.time() >= due:
            self.fired = True
            self._task.cancel()
        else:
            self._timer = self._loop.call_at(due, self._check)
