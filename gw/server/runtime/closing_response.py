"""The bytes of a refusal the server protocol writes itself, then closes the connection.

The protocol (gw/server/runtime/protocol.py) refuses some requests before any ASGI app
sees them: a head too slow (408) or too large (431), bytes that are not HTTP (400), a
WebSocket upgrade (403). Each answer is written here as uvicorn writes its own 400: its
status lines (``STATUS_LINE``, from uvicorn's httptools protocol module) and the server's
default headers, then gw's error body.
"""

from __future__ import annotations

from uvicorn.protocols.http.httptools_impl import STATUS_LINE

from gw.codecs.openai_chat import encode_error
from gw.errors import GatewayError


def closing_response(
    status: int, default_headers: list[tuple[bytes, bytes]], error: GatewayError
) -> bytes:
    """A response that closes the connection: ``error`` in OpenAI's error shape, as every
    other gw error (no request id: no request was read)."""
    body = encode_error(error, gw_block={"code": error.code})
    content = [STATUS_LINE[status]]
    for name, value in default_headers:
        content += [name, b": ", value, b"\r\n"]
    length = str(len(body)).encode()
    content.append(b"content-type: application/json\r\ncontent-length: " + length)
    content += [b"\r\nconnection: close\r\n\r\n", body]
    return b"".join(content)
