"""A stderr nobody reads: a real pipe, filled up, so that the next write blocks.

What a terminal paused with Ctrl-S, a paused ``gw serve 2>&1 | less`` or a blocking log
driver does to gw. ``BlockedPipe.release`` starts reading it (draining what was stuck);
used as a context manager it releases and closes on exit.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import Callable, Coroutine
from types import TracebackType
from typing import Any, Self, TextIO, TypeVar

T = TypeVar("T")


def fill(fd: int) -> None:
    """Write to ``fd`` until the pipe holds no more (the next write will block)."""
    os.set_blocking(fd, False)
    try:
        for chunk in (b"x" * 65536, b"x"):
            with contextlib.suppress(BlockingIOError):
                while True:
                    os.write(fd, chunk)
    finally:
        os.set_blocking(fd, True)


class BlockedPipe:
    """``write_fd`` and ``stream`` (text, line-buffered) write into a full pipe."""

    def __init__(self) -> None:
        self.read_fd, self.write_fd = os.pipe()
        fill(self.write_fd)
        self.stream: TextIO = os.fdopen(os.dup(self.write_fd), "w", buffering=1)
        self._reader: threading.Thread | None = None

    def release(self) -> None:
        """Read everything from now on, until the write end closes."""
        if self._reader is None:
            self._reader = threading.Thread(target=self._drain, daemon=True)
            self._reader.start()

    def _drain(self) -> None:
        while os.read(self.read_fd, 1 << 16):
            pass

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()
        with contextlib.suppress(OSError):
            self.stream.close()  # flushes whatever a released writer left in its buffer
        os.close(self.write_fd)
        if self._reader is not None:
            self._reader.join(timeout=5)
        os.close(self.read_fd)


def run_within(timeout: float, main: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """``asyncio.run(main())`` in a thread; fails if it has not returned (shutdown of the
    loop included) within ``timeout`` seconds."""
    outcome: list[T] = []
    failure: list[BaseException] = []

    def target() -> None:
        try:
            outcome.append(asyncio.run(main()))
        except BaseException as error:  # noqa: BLE001 -- re-raised in the test's thread
            failure.append(error)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout)
    assert not thread.is_alive(), f"asyncio.run did not return within {timeout}s"
    if failure:
        raise failure[0]
    return outcome[0]
