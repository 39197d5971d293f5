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

The head is bounded in size too: ``MAX_HEAD_BYTES`` read without the headers completing,
or more than ``MAX_HEADERS`` header lines, get a bare 431 and the connection is closed
(uvicorn bounds neither; within the timeout, a client could fill memory).

The body is bounded elsewhere: gw reads it within server.body_timeout
(``gw/server/ingress.py``).
"""

from __future__ import annotations

import asyncio

import httptools

from gw.server.direct_body import DirectBodyProtocol
from gw.server.disconnect import HangUpNoticeProtocol
from gw.server.no_websockets import WebSocketRefusingProtocol, closing_response


class HeaderTimeoutProtocol(HangUpNoticeProtocol, DirectBodyProtocol, WebSocketRefusingProtocol):
    """uvicorn's httptools protocol (telling requests of hang-ups: gw/server/disconnect.py;
    writing relayed stream bodies: gw/server/direct_body.py; refusing WebSocket upgrades:
    gw/server/no_websockets.py), closing connections whose headers come too slowly."""

    header_timeout: float = 10.0  # seconds; set by header_timeout_protocol()

    _header_timer: asyncio.TimerHandle | None = None
    _in_head = False  # a request has begun and its headers are not complete yet
    _head_bytes = 0  # bytes received while a head was incomplete
    _head_too_large = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_header_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_header_timer()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self._in_head and not self._head_too_large:
            self._head_bytes += len(data)
            if self._head_bytes > MAX_HEAD_BYTES:
                self._refuse_head()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._in_head = True
        self._head_bytes = 0
        # The request's first byte: its headers get the whole budget, however long the
        # connection sat idle before (that wait had its own, the same length).
        self._arm_header_timer()

    def on_headers_complete(self) -> None:
        # The headers are in: the timer stops before super(), which may refuse an upgrade.
        self._cancel_header_timer()
        self._in_head = False
        if len(self.headers) > MAX_HEADERS:
            self._head_too_large = True
            raise HeadTooLargeError  # stops the parser; uvicorn answers it below
        super().on_headers_complete()

    def send_400_response(self, msg: str) -> None:
        if self._head_too_large:
            self._refuse_head()
        else:
            super().send_400_response(msg)

    def _refuse_head(self) -> None:
        self._head_too_large = True
        self._cancel_header_timer()
        if not self.transport.is_closing():
            self.transport.write(closing_response(431, self.server_state.default_headers))
            self.transport.close()

    def on_response_complete(self) -> None:
        # A pipelined request waiting behind this response already has its headers.
        pipelined = bool(self.pipeline)
        super().on_response_complete()
        if not pipelined and not self.transport.is_closing():
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
            self.transport.write(closing_response(408, self.server_state.default_headers))
        self.transport.close()


MAX_HEAD_BYTES = 64 * 1024
MAX_HEADERS = 128


class HeadTooLargeError(httptools.HttpParserError):
    """More header lines than ``MAX_HEADERS``."""


def header_timeout_protocol(seconds: float) -> type[HeaderTimeoutProtocol]:
    """The protocol class to pass as ``uvicorn.Config(http=...)``, bound to ``seconds``."""
    if seconds <= 0:
        raise ValueError("server.header_timeout must be longer than 0s")
    return type("HeaderTimeoutProtocol", (HeaderTimeoutProtocol,), {"header_timeout": seconds})
