"""A streamed response body written straight to the client's socket, from any callback.

uvicorn's ``send`` is a coroutine, so a stream relayed from the upstream connection's
read callback (``OpenStream.relay``) could only reach the client through a task step
per chunk. gw's server protocol (gw/server/runtime/protocol.py) hands each request a
``DirectBody``: it writes one piece of a started, chunked response body, byte for byte as
uvicorn's ``send`` would, when it can go out now (the response is under way and the client
is there and taking data), and declines otherwise. The caller then awaits ``send``, which
waits for the client.

It reads the response state of uvicorn's ``RequestResponseCycle`` (``flow.write_paused``,
``disconnected``, ``transport``, ``response_started``, ``response_complete``,
``chunked_encoding``) and writes the chunk framing ``send`` writes; uvicorn is pinned and
tests/unit/server/runtime/test_internals.py checks those names.
"""

from __future__ import annotations

from typing import Any

from uvicorn.protocols.http.httptools_impl import RequestResponseCycle

DIRECT_BODY = "gw.direct_body"  # the ASGI scope extension: {"writer": DirectBody}


class DirectBody:
    """Writes body pieces of one request's response (its uvicorn cycle)."""

    __slots__ = ("_cycle",)

    def __init__(self, cycle: RequestResponseCycle) -> None:
        self._cycle = cycle

    def write(self, data: bytes) -> bool:
        """Write ``data`` as one chunk; False, writing nothing, unless it can go now."""
        cycle = self._cycle
        if (
            cycle.flow.write_paused
            or cycle.disconnected
            or cycle.transport.is_closing()  # gone, though a pipelined cycle holds the news
            or cycle.response_complete
            or not cycle.response_started
            or not cycle.chunked_encoding  # HEAD, or a length was declared
        ):
            return False
        cycle.transport.write(b"%x\r\n%s\r\n" % (len(data), data))
        return True


def direct_body(scope: Any) -> DirectBody | None:
    """The request's writer, when the server that made ``scope`` is gw's own."""
    extension = (scope.get("extensions") or {}).get(DIRECT_BODY) or {}
    writer = extension.get("writer")
    return writer if isinstance(writer, DirectBody) else None
