"""gw's own log lines on a stderr that blocks: the event loop never waits for it, drops are
counted and said, and uninstalling is bounded."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import time

import pytest

from gw.telemetry.log_lines import DroppingQueueHandler, install_log_handler

from fakes.blocked_pipe import BlockedPipe, run_within


def queue_handler(logger: str) -> DroppingQueueHandler:
    """The handler install_log_handler put on ``logger`` ("": the root logger)."""
    (handler,) = [
        h for h in logging.getLogger(logger).handlers if isinstance(h, DroppingQueueHandler)
    ]
    return handler


def test_logging_on_a_blocked_stderr_never_blocks_the_event_loop() -> None:
    with BlockedPipe() as pipe:
        uninstall = install_log_handler("json", pipe.stream, maxsize=10, stop_timeout=0.2)
        try:
            handler = queue_handler("")

            async def main() -> int:
                ticks = 0

                async def ticker() -> None:
                    nonlocal ticks
                    for _ in range(20):
                        await asyncio.sleep(0.001)
                        ticks += 1

                ticking = asyncio.create_task(ticker())
                for n in range(100):
                    logging.getLogger("gw.server").warning("line %d", n)
                    await asyncio.sleep(0)
                await ticking
                return ticks

            assert run_within(5.0, main) == 20
            assert handler.dropped >= 100 - 10 - 1  # the queue, and the one stuck in write
        finally:
            started = time.monotonic()
            uninstall()
            assert time.monotonic() - started < 1.0
        pipe.release()


def test_dropped_lines_are_counted_and_said_once_the_stream_writes_again() -> None:
    stream = io.StringIO()
    uninstall = install_log_handler("json", stream, maxsize=2)
    handler = queue_handler("")
    try:
        handler.dropped = 5  # as if stderr had blocked for a while
        logging.getLogger("gw.reload").info("config revision %d applied", 2)
    finally:
        uninstall()
    note, line = (json.loads(text) for text in stream.getvalue().splitlines())
    assert note["level"] == "warning"
    assert note["message"] == "5 log lines were dropped: stderr was not keeping up"
    assert line["message"] == "config revision 2 applied"


def test_a_failing_format_is_dropped_not_printed_to_stderr(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(logging.getLogger(), "handlers", [])  # pytest's handler raises
    stream = io.StringIO()
    uninstall = install_log_handler("json", stream)
    handler = queue_handler("")
    try:
        logging.getLogger("gw.server").warning("%d is not a number", "x")
    finally:
        uninstall()
    assert handler.dropped == 1
    assert stream.getvalue() == ""


def test_rich_log_lines_escape_client_text() -> None:
    stream = io.StringIO()
    uninstall = install_log_handler("rich", stream)
    try:
        logging.getLogger("gw.routing").warning("no route %s", "evil\x1b]52;c;eA==\x07\x1b[2J")
    finally:
        uninstall()
    written = stream.getvalue()
    assert "no route evil\\x1b]52;c;eA==\\x07\\x1b[2J" in written
    assert "\x1b" not in written


def test_other_libraries_warnings_are_json_lines_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """uvicorn's "Exception in ASGI application" (a traceback) is one JSON line, as gw's own;
    their INFO lines stay out."""
    # As gw serve leaves it (uvicorn.Config(log_config=None)); another test in this process
    # may have built a uvicorn.Config with uvicorn's own logging, which stops propagation.
    uvicorn_logger = logging.getLogger("uvicorn")
    monkeypatch.setattr(uvicorn_logger, "propagate", True)
    monkeypatch.setattr(uvicorn_logger, "handlers", [])
    stream = io.StringIO()
    uninstall = install_log_handler("json", stream)
    try:
        failure = ValueError("boom")
        info = (ValueError, failure, None)
        logging.getLogger("uvicorn.error").error("Exception in ASGI application", exc_info=info)
        logging.getLogger("httpx").info("HTTP Request: POST ...")
        logging.getLogger("gw.reload").info("config revision %d applied", 3)
    finally:
        uninstall()
    lines = [json.loads(text) for text in stream.getvalue().splitlines()]
    assert [line["logger"] for line in lines] == ["uvicorn.error", "gw.reload"]
    assert "ValueError: boom" in lines[0]["exception"]
