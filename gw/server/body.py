"""Read a request body without ever holding more than the configured limit."""

from __future__ import annotations

from gw.errors import InvalidRequestError, RequestTooLargeError
from gw.server.services import HttpRequest


async def read_body(request: HttpRequest, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.isdigit():
            raise InvalidRequestError("the Content-Length header is not a number")
        if int(declared) > limit:
            raise _too_large(limit)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _too_large(limit)
        chunks.append(chunk)
    return b"".join(chunks)


def _too_large(limit: int) -> RequestTooLargeError:
    return RequestTooLargeError(
        f"the request body is larger than server.max_body_bytes ({limit} bytes)"
    )
