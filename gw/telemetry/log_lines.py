"""gw's own log lines (``logging.getLogger("gw...")``) in the request log's format.

``gw serve`` installs one handler on the ``gw`` logger: JSON objects (``time``, ``level``,
``event: "log"``, ``logger``, ``message``; ``exception`` with a traceback) when stderr is
not a TTY, Rich lines when it is, as ``telemetry.request_log`` resolves (``off`` turns off
request lines only: warnings are still written, in the ``auto`` format). Log messages name
things (request ids, fields, error types), never content (invariant 9).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TextIO

import msgspec
from rich.console import Console
from rich.logging import RichHandler

from gw.config.schema import RequestLogFormat
from gw.telemetry.explain import iso_utc
from gw.telemetry.request_log import resolve_format


class LogLine(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    time: str
    level: str
    event: str
    logger: str
    message: str
    exception: str | None = None


class JsonLogFormatter(logging.Formatter):
    """One JSON object per record, on one line (a traceback is a field, not more lines)."""

    def __init__(self) -> None:
        super().__init__()
        self._encoder = msgspec.json.Encoder()

    def format(self, record: logging.LogRecord) -> str:
        exception = None
        if record.exc_info:
            exception = self.formatException(record.exc_info)
        line = LogLine(
            time=iso_utc(record.created),
            level=record.levelname.lower(),
            event="log",
            logger=record.name,
            message=record.getMessage(),
            exception=exception,
        )
        return self._encoder.encode(line).decode()


def log_handler(setting: RequestLogFormat, stream: TextIO) -> logging.Handler:
    """The handler for ``setting`` on ``stream``: JSON lines, or Rich on a terminal."""
    line_format = resolve_format("auto" if setting == "off" else setting, stream)
    if line_format == "rich":
        console = Console(file=stream, highlight=False, soft_wrap=True)
        return RichHandler(console=console, show_path=False, markup=False, rich_tracebacks=False)
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonLogFormatter())
    return handler


def install_log_handler(
    setting: RequestLogFormat, stream: TextIO, *, logger: str = "gw"
) -> Callable[[], None]:
    """Send ``logger``'s records (INFO and up) to ``stream`` in ``setting``'s format;
    returns what undoes it, for when serving ends."""
    handler = log_handler(setting, stream)
    target = logging.getLogger(logger)
    level = target.level
    target.addHandler(handler)
    target.setLevel(logging.INFO)

    def uninstall() -> None:
        target.removeHandler(handler)
        target.setLevel(level)
        handler.close()

    return uninstall
