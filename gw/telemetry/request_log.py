"""RequestLog: one line per finished request on stderr (``telemetry.request_log``).

``json`` writes one JSON object per line (shape: ``RequestLine``); ``rich`` a compact
coloured line for a terminal; ``auto`` picks rich when the stream is a TTY, JSON otherwise;
``off`` writes nothing. The setting is read per request, so a config reload applies it.

Only metadata is logged: ids, route, upstream, status, the error *code*, timings, token
counts, cost, tenant and key id. Never a body, a prompt, an error message (an upstream's
message may quote the prompt) or a header value (invariant 9).

Strategy: ``submit`` runs on the request path, so it only queues the trace on a
``LossyQueue`` (gw/telemetry/lossy_queue.py), which drops and counts when full. Its
consumer hands each batch to a ``WriterThread`` of the log's own that formats and writes
it: a slow or blocked stderr never stalls the event loop or gw's exit (the queue fills and
lines are dropped instead; ``stop`` waits a bounded time). The consumer lingers
``flush_interval`` for more lines before each hand-over: waking the thread once per line
cost more CPU than formatting the line (streaming benchmark, docs/performance.md).

Client text (an unknown model's name, ``provider/<anything>``) is cut to ``TEXT_MAX_CHARS``
in both formats, and printed through ``printable`` in Rich lines: it must not drive the
operator's terminal.
"""

from __future__ import annotations

import functools
import itertools
import logging
import math
import operator
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Literal, TextIO

import msgspec

from gw.config.schema import RequestLogFormat
from gw.record import TraceRecord
from gw.telemetry.explain import iso_utc
from gw.telemetry.lossy_queue import LossyQueue, QueueCounters
from gw.telemetry.printable import TEXT_MAX_CHARS, printable
from gw.telemetry.writer_thread import WriterThread

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text

logger = logging.getLogger("gw.telemetry")
LineFormat = Literal["json", "rich"]


class RequestLine(msgspec.Struct, frozen=True, kw_only=True):
    """One line of the JSON request log, fields in this order.

    ``time`` is when the request arrived (as in ``gw traces``), ISO 8601 UTC; ``level`` is
    ``info``, ``warning`` (4xx) or ``error`` (5xx); ``event`` is always ``request``;
    ``route`` is the route gw resolved, else the model the client named; ``provider`` and
    ``model`` answered or were last tried (null: none was tried); ``attempts`` counts
    upstream calls; token counts and ``cost_usd`` are null when unknown.
    """

    time: str
    level: str
    event: str
    request_id: str
    endpoint: str
    route: str
    provider: str | None
    model: str | None
    status: int
    error_code: str | None
    latency_ms: float
    ttft_ms: float | None
    attempts: int
    input_tokens: int | None
    output_tokens: int | None
    cost_usd: float | None
    tenant: str | None
    key_id: str | None
    revision: int
    stream: bool


def level_of(status: int) -> str:
    if status >= 500:
        return "error"
    return "warning" if status >= 400 else "info"


def route_of(trace: TraceRecord) -> str:
    """The route gw resolved, else the model the client named (client text: cut short)."""
    route = trace.route if trace.route is not None else trace.requested_model
    return route[:TEXT_MAX_CHARS]


def _bounded(text: str | None) -> str | None:
    """``provider/<anything>`` puts client text in provider and model: keep lines bounded."""
    return None if text is None else text[:TEXT_MAX_CHARS]


class IsoTime:
    """``iso_utc`` (the format of every ``--json`` time) for timestamps that arrive in
    order: the date and time to the second are formatted once per second, which is most
    of the cost of a log line."""

    __slots__ = ("_prefix", "_second")

    def __init__(self) -> None:
        self._second: int | None = None
        self._prefix = ""

    def __call__(self, timestamp: float) -> str:
        second = math.floor(timestamp)
        micros = round((timestamp - second) * 1_000_000)  # as datetime rounds it
        if micros >= 1_000_000:
            second, micros = second + 1, 0
        if second != self._second:
            self._second = second
            self._prefix = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
        return f"{self._prefix}.{micros // 1000:03d}Z"


def request_line(trace: TraceRecord, iso_time: Callable[[float], str] = iso_utc) -> RequestLine:
    """The JSON log line of a trace: metadata only (see the module docstring)."""
    usage = trace.usage
    return RequestLine(
        time=iso_time(trace.time),
        level=level_of(trace.status),
        event="request",
        request_id=trace.request_id,
        endpoint=trace.endpoint,
        route=route_of(trace),
        provider=_bounded(trace.provider),
        model=_bounded(trace.model),
        status=trace.status,
        error_code=trace.error_code,
        latency_ms=round(trace.latency_ms, 3),
        ttft_ms=None if trace.ttft_ms is None else round(trace.ttft_ms, 3),
        attempts=len(trace.attempts),
        input_tokens=None if usage is None else usage.input_tokens,
        output_tokens=None if usage is None else usage.output_tokens,
        cost_usd=trace.cost_usd,
        tenant=trace.tenant,
        key_id=trace.key_id,
        revision=trace.revision,
        stream=trace.stream,
    )


def _ms(value: float) -> str:
    return f"{value:.1f}ms" if value < 10 else f"{value:,.0f}ms"


def rich_line(trace: TraceRecord) -> Text:
    """The compact terminal line of a trace: the same facts as the JSON line, client text
    through ``printable``."""
    from rich.text import Text  # noqa: PLC0415 - rich (~30 ms) only for a terminal

    status_style = "red" if trace.status >= 500 else "yellow" if trace.status >= 400 else "green"
    moment = datetime.fromtimestamp(trace.time, UTC).astimezone()
    line = Text.assemble(
        (moment.strftime("%H:%M:%S"), "dim"),
        " ",
        (str(trace.status), status_style),
        " ",
        (printable(route_of(trace)), "bold"),
        " → ",
        printable(trace.route_header, 2 * TEXT_MAX_CHARS),
        " ",
        _ms(trace.latency_ms),
    )
    if trace.ttft_ms is not None:
        line.append(f" ttft {_ms(trace.ttft_ms)}")
    if trace.error_code is not None:
        line.append(f" {trace.error_code}", style="red")
    if len(trace.attempts) > 1:
        line.append(f" {len(trace.attempts)} attempts")
    if trace.usage is not None:
        line.append(f" {trace.usage.input_tokens}/{trace.usage.output_tokens} tok")
    if trace.cost_usd is not None:
        line.append(f" ${trace.cost_usd:.6f}")
    if trace.tenant is not None:
        line.append(f" tenant {printable(trace.tenant)}", style="cyan")
    if trace.stream:
        line.append(" stream", style="dim")
    line.append(f" {trace.request_id}", style="dim")
    return line


def resolve_format(setting: RequestLogFormat, stream: TextIO) -> LineFormat | None:
    """``auto``: rich on a terminal, JSON otherwise; None for ``off``."""
    if setting == "off":
        return None
    if setting == "auto":
        return "rich" if _isatty(stream) else "json"
    return setting


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or file-like stream without a terminal
        return False


class RequestLog(QueueCounters):
    """A ``TraceSink`` writing one line per trace to ``stream`` (normally stderr).

    ``setting`` is called per trace (the config's ``telemetry.request_log``). Counters:
    ``dropped`` (queue full, submitted after ``stop``, failed writes, or still queued when
    the stop timeout ran out), ``written`` and ``write_errors``; ``queue_depth`` is what
    waits to be written.
    """

    def __init__(
        self,
        stream: TextIO,
        setting: Callable[[], RequestLogFormat],
        *,
        maxsize: int = 10_000,
        batch_size: int = 1024,
        flush_interval: float = 0.05,
        console: Console | None = None,
    ) -> None:
        self._stream = stream
        self._setting = setting
        self._tty = _isatty(stream)
        self._encoder = msgspec.json.Encoder()
        self._time = IsoTime()
        self._console = console
        self._writer = WriterThread("gw-request-log")
        self.queue: LossyQueue[tuple[LineFormat, TraceRecord]] = LossyQueue(
            self._hand_to_writer,
            name="request log",
            maxsize=maxsize,
            batch_size=batch_size,
            linger=flush_interval,
        )

    def submit(self, trace: TraceRecord) -> None:
        """Queue one line; never blocks, never raises. Drops (and counts) when full."""
        setting = self._setting()
        if setting == "off":
            return
        line_format: LineFormat = (
            ("rich" if self._tty else "json") if setting == "auto" else setting
        )
        self.queue.submit((line_format, trace))

    async def start(self) -> None:
        """Start the background writer (call from the event loop that will submit)."""
        await self.queue.start()

    async def stop(self, timeout: float = 2.0) -> None:  # noqa: ASYNC109 -- lines left when the time runs out are counted as dropped, which a caller's asyncio.timeout could not do
        """Write what is queued (for at most ``timeout`` seconds), then stop. A write stuck
        on a blocked stream is left to its daemon thread, never waited for past that."""
        await self.queue.stop(timeout)
        self._writer.close()
        if self.dropped:
            # Through gw's logger, whose handler only queues (gw/telemetry/log_lines.py).
            logger.warning(
                "the request log dropped %d lines (queue full or write errors)", self.dropped
            )

    async def _hand_to_writer(self, batch: list[tuple[LineFormat, TraceRecord]]) -> None:
        await self._writer.run(functools.partial(self._write, batch))

    def _write(self, batch: Sequence[tuple[LineFormat, TraceRecord]]) -> None:
        """Format and write one batch (in the writer thread, one batch at a time); a batch
        holds both formats only around a reload that changed the setting."""
        for line_format, run in itertools.groupby(batch, key=operator.itemgetter(0)):
            traces = [trace for _, trace in run]
            if line_format == "json":
                lines = self._encoder.encode_lines([request_line(t, self._time) for t in traces])
                self._stream.write(lines.decode())
                self._stream.flush()
            else:
                console = self._rich_console()
                for trace in traces:
                    console.print(rich_line(trace))

    def _rich_console(self) -> Console:
        if self._console is None:
            from rich.console import Console  # noqa: PLC0415 - see rich_line

            self._console = Console(file=self._stream, highlight=False, soft_wrap=True)
        return self._console
