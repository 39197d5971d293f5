"""Read a request body without ever holding more than the configured limit."""

from __future__ import annotations

from gw.codecs.fields import decimal
from gw.errors import ClientAbortedError, InvalidRequestError, RequestTooLargeError
from gw.server.services import HttpRequest


async def read_body(request: HttpRequest, limit: int) -> bytes:
    """The whole body, from the server's ``receive`` directly (Litestar's ``stream()``
    needs Litestar's routing state, which the inference fast path does not build)."""
    declared = request.headers.get("content-length")
    if declared is not None:
        length = decimal(declared)
        if length is None:
            raise InvalidRequestError("the Content-Length header is not a number")
        if length > limit:
            raise _too_large(limit)
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await request.receive()
        if message["type"] != "http.request":  # http.disconnect
            raise ClientAbortedError("the client left before its request body arrived")
        chunk = message.get("body", b"")
        if chunk:
            size += len(chunk)
            if size > limit:
                raise _too_large(limit)
            chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def _too_large(limit: int) -> RequestTooLargeError:
    return RequestTooLargeError(
        f"the request body is larger than server.max_body_bytes ({limit} bytes)"
    )
