"""ThrottledLog: a warning that repeats on every request is logged once a minute, not per request.

Telemetry errors come in floods (a full disk fails every write, a broken consumer fails
every trace): the first is logged at once, later ones of the same kind at most once per
``interval``; the caller's counters say how many there were in between. Callers pass
error *types*, never exception messages (invariant 9).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Final

ERROR_LOG_INTERVAL_S: Final = 60.0
"""After one message of a kind, further ones of that kind are logged at most this often."""


class ThrottledLog:
    """Logs to ``logger`` at most once per ``interval`` seconds per ``kind`` (a word the
    caller picks; one kind when it has only one)."""

    def __init__(
        self,
        logger: logging.Logger,
        *,
        interval: float = ERROR_LOG_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._logger = logger
        self._interval = interval
        self._clock = clock
        self._last: dict[str, float] = {}

    def log(self, level: int, message: str, *args: object, kind: str = "") -> bool:
        """Log ``message % args`` unless ``kind`` was logged within the interval; True
        when it was logged."""
        now = self._clock()
        last = self._last.get(kind)
        if last is not None and now - last < self._interval:
            return False
        self._last[kind] = now
        self._logger.log(level, message, *args)
        return True

    def warning(self, message: str, *args: object, kind: str = "") -> bool:
        return self.log(logging.WARNING, message, *args, kind=kind)


def error_kind(exc: BaseException) -> str:
    """An error's type, and SQLite's error name when it has one: never its message, which
    could quote a prompt or trace content (invariant 9)."""
    kind = type(exc).__name__
    sqlite_name = getattr(exc, "sqlite_errorname", None)
    return f"{kind} ({sqlite_name})" if isinstance(sqlite_name, str) else kind
