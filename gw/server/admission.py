"""Admission control: a global cap on requests in flight, with a bounded wait to get in."""

from __future__ import annotations

import asyncio

from gw.errors import OverloadedError


class Admission:
    def __init__(self, max_concurrency: int, queue_timeout: float) -> None:
        self._slots = asyncio.Semaphore(max_concurrency)
        self._queue_timeout = queue_timeout
        self.in_flight = 0
        self.waiting = 0
        self.shed = 0

    async def acquire(self) -> float:
        """Take a slot, waiting at most ``queue_timeout``; else 503 ``overloaded``.

        Returns the milliseconds spent waiting (0 when a slot was free).
        """
        if not self._slots.locked():
            await self._slots.acquire()
            self.in_flight += 1
            return 0.0
        loop = asyncio.get_running_loop()
        queued_at = loop.time()
        self.waiting += 1
        try:
            async with asyncio.timeout(self._queue_timeout):
                await self._slots.acquire()
        except TimeoutError:
            self.shed += 1
            raise OverloadedError(
                "gw is at server.max_concurrency and no slot freed up within "
                "server.queue_timeout; retry later or raise the cap"
            ) from None
        finally:
            self.waiting -= 1
        self.in_flight += 1
        return (loop.time() - queued_at) * 1000

    def release(self) -> None:
        self.in_flight -= 1
        self._slots.release()


def queue_header(queued_ms: float) -> dict[str, str]:
    """``x-gw-queue-ms``: whole milliseconds an admitted request waited for its slot."""
    return {"x-gw-queue-ms": str(round(queued_ms))}
