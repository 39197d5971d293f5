"""The one way a test waits for something it cannot be told about: poll a condition, bounded.

A test waits on an event where one exists; where the thing happens in another process (a
server's reload, a trace written off the hot path, a file appearing), it polls ``check``
until it returns something truthy, which it returns, or fails after ``timeout`` naming
``what`` it waited for. Never a bare sleep.

``what`` may be a callable, called only on failure, so that the message can carry what was
seen last (a server's log, the last report polled). Thin domain helpers (``wait_for_job``,
``wait_for_revision``) are built on this one rather than on loops of their own.

``await_until`` is its twin for a test inside an event loop (the unit tests of background
tasks, watchers and pools): the same, polling with ``asyncio.sleep`` so that the task
being waited for runs meanwhile.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Final, TypeVar

T = TypeVar("T")
WAIT_S: Final = 30.0
POLL_S: Final = 0.05


def wait_until(
    check: Callable[[], T | None],
    what: str | Callable[[], str],
    timeout: float = WAIT_S,
    *,
    interval: float = POLL_S,
) -> T:
    """``check()``'s first truthy result, polled every ``interval`` for at most ``timeout``."""
    deadline = time.monotonic() + timeout
    while not (found := check()):
        if time.monotonic() > deadline:
            said = what() if callable(what) else what
            raise AssertionError(f"timed out waiting for {said} ({timeout:.0f} s)")
        time.sleep(interval)
    return found


async def await_until(
    check: Callable[[], T | None],
    what: str | Callable[[], str],
    timeout: float = WAIT_S,  # noqa: ASYNC109 -- the twin of wait_until, and its failure names what it awaited, which asyncio.timeout would not
    *,
    interval: float = POLL_S,
) -> T:
    """``wait_until`` inside an event loop: the loop runs other tasks between polls."""
    deadline = time.monotonic() + timeout
    while not (found := check()):
        if time.monotonic() > deadline:
            said = what() if callable(what) else what
            raise AssertionError(f"timed out waiting for {said} ({timeout:.0f} s)")
        await asyncio.sleep(interval)
    return found
