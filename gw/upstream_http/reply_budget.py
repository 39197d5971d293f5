"""Memory for whole upstream answers: each one capped, and all of them together.

A non-streamed answer is held whole before it is decoded. Without a bound per answer, one
upstream (or a hostile base URL) sending 100 MB makes gw hold 100 MB; without a bound over
all of them, many concurrent answers just under the cap add up (eight 100 MB answers took
gw from 93 MB to 590 MB). So every transport reads a whole answer through ``ReplyBudget``:

- an answer over ``server.max_upstream_body_bytes`` fails as ``upstream_error`` (502), the
  message saying the answer was too large; a declared ``Content-Length`` over it fails
  before any of the body is read;
- while answers being read hold ``server.upstream_buffer_budget`` bytes together, one that
  would go past it fails as ``overloaded`` (503, Retry-After), blamed on the gateway, and
  its bytes are let go.

Bytes are counted as they arrive (after decompression, so a gzip bomb meets the same cap)
and given back once the answer is read; decoding it is the request's own business. A
stream is not held whole, and is not counted (each connection's buffer is bounded:
gw/upstream_http/h1_connection.py).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Final

from gw.errors import OverloadedError, UpstreamError

MIB: Final = 1024 * 1024
DEFAULT_MAX_REPLY_BYTES: Final = 16 * MIB
DEFAULT_BUFFER_BUDGET_BYTES: Final = 256 * MIB
BUDGET_RETRY_AFTER_S: Final = 1.0  # answers being read finish in well under a second or so


class ReplyBudget:
    def __init__(
        self,
        max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES,
        total_bytes: int = DEFAULT_BUFFER_BUDGET_BYTES,
    ) -> None:
        self.max_reply_bytes = max_reply_bytes
        self.total_bytes = total_bytes
        self.held = 0  # bytes of answers being read right now

    async def read(
        self, chunks: AsyncIterator[bytes], provider: str, *, declared: int | None = None
    ) -> bytes:
        """The whole body ``chunks`` yields, within both bounds; ``declared`` is the
        answer's Content-Length when its body is not compressed."""
        if declared is not None and declared > self.max_reply_bytes:
            raise self.too_large(provider)
        parts: list[bytes] = []
        size = 0
        try:
            async for data in chunks:
                size += len(data)
                self._claim(len(data), size, provider)
                parts.append(data)
            return b"".join(parts)
        finally:
            self.held -= size

    def _claim(self, more: int, size: int, provider: str) -> None:
        self.held += more  # given back, with the rest of this answer, in read's finally
        if size > self.max_reply_bytes:
            raise self.too_large(provider)
        if self.held > self.total_bytes:
            raise OverloadedError(
                f"provider {provider}: whole upstream answers being read would take "
                f"{self.held / MIB:.1f} MiB, over server.upstream_buffer_budget "
                f"({_size(self.total_bytes)}); retry shortly",
                retry_after=BUDGET_RETRY_AFTER_S,
                blame="gateway",
            )

    def too_large(self, provider: str) -> UpstreamError:
        return UpstreamError(
            f"provider {provider}: the upstream answer is too large: over "
            f"{_size(self.max_reply_bytes)}, gw's cap for a whole answer "
            "(server.max_upstream_body_bytes; a stream has no such cap)",
            blame="upstream",
        )


def _size(count: int) -> str:
    return f"{count // MIB} MiB" if count % MIB == 0 else f"{count} bytes"
