"""WebSocket upgrades refused by the HTTP protocol itself: gw serves no WebSocket route.

Given a WebSocket library, uvicorn imports it at start (~20 ms) only to hand each upgrade
to the app, which refuses it with 403 (gw has no WebSocket route). Without one, uvicorn
would answer the upgrade request as plain HTTP and log that no library is installed. Here
the protocol answers 403 and closes, without a WebSocket library
(``uvicorn.Config(ws="none")``), once the responses to requests pipelined before it are
out. Any other upgrade (``h2c``) is left to uvicorn, with the one warning it always logged.
"""

from __future__ import annotations

from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from gw.codecs.openai_chat import encode_error
from gw.errors import GatewayError, PermissionDeniedError

NO_WEBSOCKETS = "gw serves no WebSocket endpoint; use HTTP"


def closing_response(
    status: int, default_headers: list[tuple[bytes, bytes]], error: GatewayError
) -> bytes:
    """A response that closes the connection, written by the protocol itself: ``error`` in
    OpenAI's error shape, as every other gw error (no request id: no request was read)."""
    body = encode_error(error, gw_block={"code": error.code})
    content = [STATUS_LINE[status]]
    for name, value in default_headers:
        content += [name, b": ", value, b"\r\n"]
    length = str(len(body)).encode()
    content.append(b"content-type: application/json\r\ncontent-length: " + length)
    content += [b"\r\nconnection: close\r\n\r\n", body]
    return b"".join(content)


class WebSocketRefusingProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, closing a WebSocket upgrade with 403 Forbidden."""

    _refusing = False  # an upgrade arrived; refused once earlier responses are out

    def _should_upgrade(self) -> bool:
        # True keeps the request from the app; uvicorn then calls the method below.
        return self._get_upgrade() == b"websocket"

    def _unsupported_upgrade_warning(self) -> None:
        self.logger.warning("Unsupported upgrade request.")

    def handle_websocket_upgrade(self) -> None:
        self._refusing = True
        self._refuse_when_answered()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self._refusing:
            self._refuse_when_answered()

    def _refuse_when_answered(self) -> None:
        # ``cycle`` is the last request read before the upgrade: answered last.
        if self.transport.is_closing() or not (self.cycle is None or self.cycle.response_complete):
            return
        self.transport.write(
            closing_response(
                403, self.server_state.default_headers, PermissionDeniedError(NO_WEBSOCKETS)
            )
        )
        self.transport.close()
