"""WebSocket upgrades refused by the HTTP protocol itself: gw serves no WebSocket route.

Given a WebSocket library, uvicorn imports it at start (~20 ms) only to hand each upgrade
to the app, which refuses it with 403 (gw has no WebSocket route). Without one, uvicorn
would answer the upgrade request as plain HTTP and log two warnings for it. Here the
protocol answers 403, as before, without a WebSocket library (``uvicorn.Config(ws="none")``).
Any other upgrade (``h2c``) is answered as plain HTTP/1.1, as RFC 9110 allows, silently.
"""

from __future__ import annotations

from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol


class WebSocketRefusingProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, closing a WebSocket upgrade with 403 Forbidden."""

    def _should_upgrade(self) -> bool:
        # True keeps the request from the app; uvicorn then calls the method below.
        return self._get_upgrade() == b"websocket"

    def _unsupported_upgrade_warning(self) -> None:
        pass  # an upgrade gw does not speak: the request is served as HTTP/1.1

    def handle_websocket_upgrade(self) -> None:
        content = [STATUS_LINE[403]]
        for name, value in self.server_state.default_headers:
            content += [name, b": ", value, b"\r\n"]
        content.append(b"content-length: 0\r\nconnection: close\r\n\r\n")
        self.transport.write(b"".join(content))
        self.transport.close()
