"""The one server protocol gw runs: uvicorn's httptools protocol, with six patches.

``gateway_protocol(seconds)`` is the class ``uvicorn.Config(http=...)`` gets
(gw/server/runtime/server.py). Each patch, why it exists, and what of uvicorn it relies on
(``HttpToolsProtocol`` in ``uvicorn.protocols.http.httptools_impl``: its parser callbacks,
its ``cycle`` (``RequestResponseCycle``), ``pipeline``, ``transport``, ``loop`` and
``server_state``; tests/unit/server/runtime/test_internals.py checks each):

1. Header deadline (``server.header_timeout``). uvicorn bounds the idle wait between
   requests on a kept-alive connection, but not the header read: a client that connects
   and sends nothing, or one header byte now and then, holds its connection forever
   (uvicorn's keep-alive timer is cancelled by any byte). One loop timer per wait for
   headers, not per byte: armed when the connection opens, again when a response
   completes on a kept-alive connection with no pipelined request behind it, and once more
   at a request's first byte; cancelled when the headers are complete or the connection is
   lost. On expiry, a client that has begun a request gets a bare 408 and the connection
   is closed; an idle one is closed silently, as uvicorn's keep-alive timer does, since a
   client may already be reusing that connection for a request of its own.
2. Head size. A URL and header lines over ``MAX_HEAD_BYTES``, or more than
   ``MAX_HEADERS`` lines, get a bare 431 and the connection is closed (after a response
   under way, for a pipelined request); uvicorn bounds neither, and within the deadline a
   client could fill memory. A header line still arriving is held by the parser, so reads
   spent inside one head are bounded by the same size. Relies on uvicorn catching
   ``httptools.HttpParserError`` raised from a parser callback (then calling
   ``send_400_response``). The body is bounded elsewhere: gw reads it within
   ``server.body_timeout`` (gw/server/inference/ingress.py).
3. Bytes that are not HTTP/1.1: uvicorn's plain-text 400 (``send_400_response``), in gw's
   JSON error shape instead.
4. Hang-up notice (gw/server/runtime/disconnect.py): each request's scope carries a hook
   that ``connection_lost`` calls while its response is unfinished, so gw cancels the
   request's work at once without a task per request watching ``receive()``.
5. Direct body writes (gw/server/runtime/direct_body.py): each request's scope carries a
   writer of its response's body chunks, usable from the upstream's read callback.
6. WebSocket refusal. gw serves no WebSocket route. Given a WebSocket library, uvicorn
   imports it at start (~20 ms) only to hand each upgrade to the app, which refuses it
   with 403; without one, uvicorn answers the upgrade request as plain HTTP and logs that
   no library is installed. Here the protocol answers 403 and closes, without a WebSocket
   library (``uvicorn.Config(ws="none")``), once the responses to requests pipelined
   before it are out. Any other upgrade (``h2c``) is left to uvicorn, with the one warning
   it always logged. Relies on uvicorn asking ``_should_upgrade`` and then calling
   ``handle_websocket_upgrade``, or ``_unsupported_upgrade_warning`` for the rest.

Strategy: one class, not a mixin per patch, so the order in which the patches run inside
each of uvicorn's callbacks is written down once, in the callback.
"""

from __future__ import annotations

import asyncio

import httptools
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from gw.errors import (
    GatewayError,
    InvalidRequestError,
    PermissionDeniedError,
    RequestTimeoutError,
    RequestTooLargeError,
)
from gw.server.runtime.closing_response import closing_response
from gw.server.runtime.direct_body import DIRECT_BODY, DirectBody
from gw.server.runtime.disconnect import CLIENT_GONE, ClientGoneHook, client_gone_hook

MAX_HEAD_BYTES = 64 * 1024
MAX_HEADERS = 128
HEAD_TOO_LARGE = "the request's URL and headers are over 64 KiB or 128 lines"
HEADERS_TOO_SLOW = "the request's headers did not arrive within server.header_timeout"
NOT_HTTP = "the request is not valid HTTP/1.1 (its request line or a header is malformed)"
NO_WEBSOCKETS = "gw serves no WebSocket endpoint; use HTTP"


class HeadTooLargeError(httptools.HttpParserError):
    """A complete head over ``MAX_HEAD_BYTES`` or ``MAX_HEADERS``: raised in the parser's
    callback to stop it (uvicorn catches parser errors)."""


class GatewayProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with gw's patches (numbered as in the module's doc)."""

    header_timeout: float = 10.0  # seconds; set by gateway_protocol()

    _header_timer: asyncio.TimerHandle | None = None  # 1
    _in_head = False  # 1: a request has begun and its headers are not complete yet
    _head_bytes = 0  # 2: the head's URL and header lines, as the parser completes them
    _unfinished_bytes = 0  # 2: reads that ended inside one head (see data_received)
    _head_refused = False  # 2: a head was too large: 431 once any response under way is out
    _refusing_upgrade = False  # 6: an upgrade arrived; refused once earlier responses are out

    # uvicorn's protocol callbacks

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_header_timer()  # 1

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_header_timer()  # 1
        cycle = self.cycle
        super().connection_lost(exc)
        if cycle is not None and not cycle.response_complete:  # 4
            hook = client_gone_hook(cycle.scope)
            if hook is not None:
                hook.client_left()

    def data_received(self, data: bytes) -> None:
        if self._head_refused:
            return  # 2: nothing more is read from this client
        in_head = self._in_head
        super().data_received(data)
        # 2: a header line still incomplete is held by the parser: bound it by the reads that
        # ended inside the head. The read it began in counts unless an earlier request is
        # still being answered (then that read may hold the end of its body).
        if self._in_head and (in_head or self._answered()):
            self._unfinished_bytes += len(data)
            if self._unfinished_bytes > MAX_HEAD_BYTES:
                self._refuse_head()

    # The parser's callbacks

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self.scope.setdefault("extensions", {})[CLIENT_GONE] = {"hook": ClientGoneHook()}  # 4
        self._in_head = True
        self._head_bytes = self._unfinished_bytes = 0
        # 1: the request's first byte: its headers get the whole budget, however long the
        # connection sat idle before (that wait had its own, the same length).
        self._arm_header_timer()

    def on_url(self, url: bytes) -> None:
        super().on_url(url)
        self._head_bytes += len(url)  # 2

    def on_header(self, name: bytes, value: bytes) -> None:
        super().on_header(name, value)
        self._head_bytes += len(name) + len(value) + 4  # 2: ": " and CRLF

    def on_headers_complete(self) -> None:
        # 1: the headers are in: the timer stops before super(), which may refuse an upgrade.
        self._cancel_header_timer()
        self._in_head = False
        if len(self.headers) > MAX_HEADERS or self._head_bytes > MAX_HEAD_BYTES:  # 2
            self._refuse_head()
            raise HeadTooLargeError  # stops the parser; send_400_response below is a no-op
        super().on_headers_complete()
        cycle = self.cycle
        if cycle is not None and cycle.scope is self.scope:  # 5: not an upgrade left to uvicorn
            self.scope.setdefault("extensions", {})[DIRECT_BODY] = {"writer": DirectBody(cycle)}

    def on_response_complete(self) -> None:
        pipelined = bool(self.pipeline)  # 1: a request waiting here already has its headers
        super().on_response_complete()
        if self._refusing_upgrade:  # 6
            self._refuse_upgrade_when_answered()
        if self._head_refused:  # 2
            self._send_closing(431, RequestTooLargeError(HEAD_TOO_LARGE))
        elif not pipelined and not self.transport.is_closing():  # 1
            self._arm_header_timer()

    # What uvicorn calls on a parser error and on an upgrade

    def send_400_response(self, msg: str) -> None:
        """3: uvicorn's answer to bytes that are not HTTP/1.1, in gw's JSON error shape."""
        if not self._head_refused:
            self._send_closing(400, InvalidRequestError(NOT_HTTP))

    def _should_upgrade(self) -> bool:
        # 6: True keeps the request from the app; uvicorn then calls the method below.
        return self._get_upgrade() == b"websocket"

    def _unsupported_upgrade_warning(self) -> None:
        # 6: uvicorn's own warning, without its advice to install a WebSocket library.
        self.logger.warning("Unsupported upgrade request.")

    def handle_websocket_upgrade(self) -> None:
        self._refusing_upgrade = True  # 6
        self._refuse_upgrade_when_answered()

    # The patches' own steps

    def _answered(self) -> bool:
        """No response is under way: ``cycle`` is the last request read, answered last."""
        return self.cycle is None or self.cycle.response_complete

    def _send_closing(self, status: int, error: GatewayError) -> None:
        if not self.transport.is_closing():
            headers = self.server_state.default_headers
            self.transport.write(closing_response(status, headers, error))
            self.transport.close()

    def _refuse_head(self) -> None:
        """2: answer 431 and close; after the response under way, if a pipelined head was
        refused while an earlier request was still being answered."""
        self._head_refused = True
        self._cancel_header_timer()
        if self._answered():
            self._send_closing(431, RequestTooLargeError(HEAD_TOO_LARGE))

    def _refuse_upgrade_when_answered(self) -> None:
        if self._answered():  # 6
            self._send_closing(403, PermissionDeniedError(NO_WEBSOCKETS))

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
        if self._in_head and self._answered():
            self._send_closing(408, RequestTimeoutError(HEADERS_TOO_SLOW))
        else:
            self.transport.close()


def gateway_protocol(header_timeout: float) -> type[GatewayProtocol]:
    """The protocol class to pass as ``uvicorn.Config(http=...)``, with headers due within
    ``header_timeout`` seconds."""
    if header_timeout <= 0:
        raise ValueError("server.header_timeout must be longer than 0s")
    return type("GatewayProtocol", (GatewayProtocol,), {"header_timeout": header_timeout})
