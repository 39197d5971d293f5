"""WriterThread: one daemon thread for blocking writes to a stream that may block forever.

A stderr nobody reads (a terminal paused with Ctrl-S, ``gw serve 2>&1 | less`` paused, a
blocking log driver) blocks ``write`` without end. Such a write must never run on the event
loop, nor on asyncio's default executor: ``asyncio.run`` waits for that executor's threads
without a timeout when it ends, so one stuck write would hold gw's exit. A daemon thread of
its own is waited for only as long as a caller chooses, and never holds the process's exit.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import queue
import threading
from collections.abc import Callable

Job = tuple[Callable[[], None], concurrent.futures.Future[None]]


class WriterThread:
    """Runs the blocking work handed to ``run`` in order, in one daemon thread."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._jobs: queue.SimpleQueue[Job | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    async def run(self, work: Callable[[], None]) -> None:
        """Run ``work`` in the thread and wait for it; its exception is raised here.
        Cancelling the wait does not stop work already running (it may be stuck)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._serve, name=self._name, daemon=True)
            self._thread.start()
        future: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._jobs.put((work, future))
        await asyncio.wrap_future(future)

    def close(self) -> None:
        """Let the thread end once it is done with what it was given; never waits for it."""
        if self._thread is not None:
            self._jobs.put(None)
            self._thread = None

    def _serve(self) -> None:
        while (job := self._jobs.get()) is not None:
            work, future = job
            if not future.set_running_or_notify_cancel():
                continue  # its waiter gave up before it started
            try:
                work()
            except Exception as exc:  # noqa: BLE001 -- handed to the waiting coroutine, which counts it
                future.set_exception(exc)
            else:
                future.set_result(None)
