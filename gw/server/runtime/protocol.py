"""Bound the time a client may take to send a request's headers (server.header_timeout).

uvicorn bounds the idle wait between requests on a kept-alive connection, but not the
header read: a client that connects and sends nothing, or one header byte now and then,
holds its connection forever (uvicorn's keep-alive timer is cancelled by any byte).
``header_timeout_protocol`` returns uvicorn's httptools protocol with one more timer.

Strategy: one loop timer per wait for headers, not per byte. It is armed when the
connection opens, again when a response completes on a kept-alive connection with no
pipelined request behind it, and once more at a request's first byte; it is cancelled
when the headers are complete or the connection is lost. On expiry, a client that has
begun a request gets a bare 408 and the connection is closed; an idle one is closed
silently, as uvicorn's keep-alive timer does, since a client may already be reusing that
connection for a request of its own.

The head is bounded in size too: a URL and header lines over ``MAX_HEAD_BYTES``, or more
than ``MAX_HEADERS`` lines, get a bare 431 and the connection is closed (after a response
under way, for a pipelined request); uvicorn bounds neither, and within the timeout a
client could fill memory. A header line still arriving is held by the parser, so reads
spent inside one head are bounded by the same size.

The body is bounded elsewhere: gw reads it within server.body_timeout
(``gw/server/inference/ingress.py``).
"""

from __future__ import annotations

import asyncio

import httptools

from gw.errors import InvalidRequestError, RequestTimeoutError, RequestTooLargeError
from gw.server.runtime.closing_response import WebSocketRefusingProtocol, closing_response
from gw.server.runtime.direct_body import DirectBodyProtocol
from gw.server.runtime.disconnect import HangUpNoticeProtocol


class HeaderTimeoutProtocol(HangUpNoticeProtocol, DirectBodyProtocol, WebSocketRefusingProtocol):
    """uvicorn's httptools protocol (telling requests of hang-ups: gw/server/runtime/disconnect.py;
    writing relayed stream bodies: gw/server/runtime/direct_body.py; refusing WebSocket upgrades:
    gw/server/runtime/closing_response.py), closing connections whose headers come too slowly."""

    header_timeout: float = 10.0  # seconds; set by header_timeout_protocol()

    _header_timer: asyncio.TimerHandle | None = None
    _in_head = False  # a request has begun and its headers are not complete yet
    _head_bytes = 0  # the head's URL and header lines, as the parser completes them
    _unfinished_bytes = 0  # reads that ended inside one head (see data_received)
    _head_refused = False  # a head was too large: 431 once any response under way is out

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_header_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_header_timer()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._head_refused:
            return  # nothing more is read from this client
        in_head = self._in_head
        super().data_received(data)
        # A header line still incomplete is held by the parser: bound it by the reads that
        # ended inside the head. The read it began in counts unless an earlier request is
        # still being answered (then that read may hold the end of its body).
        if self._in_head and (in_head or self.cycle is None or self.cycle.response_complete):
            self._unfinished_bytes += len(data)
            if self._unfinished_bytes > MAX_HEAD_BYTES:
                self._refuse_head()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._in_head = True
        self._head_bytes = self._unfinished_bytes = 0
        # The request's first byte: its headers get the whole budget, however long the
        # connection sat idle before (that wait had its own, the same length).
        self._arm_header_timer()

    def on_url(self, url: bytes) -> None:
        super().on_url(url)
        self._head_bytes += len(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        super().on_header(name, value)
        self._head_bytes += len(name) + len(value) + 4  # ": " and CRLF

    def on_headers_complete(self) -> None:
        # The headers are in: the timer stops before super(), which may refuse an upgrade.
        self._cancel_header_timer()
        self._in_head = False
        if len(self.headers) > MAX_HEADERS or self._head_bytes > MAX_HEAD_BYTES:
            self._refuse_head()
            raise HeadTooLargeError  # stops the parser; send_400_response below is a no-op
        super().on_headers_complete()

    def send_400_response(self, msg: str) -> None:
        """uvicorn's answer to bytes that are not HTTP/1.1, in gw's JSON error shape."""
        if not self._head_refused and not self.transport.is_closing():
            refusal = InvalidRequestError(NOT_HTTP)
            self.transport.write(closing_response(400, self.server_state.default_headers, refusal))
            self.transport.close()

    def _refuse_head(self) -> None:
        """Answer 431 and close; after the response under way, if a pipelined head was
        refused while an earlier request was still being answered."""
        self._head_refused = True
        self._cancel_header_timer()
        if self.cycle is None or self.cycle.response_complete:
            self._send_431()

    def _send_431(self) -> None:
        if not self.transport.is_closing():
            refusal = RequestTooLargeError(HEAD_TOO_LARGE)
            self.transport.write(closing_response(431, self.server_state.default_headers, refusal))
            self.transport.close()

    def on_response_complete(self) -> None:
        # A pipelined request waiting behind this response already has its headers.
        pipelined = bool(self.pipeline)
        super().on_response_complete()
        if self._head_refused:
            self._send_431()
        elif not pipelined and not self.transport.is_closing():
            self._arm_header_timer()

    def _arm_header_timer(self) -> None:
        self._cancel_header_timer()
        self._header_timer = self.loop.call_later(self.header_timeout, self._header_timed_out)

    def _cancel_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _header_timed_out(self) -> None:
        self._header_timer = None
        if self.transport.is_closing():
            return
        # The timer only runs while no request is being served, so no response has begun.
        if self._in_head and (self.cycle is None or self.cycle.response_complete):
            refusal = RequestTimeoutError(HEADERS_TOO_SLOW)
            self.transport.write(closing_response(408, self.server_state.default_headers, refusal))
        self.transport.close()


MAX_HEAD_BYTES = 64 * 1024
MAX_HEADERS = 128
HEAD_TOO_LARGE = "the request's URL and headers are over 64 KiB or 128 lines"
HEADERS_TOO_SLOW = "the request's headers did not arrive within server.header_timeout"
NOT_HTTP = "the request is not valid HTTP/1.1 (its request line or a header is malformed)"


class HeadTooLargeError(httptools.HttpParserError):
    """A complete head over ``MAX_HEAD_BYTES`` or ``MAX_HEADERS``: raised in the parser's
    callback to stop it (uvicorn catches parser errors)."""


def header_timeout_protocol(seconds: float) -> type[HeaderTimeoutProtocol]:
    """The protocol class to pass as ``uvicorn.Config(http=...)``, bound to ``seconds``."""
    if seconds <= 0:
        raise ValueError("server.header_timeout must be longer than 0s")
    return type("HeaderTimeoutProtocol", (HeaderTimeoutProtocol,), {"header_timeout": seconds})
