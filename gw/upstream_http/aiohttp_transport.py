"""HttpTransport over one pooled aiohttp ClientSession (``server.upstream_transport: aiohttp``)."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import socket
from collections.abc import AsyncIterator, Callable, Mapping
from types import SimpleNamespace

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult

from gw.errors import GatewayError, OverloadedError
from gw.ports import AttemptTimeouts
from gw.upstream_http.aiohttp_errors import CAUGHT, map_aiohttp_error
from gw.upstream_http.http_transport import MAX_ERROR_BODY_BYTES, HttpReply
from gw.upstream_http.reply_budget import ReplyBudget
from gw.upstream_http.upstream_address import AddressRefusedError, address_refusal, refused


def build_session(
    max_connections: int = 512, max_per_host: int | None = None
) -> aiohttp.ClientSession:
    """The one pooled session every HTTP adapter shares; build it inside the running loop."""
    connector = aiohttp.TCPConnector(
        limit=max_connections,
        limit_per_host=max_per_host or 0,  # 0: no cap per host
        keepalive_timeout=30.0,
        ttl_dns_cache=300,
        resolver=CheckedResolver(aiohttp.DefaultResolver()),
    )
    return aiohttp.ClientSession(
        connector=connector,
        trace_configs=[_pool_wait_trace()],
        # No cookies kept: one session serves every tenant and account, so a cookie one
        # upstream answer set must not ride along on the next request (nor cost a lookup).
        cookie_jar=aiohttp.DummyCookieJar(),
        trust_env=False,
        auto_decompress=True,
        skip_auto_headers=("User-Agent",),
        headers={"user-agent": "gw"},
    )


@functools.lru_cache(maxsize=64)  # a handful of configured values; built per request before
def _timeout(timeouts: AttemptTimeouts, *, streaming: bool) -> aiohttp.ClientTimeout:
    # No total: the engine bounds whole attempts. No sock_read for streams: the engine
    # times their first token and idle gaps, and sock_read re-arms a timer on every chunk.
    return aiohttp.ClientTimeout(
        total=None,
        sock_connect=timeouts.connect,
        connect=timeouts.connect,
        sock_read=None if streaming else timeouts.read,
    )


class PoolWait:
    """Whether a request is waiting for a free pooled connection. aiohttp's ``connect``
    timeout spans that wait and the connect alike, with one error for both; its public
    trace signals say which it was, so a full pool is gw's own saturation (503
    ``overloaded``, blamed on the gateway), never the upstream's connect timeout."""

    __slots__ = ("waiting",)

    def __init__(self) -> None:
        self.waiting = False

    def error(
        self, error: BaseException, provider: str, session: aiohttp.ClientSession
    ) -> GatewayError:
        """``error`` as gw reports it, knowing whether the pool wait was running."""
        if self.waiting and isinstance(error, TimeoutError):
            connector = session.connector
            limit = connector.limit if connector is not None else 0
            per_host = (connector.limit_per_host if connector is not None else 0) or None
            return OverloadedError(
                f"provider {provider}: gw's upstream connection pool is full (caps: "
                f"server.upstream_max_connections {limit}, "
                f"server.upstream_max_connections_per_host {per_host}); "
                "raise them, or lower server.max_concurrency",
                blame="gateway",
                retry_after=1.0,
            )
        return map_aiohttp_error(error, provider=provider)


async def _queued(_: object, context: SimpleNamespace, __: object) -> None:
    context.trace_request_ctx.waiting = True


async def _dequeued(_: object, context: SimpleNamespace, __: object) -> None:
    context.trace_request_ctx.waiting = False


def _pool_wait_trace() -> aiohttp.TraceConfig:
    trace = aiohttp.TraceConfig()
    trace.on_connection_queued_start.append(_queued)
    trace.on_connection_queued_end.append(_dequeued)
    return trace


class CheckedResolver(AbstractResolver):
    """``inner``'s answers, refused when one is link-local or a metadata address
    (gw/upstream_http/upstream_address.py): aiohttp connects to the addresses returned here."""

    def __init__(self, inner: AbstractResolver) -> None:
        self._inner = inner

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        answers = await self._inner.resolve(host, port, family)
        reason = address_refusal(host, [answer["host"] for answer in answers])
        if reason is not None:
            raise AddressRefusedError(reason)  # not an OSError: aiohttp lets it through
        return answers

    async def close(self) -> None:
        await self._inner.close()


class AiohttpStreamingReply:
    def __init__(self, response: aiohttp.ClientResponse, provider: str) -> None:
        self.status = response.status
        self.headers: Mapping[str, str] = response.headers
        self._response = response
        self._provider = provider

    async def chunks(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._response.content.iter_any():
                yield chunk
        except CAUGHT as error:
            raise map_aiohttp_error(error, provider=self._provider) from None

    def relay(self, sink: Callable[[bytes], bool]) -> asyncio.Future[bool] | None:
        return None  # read through chunks()

    def stop_relay(self) -> None:
        pass

    async def read_error_body(self) -> bytes:
        try:
            return await self._response.content.read(MAX_ERROR_BODY_BYTES)
        except CAUGHT:
            return b""  # the status alone still classifies the error


class AiohttpTransport:
    def __init__(self, session: aiohttp.ClientSession, budget: ReplyBudget | None = None) -> None:
        self._session = session
        self._budget = budget or ReplyBudget()  # a whole answer's memory (reply_budget.py)

    async def post(
        self,
        url: str,
        *,
        headers: Mapping[str, str],
        body: bytes,
        timeouts: AttemptTimeouts,
        provider: str,
    ) -> HttpReply:
        wait = PoolWait()
        try:
            async with self._session.post(
                url,
                data=body,
                headers=headers,
                timeout=_timeout(timeouts, streaming=False),
                allow_redirects=False,
                trace_request_ctx=wait,
            ) as response:
                compressed = "content-encoding" in response.headers  # length before decoding
                declared = None if compressed else response.content_length
                chunks = response.content.iter_any()
                content = await self._budget.read(chunks, provider, declared=declared)
                return HttpReply(status=response.status, headers=response.headers, body=content)
        except CAUGHT as error:
            raise wait.error(error, provider, self._session) from None
        except AddressRefusedError as refusal:
            raise refused(provider, refusal.reason) from None

    @contextlib.asynccontextmanager
    async def post_streaming(
        self,
        url: str,
        *,
        headers: Mapping[str, str],
        body: bytes,
        timeouts: AttemptTimeouts,
        provider: str,
    ) -> AsyncIterator[AiohttpStreamingReply]:
        wait = PoolWait()
        try:
            response = await self._session.post(
                url,
                data=body,
                headers=headers,
                timeout=_timeout(timeouts, streaming=True),
                allow_redirects=False,
                trace_request_ctx=wait,
            )
        except CAUGHT as error:
            raise wait.error(error, provider, self._session) from None
        except AddressRefusedError as refusal:
            raise refused(provider, refusal.reason) from None
        try:
            yield AiohttpStreamingReply(response, provider)
        finally:
            # close(), not release(): a stream cut short must not go back to the pool.
            response.close()

    async def close(self) -> None:
        await self._session.close()
