"""RequestLog: the JSON line's exact fields, no content ever, drops when full, Rich lines,
and gw's own log lines in the same format."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import threading

import msgspec
from rich.console import Console

from gw.config.schema import RequestLogFormat
from gw.ir.usage import Usage
from gw.ports import TraceSink
from gw.record import AttemptRecord, TraceRecord
from gw.telemetry.explain import iso_utc
from gw.telemetry.log_lines import install_log_handler
from gw.telemetry.request_log import IsoTime, RequestLog, request_line, resolve_format, rich_line

from fakes.blocked_pipe import BlockedPipe, run_within

PROMPT = "please summarise my secret turnip recipe"

FIELDS = [
    "time", "level", "event", "request_id", "endpoint", "route", "provider", "model",
    "status", "error_code", "latency_ms", "ttft_ms", "attempts", "input_tokens",
    "output_tokens", "cost_usd", "tenant", "key_id", "revision", "stream",
]  # fmt: skip


def attempt(number: int, outcome: str = "answered", **extra: object) -> AttemptRecord:
    return AttemptRecord(
        number=number,
        provider="openai-prod",
        model="gpt-4o-mini",
        account="default",
        started_at=1_773_583_323.0,
        latency_ms=100.0,
        ttft_ms=None,
        outcome=outcome,  # type: ignore[arg-type]
        **extra,  # type: ignore[arg-type]
    )


def answered(request_id: str = "01JREQ0000000000000000001") -> TraceRecord:
    return TraceRecord(
        request_id=request_id,
        time=1_773_583_323.12,  # 2026-03-15T14:02:03.120Z
        endpoint="chat.completions",
        requested_model="chat",
        stream=True,
        status=200,
        revision=3,
        latency_ms=412.5,
        route="chat",
        policy="default",
        provider="openai-prod",
        model="gpt-4o-mini",
        tenant="team-a",
        key_id="key_01ABC",
        ttft_ms=120.25,
        attempts=(attempt(1, "retried", error_code="upstream_error"), attempt(2)),
        usage=Usage(input_tokens=12, output_tokens=34),
        cost_usd=0.000022,
        client_request_id="client-1",
    )


def failed() -> TraceRecord:
    """An upstream error whose message quotes the prompt, as some providers' do."""
    message = f"upstream said: invalid content in '{PROMPT}'"
    return TraceRecord(
        request_id="01JREQ0000000000000000002",
        time=1_773_583_324.0,
        endpoint="messages",
        requested_model="claude",
        stream=False,
        status=502,
        revision=3,
        latency_ms=8.25,
        route="claude",
        provider="anthropic",
        model="claude-x",
        error_code="upstream_error",
        error_message=message,
        attempts=(attempt(1, "failed", error_code="upstream_error", error_message=message),),
    )


def test_the_json_line_has_exactly_the_documented_fields() -> None:
    line = json.loads(_encode(answered()))
    assert list(line) == FIELDS
    assert line == {
        "time": "2026-03-15T14:02:03.120Z",
        "level": "info",
        "event": "request",
        "request_id": "01JREQ0000000000000000001",
        "endpoint": "chat.completions",
        "route": "chat",
        "provider": "openai-prod",
        "model": "gpt-4o-mini",
        "status": 200,
        "error_code": None,
        "latency_ms": 412.5,
        "ttft_ms": 120.25,
        "attempts": 2,
        "input_tokens": 12,
        "output_tokens": 34,
        "cost_usd": 0.000022,
        "tenant": "team-a",
        "key_id": "key_01ABC",
        "revision": 3,
        "stream": True,
    }


def _encode(trace: TraceRecord) -> bytes:
    return msgspec.json.encode(request_line(trace))


def test_an_error_line_carries_the_code_never_the_message() -> None:
    line = json.loads(_encode(failed()))
    assert line["level"] == "error"
    assert line["error_code"] == "upstream_error"
    assert line["input_tokens"] is None
    assert line["cost_usd"] is None
    assert "turnip" not in _encode(failed()).decode()
    assert "turnip" not in rich_line(failed()).plain


def test_an_unknown_model_is_logged_as_named_but_bounded() -> None:
    trace = TraceRecord(
        request_id="r",
        time=0.0,
        endpoint="chat.completions",
        requested_model="x" * 5000,
        stream=False,
        status=404,
        revision=1,
        latency_ms=0.5,
        error_code="model_not_found",
    )
    line = request_line(trace)
    assert line.route == "x" * 200
    assert line.level == "warning"
    assert line.provider is None
    assert line.attempts == 0


def run_log(
    traces: list[TraceRecord], setting: RequestLogFormat = "json", **kwargs: object
) -> tuple[RequestLog, str]:
    stream = io.StringIO()
    log = RequestLog(stream, lambda: setting, **kwargs)  # type: ignore[arg-type]

    async def main() -> None:
        await log.start()
        for trace in traces:
            log.submit(trace)
        await log.stop()

    asyncio.run(main())
    return log, stream.getvalue()


def test_request_log_is_a_trace_sink() -> None:
    sink: TraceSink = RequestLog(io.StringIO(), lambda: "json")
    assert callable(sink.submit)


def test_one_json_object_per_line_in_order() -> None:
    traces = [answered(f"req-{n}") for n in range(50)] + [failed()]
    log, written = run_log(traces)
    lines = written.splitlines()
    assert [json.loads(line)["request_id"] for line in lines] == [t.request_id for t in traces]
    assert log.written == 51
    assert log.dropped == 0
    assert log.queue_depth == 0
    assert PROMPT not in written
    assert "turnip" not in written


def test_off_writes_nothing_and_queues_nothing() -> None:
    log, written = run_log([answered(), failed()], setting="off")
    assert written == ""
    assert log.written == 0
    assert log.dropped == 0


def test_auto_is_json_when_the_stream_is_not_a_terminal() -> None:
    _, written = run_log([answered()], setting="auto")
    assert json.loads(written)["event"] == "request"
    assert resolve_format("auto", io.StringIO()) == "json"
    assert resolve_format("rich", io.StringIO()) == "rich"
    assert resolve_format("off", io.StringIO()) is None


def test_a_full_queue_drops_and_counts_without_blocking() -> None:
    stream = io.StringIO()
    log = RequestLog(stream, lambda: "json", maxsize=3)
    # Not started: nothing drains, so the fourth and later submits are dropped.
    for n in range(10):
        log.submit(answered(f"req-{n}"))
    assert log.queue_depth == 3
    assert log.dropped == 7

    async def stop() -> None:
        await log.stop()  # stop still writes what was queued

    asyncio.run(stop())
    assert [json.loads(line)["request_id"] for line in stream.getvalue().splitlines()] == [
        "req-0",
        "req-1",
        "req-2",
    ]
    log.submit(answered("late"))  # after stop: counted, not queued
    assert log.dropped == 8
    assert log.queue_depth == 0


class BlockedStream(io.StringIO):
    """A stderr pipe nobody reads: write blocks until released."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()

    def write(self, text: str) -> int:
        self.release.wait(timeout=10)
        return super().write(text)


def test_a_blocked_stream_never_blocks_the_event_loop() -> None:
    stream = BlockedStream()
    # No linger: the first line goes to the writer at once, which then blocks on it.
    log = RequestLog(stream, lambda: "json", maxsize=5, flush_interval=0.0)

    async def main() -> None:
        await log.start()
        for n in range(20):
            log.submit(answered(f"req-{n}"))
            await asyncio.sleep(0)  # the loop keeps turning while the writer is stuck
        assert log.dropped > 0
        stream.release.set()
        await log.stop()

    asyncio.run(main())
    written = len(stream.getvalue().splitlines())
    assert written + log.dropped == 20
    assert log.written == written


class BrokenStream(io.StringIO):
    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")


def test_a_broken_stream_counts_errors_and_never_raises() -> None:
    log = RequestLog(BrokenStream(), lambda: "json")

    async def main() -> None:
        await log.start()
        log.submit(answered())
        await log.stop()

    asyncio.run(main())
    assert log.write_errors == 1
    assert log.dropped == 1


def test_the_rich_line_renders_in_a_fixed_width_console() -> None:
    console = Console(width=160, record=True, force_terminal=False, color_system=None)
    console.print(rich_line(answered()))
    console.print(rich_line(failed()))
    first, second = console.export_text().splitlines()
    assert " 200 chat → openai-prod/gpt-4o-mini 412ms ttft 120ms 2 attempts 12/34 tok" in first
    assert "$0.000022 tenant team-a stream 01JREQ0000000000000000001" in first
    assert " 502 claude → anthropic/claude-x 8.2ms upstream_error " in second
    assert "turnip" not in second


def test_rich_mode_writes_rich_lines_to_the_stream() -> None:
    _, written = run_log([answered()], setting="rich")
    assert "chat → openai-prod/gpt-4o-mini" in written
    assert not written.startswith("{")


def test_a_rich_line_is_not_parsed_as_markup() -> None:
    trace = TraceRecord(
        request_id="r",
        time=0.0,
        endpoint="chat.completions",
        requested_model="[bold red]boom[/]",
        stream=False,
        status=404,
        revision=1,
        latency_ms=1.0,
        error_code="model_not_found",
    )
    console = Console(width=120, record=True, color_system=None)
    console.print(rich_line(trace))
    assert "[bold red]boom[/]" in console.export_text()


def fail_with(message: str) -> None:
    raise ValueError(message)


def test_gw_log_lines_become_json_objects() -> None:
    stream = io.StringIO()
    uninstall = install_log_handler("auto", stream)
    try:
        logging.getLogger("gw.reload").info("config revision %d applied (%s)", 4, "file")
        try:
            fail_with("boom")
        except ValueError:
            logging.getLogger("gw.server").exception("unhandled %s", "ValueError")
    finally:
        uninstall()
    logging.getLogger("gw.reload").warning("after uninstall: not written here")
    first, second = (json.loads(line) for line in stream.getvalue().splitlines())
    assert first == {
        "time": first["time"],
        "level": "info",
        "event": "log",
        "logger": "gw.reload",
        "message": "config revision 4 applied (file)",
    }
    assert first["time"].endswith("Z")
    assert second["level"] == "error"
    assert "ValueError: boom" in second["exception"]


def test_gw_log_lines_on_a_terminal_are_rich() -> None:
    stream = io.StringIO()
    uninstall = install_log_handler("rich", stream)
    try:
        logging.getLogger("gw.auth").warning("auth mode switched from open to keys")
    finally:
        uninstall()
    written = stream.getvalue()
    assert "WARNING" in written
    assert "auth mode switched from open to keys" in written
    assert not written.startswith("{")


def test_the_cached_time_format_is_iso_utc() -> None:
    iso_time = IsoTime()
    stamps = [1_773_583_323.12, 1_773_583_323.9999, 1_773_583_323.9999996, 0.0, 1.0005]
    stamps += [1_773_583_000 + n * 0.0371 for n in range(3000)]
    for stamp in stamps:
        assert iso_time(stamp) == iso_utc(stamp), stamp


def test_a_stderr_nobody_reads_holds_neither_the_loop_nor_stop_nor_the_exit() -> None:
    """A real full pipe: the writer thread is stuck in write; requests go on, ``stop``
    returns within its timeout, and so does ``asyncio.run`` (its default executor must not
    hold a stuck thread)."""
    with BlockedPipe() as pipe:
        log = RequestLog(pipe.stream, lambda: "json", maxsize=8)

        async def main() -> tuple[int, float]:
            await log.start()
            ticks = 0
            for n in range(40):
                log.submit(answered(f"req-{n}"))
                await asyncio.sleep(0.001)  # other coroutines (requests) keep being served
                ticks += 1
            loop = asyncio.get_running_loop()
            started = loop.time()
            await log.stop(timeout=0.2)
            return ticks, loop.time() - started

        ticks, stop_took = run_within(5.0, main)
        assert ticks == 40
        assert stop_took < 1.0
        assert (log.written, log.dropped, log.queue_depth) == (0, 40, 0)


def hostile(model: str, provider: str | None = None) -> TraceRecord:
    return TraceRecord(
        request_id="r",
        time=0.0,
        endpoint="chat.completions",
        requested_model=model,
        stream=False,
        status=404,
        revision=1,
        latency_ms=1.0,
        provider=provider,
        model=model if provider else None,
        tenant="team\x1b[31m",
        error_code="model_not_found",
    )


ESCAPES = "evil\x1b]52;c;ZWNobyBwd25lZA==\x07\x1b[2J\x9b2J"


def test_client_text_never_reaches_the_terminal_as_escapes() -> None:
    console = Console(width=400, record=True, color_system=None, file=io.StringIO())
    console.print(rich_line(hostile(ESCAPES)))
    console.print(rich_line(hostile(ESCAPES, provider="openai-prod")))
    text = console.export_text()
    assert "\x1b" not in text
    assert "\x9b" not in text
    assert "\x07" not in text
    assert "evil\\x1b]52;c;" in text  # shown escaped, so the operator sees what came
    assert "→ openai-prod/evil\\x1b" in text
    assert "tenant team\\x1b[31m" in text


def test_rich_mode_on_a_terminal_writes_no_client_escapes() -> None:
    _, written = run_log([hostile(ESCAPES, provider="openai-prod")], setting="rich")
    assert "\x1b" not in written
    assert "\x9b" not in written


def test_the_json_line_bounds_provider_and_model_too() -> None:
    trace = hostile("m" * 5000, provider="openai-prod")
    line = request_line(trace)
    assert line.model == "m" * 200
    assert line.route == "m" * 200
    assert b"\x1b" not in msgspec.json.encode(request_line(hostile(ESCAPES, "p")))
