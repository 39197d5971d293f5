"""The seam under every HTTP adapter: one POST, answered whole or as a stream of bytes.

Adapters speak a wire format; a transport only moves bytes. Two implementations exist,
chosen by ``server.upstream_transport`` (see DESIGN.md, "Known traps": the upstream client
decides gw's speed): builtin (gw's own HTTP/1.1 client, the default and the fastest measured
here) and httpx (also what reaches upstreams through a proxy: env_proxy.py). Each turns its
failures into gw errors, so adapters only ever see ``GatewayError``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from typing import Protocol

import msgspec

from gw.config.schema import ProviderTls
from gw.ports import AttemptTimeouts

MAX_ERROR_BODY_BYTES = 64 * 1024


class HttpReply(msgspec.Struct, frozen=True, kw_only=True):
    status: int
    headers: Mapping[str, str]
    body: bytes


class StreamingReply(Protocol):
    status: int
    headers: Mapping[str, str]

    def chunks(self) -> AsyncIterator[bytes]:
        """The body as it arrives; transport failures raise ``GatewayError``."""
        ...

    async def read_error_body(self) -> bytes:
        """At most ``MAX_ERROR_BODY_BYTES`` of the body (for a failed status)."""
        ...

    def relay(self, sink: Callable[[bytes], bool]) -> asyncio.Future[bool] | None:
        """Push the body to ``sink`` from the read callback (``H1Connection.relay``), or
        None when this transport cannot: ``chunks`` is read instead."""
        ...

    def stop_relay(self) -> None:
        """Detach the sink of a ``relay`` whose reader stopped waiting for it."""
        ...


class HttpTransport(Protocol):
    async def post(
        self,
        url: str,
        *,
        headers: Mapping[str, str],
        body: bytes,
        timeouts: AttemptTimeouts,
        provider: str,
        tls: ProviderTls | None = None,
    ) -> HttpReply:
        """``tls``: the provider's TLS settings (gw/upstream_http/tls.py); None: the
        system's trust store."""
        ...

    def post_streaming(
        self,
        url: str,
        *,
        headers: Mapping[str, str],
        body: bytes,
        timeouts: AttemptTimeouts,
        provider: str,
        tls: ProviderTls | None = None,
    ) -> AbstractAsyncContextManager[StreamingReply]:
        """Leaving the context closes the response (and so cancels the upstream request)."""
        ...

    async def close(self) -> None: ...
