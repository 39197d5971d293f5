"""A minimal HTTP/1.1 server on raw asyncio streams, for fakes that must fail exactly.

It is not a general web server. It reads one request at a time per connection (request
line, headers, a Content-Length or chunked body), hands it to a handler with a
`Responder`, and keeps the connection alive unless either side asks to close it. The
responder exposes the wire directly so a fake can delay, truncate or abort at any byte.
"""

from __future__ import annotations

import asyncio
import ssl
import threading
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from http import HTTPStatus

MAX_HEAD_BYTES = 64 * 1024
MAX_BODY_BYTES = 64 * 1024 * 1024

_REASONS = {status.value: status.phrase for status in HTTPStatus}


@dataclass(slots=True)
class HttpRequest:
    method: str
    target: str
    version: str
    headers: dict[str, str]  # lower-case names; repeated headers joined with ", "
    body: bytes


class BadRequestError(Exception):
    """The bytes on the connection are not an HTTP/1.1 request this server understands."""


Handler = Callable[[HttpRequest, "Responder"], Awaitable[None]]


async def read_request(reader: asyncio.StreamReader) -> HttpRequest | None:
    """Read one request; None when the client closed the connection between requests."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as exc:
        if exc.partial.strip():
            raise BadRequestError("truncated request head") from None
        return None
    except asyncio.LimitOverrunError:
        raise BadRequestError("request head too large") from None
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise BadRequestError("malformed request line")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if not line:
            continue
        name, sep, value = line.partition(":")
        if not sep:
            raise BadRequestError("malformed header line")
        key, value = name.strip().lower(), value.strip()
        headers[key] = f"{headers[key]}, {value}" if key in headers else value
    if "chunked" in headers.get("transfer-encoding", "").lower():
        body = await _read_chunked_body(reader)
    else:
        try:
            length = int(headers.get("content-length") or 0)
        except ValueError:
            raise BadRequestError("invalid content-length") from None
        if not 0 <= length <= MAX_BODY_BYTES:
            raise BadRequestError("content-length out of range")
        body = await reader.readexactly(length) if length else b""
    return HttpRequest(parts[0], parts[1], parts[2], headers, body)


async def _read_chunked_body(reader: asyncio.StreamReader) -> bytes:
    pieces: list[bytes] = []
    total = 0
    while True:
        try:
            size = int((await reader.readuntil(b"\r\n")).split(b";", 1)[0].strip(), 16)
        except (ValueError, asyncio.LimitOverrunError):
            raise BadRequestError("malformed chunk size") from None
        if size == 0:
            while await reader.readuntil(b"\r\n") != b"\r\n":  # skip trailers
                pass
            return b"".join(pieces)
        total += size
        if total > MAX_BODY_BYTES:
            raise BadRequestError("chunked body too large")
        pieces.append(await reader.readexactly(size))
        if await reader.readexactly(2) != b"\r\n":
            raise BadRequestError("malformed chunk terminator")


class Responder:
    """Writes one response. `start` sends the head: with a Content-Length when given,
    else `Transfer-Encoding: chunked`, and then each `write` is one chunk on the wire.
    Every write is drained, so what was written has left the process before the next step.
    """

    __slots__ = ("_chunked", "_reader", "_writer", "aborted", "keep_alive", "started")

    def __init__(
        self,
        writer: asyncio.StreamWriter,
        keep_alive: bool,
        reader: asyncio.StreamReader | None = None,
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._chunked = False
        self.keep_alive = keep_alive
        self.started = False
        self.aborted = False

    def take_over(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """The connection's streams, for a handler that stops speaking HTTP on it (a
        CONNECT tunnel); the server reads no further request from it."""
        if self._reader is None:
            raise RuntimeError("this responder was made without its connection's reader")
        self.started = True
        self.keep_alive = False
        return self._reader, self._writer

    def _head(self, status: int, headers: Iterable[tuple[str, str]], framing: str) -> bytes:
        self.started = True
        lines = [
            f"HTTP/1.1 {status} {_REASONS.get(status, 'Unknown')}",
            framing,
            "connection: keep-alive" if self.keep_alive else "connection: close",
        ]
        lines.extend(f"{name}: {value}" for name, value in headers)
        lines += ["", ""]
        return "\r\n".join(lines).encode("latin-1")

    async def start(
        self, status: int, headers: Iterable[tuple[str, str]], content_length: int | None
    ) -> None:
        self._chunked = content_length is None
        framing = (
            "transfer-encoding: chunked" if self._chunked else f"content-length: {content_length}"
        )
        self._writer.write(self._head(status, headers, framing))
        await self._writer.drain()

    async def write(self, data: bytes) -> None:
        if self._chunked:
            data = b"%x\r\n%b\r\n" % (len(data), data)
        self._writer.write(data)
        await self._writer.drain()

    async def end(self) -> None:
        if self._chunked:
            self._writer.write(b"0\r\n\r\n")
            await self._writer.drain()

    async def send(self, status: int, headers: Iterable[tuple[str, str]], body: bytes) -> None:
        """A complete response with a Content-Length body, in one write."""
        self._writer.write(self._head(status, headers, f"content-length: {len(body)}") + body)
        await self._writer.drain()

    def abort(self) -> None:
        """Close the TCP connection now: no further bytes, no chunked terminator."""
        self.aborted = True
        self._writer.transport.abort()


class HttpServer:
    """Serves `handler` on host:port inside the running event loop."""

    def __init__(
        self, handler: Handler, host: str, port: int, tls: ssl.SSLContext | None = None
    ) -> None:
        self._handler = handler
        self._host = host
        self._port = port
        self._tls = tls  # None: plain HTTP
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> int:
        """Bind and listen; returns the bound port."""
        self._server = await asyncio.start_server(
            self._serve, self._host, self._port, limit=MAX_HEAD_BYTES, backlog=2048, ssl=self._tls
        )
        port: int = self._server.sockets[0].getsockname()[1]
        return port

    async def close(self) -> None:
        """Stop listening and cut every open connection, including ones mid-response."""
        if self._server is not None:
            self._server.close()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        # With a zero high-water mark, drain() returns only once every byte written has
        # reached the kernel, so an abort right after a drain never loses earlier chunks.
        # Not over TLS: asyncio's TLS transport (3.11) then never resumes a paused writer.
        if self._tls is None:
            writer.transport.set_write_buffer_limits(high=0)
        try:
            await self._serve_requests(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            writer.transport.abort()  # the client went away; nothing to answer
        except asyncio.CancelledError:
            # The server is stopping: cut the connection now. The cancellation ends here,
            # as asyncio (3.11) calls task.exception() on these tasks and would log it.
            writer.transport.abort()
        finally:
            if task is not None:
                self._tasks.discard(task)
            if not writer.transport.is_closing():
                writer.close()

    async def _serve_requests(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        while True:
            try:
                request = await read_request(reader)
            except BadRequestError as exc:
                body = f"{exc}\n".encode()
                await Responder(writer, keep_alive=False).send(
                    400, [("content-type", "text/plain")], body
                )
                return
            if request is None:
                return
            responder = Responder(writer, _wants_keep_alive(request), reader)
            await self._handler(request, responder)
            if responder.aborted or not responder.started or not responder.keep_alive:
                return


class ServerThread:
    """An `HttpServer` on a daemon thread with its own event loop, so sync tests and tests
    on any event loop can use it alike."""

    def __init__(
        self,
        handler: Handler,
        host: str,
        port: int,
        *,
        name: str,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self._server = HttpServer(handler, host, port, tls)
        self._name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> int:
        """Start the thread, bind and listen; returns the bound port."""
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name=self._name, daemon=True)
        thread.start()
        self._loop, self._thread = loop, thread
        try:
            return asyncio.run_coroutine_threadsafe(self._server.start(), loop).result(10)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Close the server (cutting open connections), then end the loop and the thread."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        try:
            asyncio.run_coroutine_threadsafe(self._server.close(), loop).result(10)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(10)
            loop.close()
            self._loop = self._thread = None


def _wants_keep_alive(request: HttpRequest) -> bool:
    connection = request.headers.get("connection", "").lower()
    if request.version == "HTTP/1.0":
        return "keep-alive" in connection
    return "close" not in connection
