"""One upstream HTTP/1.1 connection of gw's own client: writes a request, parses the
answer with httptools (the parser uvicorn already uses), and hands the body to its reader.

The connection is also the answer's ``StreamingReply`` while an exchange runs. Body bytes
wait in a small buffer; reading from the socket pauses while the reader is behind. A
relayed body (``relay``) skips the buffer: each piece goes to the relay's sink from the
read callback, with no task woken per piece. Every way an exchange can fail becomes the
gw error the adapters expect, phrased for the user.

An answer's head is bounded as gw's server bounds a request's (gw/server/runtime/protocol.py):
over ``MAX_HEAD_BYTES`` of header lines or ``MAX_HEADER_LINES`` lines, the exchange fails
as ``upstream_error``. A line still arriving is held by the parser, so reads that complete
nothing (no header, no body piece) are bounded by the same size; that also bounds a
chunked body's trailers, which are read and dropped (they never join the headers).
"""

from __future__ import annotations

import asyncio
import zlib
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping

import httptools

from gw.config.schema import ProviderTls
from gw.errors import GatewayError, UpstreamError, UpstreamTimeoutError
from gw.upstream_http.h1_inflate import Inflater
from gw.upstream_http.http_transport import MAX_ERROR_BODY_BYTES
from gw.upstream_http.reply_budget import ReplyBudget

# scheme, host, port and (https) the provider's TLS settings: what a pooled connection is
# good for (one provider's client certificate never serves another's requests).
Origin = tuple[str, str, int, ProviderTls | None]

PAUSE_ABOVE = 256 * 1024  # buffered body bytes at which reading from the socket pauses
RESUME_BELOW = 64 * 1024

BROKE_PROTOCOL = "the upstream broke the HTTP protocol"
HUNG_UP = "the upstream hung up"
CUT_SHORT = "the upstream body was cut short or undecodable"
READ_TIMEOUT = "the upstream stopped sending (read timeout)"
FINISH_WITHIN = 1.0  # seconds a stream left at its logical end may take to end its framing
MAX_HEAD_BYTES = 64 * 1024  # header lines of one answer (with its trailers, its 1xx heads)
MAX_HEADER_LINES = 128
HEAD_TOO_LARGE = (
    f"the upstream's answer head is too large: over {MAX_HEAD_BYTES // 1024} KiB or "
    f"{MAX_HEADER_LINES} header lines (gw's bound for a response head or its trailers)"
)


class _UntrustedAnswerError(Exception):
    """Raised in a parser callback to stop reading an answer that cannot be trusted."""


class H1Connection(asyncio.Protocol):
    """A keep-alive connection to one origin; one exchange at a time (no pipelining)."""

    # One exchange's state, set by _begin_exchange:
    status: int
    headers: Mapping[str, str]
    complete: bool
    keep_alive: bool
    _provider: str
    _headers: dict[str, str]
    _active: bool
    _failure: GatewayError | None
    _waiter: asyncio.Future[None] | None
    _buffered: int
    _paused: bool
    _interim: bool
    _until_close: bool
    _decoder: Inflater | None
    _timer: asyncio.TimerHandle | None
    _read_timeout: float
    _last_activity: float
    _unsent: int
    _then_release: Callable[[H1Connection], None] | None
    _finish_timer: asyncio.TimerHandle | None
    _head_bytes: int  # header and trailer lines so far, as the parser completes them
    _head_lines: int
    _idle_bytes: int  # bytes read since the parser last completed something
    _progress: bool  # the parser completed something while fed the current read
    _relay: tuple[Callable[[bytes], bool], asyncio.Future[bool]] | None  # sink, its future

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        origin: Origin,
        on_lost: Callable[[H1Connection], None],
    ) -> None:
        self.origin = origin
        self.closed = False
        self.counted = True  # in its pool's count of open connections (see ConnectionPool)
        self.idle_since = 0.0
        self._loop = loop
        self._on_lost = on_lost
        self._transport: asyncio.Transport | None = None
        self._parser = httptools.HttpResponseParser(self)
        self._chunks: deque[bytes] = deque()
        self._begin_exchange("")
        self._active = False

    # -- the exchange, as the transport drives it ---------------------------------------

    def send(self, parts: list[bytes], provider: str, read_timeout: float | None) -> None:
        """Write one request; ``read_timeout`` bounds each wait for the upstream to read
        more of the request or send more of its answer."""
        self._begin_exchange(provider)
        transport = self._transport
        if transport is None or not self.open:
            self._fail(HUNG_UP)
            return
        if read_timeout is not None:
            self._read_timeout = read_timeout
            self._last_activity = self._loop.time()
            self._timer = self._loop.call_at(self._last_activity + read_timeout, self._check_timer)
        try:
            transport.writelines(parts)
        except (OSError, RuntimeError):  # uvloop raises once its socket handle is gone
            self._fail(HUNG_UP)
            self.close(abort=True)

    async def head(self) -> None:
        """Wait for the status line and headers (after any 1xx interim answers)."""
        while not self.status:
            if self._failure is not None:
                raise self._failure
            waiter = self._waiter = self._loop.create_future()
            await waiter

    async def chunks(self) -> AsyncIterator[bytes]:
        """The body as it arrives; a failure raises once the bytes before it are yielded."""
        chunks = self._chunks
        while True:
            if chunks:
                data = chunks.popleft() if len(chunks) == 1 else self._take_all()
                self._buffered -= len(data)
                if self._paused and self._buffered < RESUME_BELOW:
                    self._resume_reading()
                yield data
            elif self._failure is not None:
                raise self._failure
            elif self.complete:
                return
            else:
                waiter = self._waiter = self._loop.create_future()
                await waiter

    def relay(self, sink: Callable[[bytes], bool]) -> asyncio.Future[bool]:
        """Hand the body to ``sink`` as it arrives, from the read callback; what is
        buffered goes first. The future is True once the body has ended and False once
        ``sink`` returned False (it wants no more for now; later bytes are buffered until
        the next ``relay``); it holds the failure if the exchange fails. ``sink`` must not
        raise. A reader cancelled while it waits calls ``stop_relay``."""
        relayed: asyncio.Future[bool] = self._loop.create_future()
        chunks = self._chunks
        while chunks:
            data = chunks.popleft()
            self._buffered -= len(data)
            if not sink(data):
                relayed.set_result(False)
                break
        if self._paused and self._buffered < RESUME_BELOW:
            self._resume_reading()
        if relayed.done():
            return relayed
        if self._failure is not None:
            relayed.set_exception(self._failure)
        elif self.complete:
            relayed.set_result(True)
        else:
            self._relay = (sink, relayed)
        return relayed

    def stop_relay(self) -> None:
        self._relay = None

    async def read_body(self, budget: ReplyBudget) -> bytes:
        """The whole body, read within ``budget``'s bounds (past them it raises; the
        connection is then closed unless the whole body had already arrived)."""
        if self.complete and self._buffered <= budget.max_reply_bytes:  # came with its head
            self._buffered = 0
            return self._take_all()
        length = self._headers.get("content-length", "")
        declared = int(length) if length.isdigit() and self._decoder is None else None
        return await budget.read(self.chunks(), self._provider, declared=declared)

    async def read_error_body(self) -> bytes:
        """At most ``MAX_ERROR_BODY_BYTES``; a failing body gives what arrived, or b"" ."""
        parts: list[bytes] = []
        size = 0
        try:
            async for data in self.chunks():
                parts.append(data)
                size += len(data)
                if size >= MAX_ERROR_BODY_BYTES:
                    break
        except GatewayError:
            pass  # the status alone still classifies the error
        return b"".join(parts)[:MAX_ERROR_BODY_BYTES]

    @property
    def reusable(self) -> bool:
        """Fit to go back to the pool: its answer read to the end and kept alive, and its
        request all sent (an early answer, such as a 413, can come before that)."""
        return (
            self.complete
            and self.keep_alive
            and self.open
            and not self._transport.get_write_buffer_size()  # type: ignore[union-attr]
        )

    @property
    def open(self) -> bool:
        """Neither side has begun closing it (connection_lost comes a loop turn later)."""
        transport = self._transport
        return not self.closed and transport is not None and not transport.is_closing()

    def close(self, *, abort: bool = False) -> None:
        transport = self._transport
        if transport is not None and not self.closed:
            self.closed = True  # at once: connection_lost comes a loop turn later
            # A graceful close waits for unsent bytes, which an upstream that stopped
            # reading never takes: the connection (and its pool slot) would stay forever.
            if abort or transport.get_write_buffer_size():
                transport.abort()
            else:
                transport.close()

    def release_when_complete(self, release: Callable[[H1Connection], None]) -> None:
        """For a stream its reader left at its logical end (an SSE ``[DONE]``) while the
        framing's end (the last chunk) is still on its way: ``release`` once it comes,
        rather than closing a connection that is about to be reusable. An answer that
        does not end within ``FINISH_WITHIN`` seconds is closed."""
        if self.complete or self._failure is not None or not self.open:
            release(self)
            return
        self._then_release = release
        self._finish_timer = self._loop.call_later(FINISH_WITHIN, self._abort)

    def _abort(self) -> None:
        self.close(abort=True)

    # -- asyncio.Protocol ---------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]  # uvloop's is no subclass

    def data_received(self, data: bytes) -> None:
        if not self._active:  # bytes nobody asked for: this connection cannot be trusted
            self.close(abort=True)
            return
        if self._timer is not None:
            self._last_activity = self._loop.time()
        self._progress = False
        try:
            self._parser.feed_data(data)
        except Exception:  # noqa: BLE001 - httptools' errors, zlib's, a 101, _UntrustedAnswerError
            # Records nothing when the answer had completed or already failed.
            self._fail(CUT_SHORT if self.status else BROKE_PROTOCOL)
            self.close(abort=True)
            return
        if self._progress:
            self._idle_bytes = 0
        elif self._active:  # a header line, trailer or chunk line still arriving
            self._idle_bytes += len(data)
            if self._idle_bytes > MAX_HEAD_BYTES:
                self._fail(HEAD_TOO_LARGE)
                self.close(abort=True)

    def eof_received(self) -> bool:
        return False  # close our side too; connection_lost settles the exchange

    def connection_lost(self, exc: Exception | None) -> None:
        closed_by_upstream = not self.closed and exc is None
        self.closed = True
        if self._active:
            if self.status and self._until_close and closed_by_upstream:
                try:  # a body without length or chunks ends when the upstream closes
                    self._finish()
                except zlib.error:
                    self._fail(CUT_SHORT)
            else:
                self._fail(CUT_SHORT if self.status else HUNG_UP)
        self._on_lost(self)

    # -- httptools callbacks ------------------------------------------------------------

    def on_message_begin(self) -> None:
        if self.complete:  # a second answer to one request
            raise _UntrustedAnswerError

    def on_header(self, name: bytes, value: bytes) -> None:
        self._progress = True
        self._head_lines += 1
        self._head_bytes += len(name) + len(value) + 4  # ": " and CRLF
        if self._head_lines > MAX_HEADER_LINES or self._head_bytes > MAX_HEAD_BYTES:
            self._fail(HEAD_TOO_LARGE)
            raise _UntrustedAnswerError
        if self.status:  # a chunked body's trailer: not part of the answer's headers
            return
        key = name.decode("latin-1").lower()
        text = value.decode("latin-1")
        headers = self._headers
        headers[key] = f"{headers[key]}, {text}" if key in headers else text

    def on_headers_complete(self) -> None:
        self._progress = True
        status = self._parser.get_status_code()
        if status < 200:  # 1xx interim answer: the real one follows
            self._interim = True
            self._headers.clear()
            return
        headers = self._headers
        framing = headers.get("transfer-encoding", "").strip().lower()
        if framing not in ("", "chunked"):  # gw asks for none (gzip, chunked: Content-Encoding)
            raise _UntrustedAnswerError
        encoding = headers.get("content-encoding", "").strip().lower()
        if encoding in ("gzip", "x-gzip", "deflate"):
            self._decoder = Inflater(encoding)
        elif encoding not in ("", "identity"):
            self._fail(f"the upstream answered in an encoding gw did not ask for: {encoding:.40}")
            raise _UntrustedAnswerError
        self._until_close = (
            "content-length" not in headers and not framing and status not in (204, 304)
        )
        self.status = status
        self._wake()

    def on_body(self, body: bytes) -> None:
        self._progress = True
        if self._decoder is not None:
            body = self._decoder.decompress(body)
            if not body:
                return
        self._take(body)

    def _take(self, body: bytes) -> None:
        relay = self._relay
        if relay is not None:
            sink, relayed = relay
            if not relayed.cancelled():  # else its reader stopped waiting: keep the bytes
                if not sink(body):
                    self._settle_relay(False)
                return
            self._relay = None
        self._chunks.append(body)
        self._buffered += len(body)
        if not self._paused and self._buffered > PAUSE_ABOVE and self._transport is not None:
            self._paused = True
            self._transport.pause_reading()
        self._wake()

    def on_message_complete(self) -> None:
        self._progress = True
        if self._interim:
            self._interim = False
            return
        self.keep_alive = self._parser.should_keep_alive()
        self._finish()

    # -- internals ----------------------------------------------------------------------

    def _begin_exchange(self, provider: str) -> None:
        self._provider = provider
        self.status = 0
        self._headers = {}  # a new dict: the last reply may still hold the old one
        self.headers = self._headers
        self.complete = False
        self.keep_alive = False
        self._active = True
        self._failure = None
        self._waiter = None
        self._buffered = 0
        self._paused = False
        self._interim = False
        self._until_close = False
        self._decoder = None
        self._timer = None
        self._read_timeout = 0.0
        self._last_activity = 0.0
        self._unsent = 0
        self._then_release = None
        self._finish_timer = None
        self._relay = None
        self._head_bytes = self._head_lines = self._idle_bytes = 0
        self._progress = False
        self._chunks.clear()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():  # done: its reader was cancelled
                waiter.set_result(None)

    def _resume_reading(self) -> None:
        self._paused = False
        if self._transport is not None and not self.closed:
            self._transport.resume_reading()

    def _take_all(self) -> bytes:
        data = b"".join(self._chunks)
        self._chunks.clear()
        return data

    def _finish(self) -> None:
        if self._decoder is not None:
            tail = self._decoder.flush()
            if tail:
                self._take(tail)
        self.complete = True
        if self._paused:  # all of it is buffered; reading again is safe, and a pooled
            self._resume_reading()  # connection must hear its server close it
        self._end_exchange()

    def _fail(self, message: str, *, timeout: bool = False) -> None:
        if self._failure is None and not self.complete:
            kind = UpstreamTimeoutError if timeout else UpstreamError
            self._failure = kind(f"provider {self._provider}: {message}", blame="upstream")
        self._end_exchange()

    def _settle_relay(self, ended: bool) -> None:
        relay, self._relay = self._relay, None
        relayed = None if relay is None else relay[1]
        if relayed is not None and not relayed.done():
            if self._failure is not None:
                relayed.set_exception(self._failure)
            else:
                relayed.set_result(ended)

    def _end_exchange(self) -> None:
        self._active = False
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._wake()
        self._settle_relay(True)
        release = self._then_release
        if release is not None:
            self._then_release = None
            self._finish_timer.cancel()  # type: ignore[union-attr]
            release(self)  # the pool keeps it when it completed, and closes it otherwise

    def _check_timer(self) -> None:
        now = self._loop.time()
        unsent = self._transport.get_write_buffer_size() if self._transport else 0
        if unsent != self._unsent:  # the upstream took more of the request: that counts
            self._unsent = unsent
            self._last_activity = now
        due = self._last_activity + self._read_timeout
        if now < due:  # activity meanwhile: wait the rest (one timer, not one per read)
            self._timer = self._loop.call_at(due, self._check_timer)
            return
        self._timer = None
        self._fail(READ_TIMEOUT, timeout=True)
        self.close(abort=True)
