"""HttpTransport over pooled httpx.AsyncClients (``server.upstream_transport: httpx``, and
every upstream reached through a proxy: env_proxy.py).

httpx takes its TLS context per client, so there is one client per provider TLS setting
(gw/upstream_http/tls.py): the one for providers without ``tls``, and one more for each
provider that has its own, made on first use; each has its own pool."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator, Callable, Mapping
from http.cookiejar import CookieJar, DefaultCookiePolicy

import httpx

from gw.config.schema import ProviderTls
from gw.ports import AttemptTimeouts
from gw.upstream_http.http_transport import MAX_ERROR_BODY_BYTES, HttpReply
from gw.upstream_http.reply_budget import ReplyBudget
from gw.upstream_http.tls import TlsContexts, build_tls_context
from gw.upstream_http.transport_errors import map_transport_error
from gw.upstream_http.upstream_address import CheckedHosts


def build_http_client(
    max_connections: int = 512,
    proxy: str | None = None,
    *,
    verify: ssl.SSLContext | None = None,
    proxy_verify: ssl.SSLContext | None = None,
) -> httpx.AsyncClient:
    """A pooled client, through ``proxy`` when given, verifying upstreams with ``verify``
    and an https proxy with ``proxy_verify`` (None: ``tls.build_tls_context()``, the
    system's store, never certifi's).

    The environment's proxy variables are gw's to read (gw/upstream_http/env_proxy.py), the
    same for every transport, and a ``.netrc`` must not add credentials: ``trust_env`` is
    off (SSL_CERT_FILE and SSL_CERT_DIR still apply: OpenSSL reads them, tls.py)."""
    via: httpx.Proxy | str | None = proxy
    # TLS to the proxy itself (httpx refuses a context for an http:// proxy)
    if proxy is not None and proxy.startswith("https:"):
        via = httpx.Proxy(proxy, ssl_context=proxy_verify or build_tls_context())
    return httpx.AsyncClient(
        proxy=via,
        trust_env=False,
        verify=verify or build_tls_context(),
        limits=httpx.Limits(
            max_connections=max_connections,
            max_keepalive_connections=max_connections,
            keepalive_expiry=30.0,
        ),
        follow_redirects=False,
        # No cookies kept: one client serves every tenant and account, so a cookie one
        # upstream answer set must not ride along on the next request. A jar no domain
        # may enter.
        cookies=CookieJar(policy=DefaultCookiePolicy(allowed_domains=[])),
    )


_DEFAULT_PORTS = {"http": 80, "https": 443}


def _timeout(timeouts: AttemptTimeouts) -> httpx.Timeout:
    return httpx.Timeout(
        connect=timeouts.connect, read=timeouts.read, write=timeouts.read, pool=timeouts.connect
    )


class HttpxStreamingReply:
    def __init__(self, response: httpx.Response, provider: str) -> None:
        self.status = response.status_code
        self.headers: Mapping[str, str] = response.headers
        self._response = response
        self._provider = provider

    async def chunks(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._response.aiter_bytes():
                yield chunk
        except httpx.RequestError as error:
            raise map_transport_error(error, provider=self._provider) from None

    def relay(self, sink: Callable[[bytes], bool]) -> asyncio.Future[bool] | None:
        return None  # read through chunks()

    def stop_relay(self) -> None:
        pass

    async def read_error_body(self) -> bytes:
        chunks: list[bytes] = []
        size = 0
        try:
            async for chunk in self._response.aiter_bytes():
                chunks.append(chunk)
                size += len(chunk)
                if size >= MAX_ERROR_BODY_BYTES:
                    break
        except httpx.RequestError:
            pass  # the status alone still classifies the error
        return b"".join(chunks)[:MAX_ERROR_BODY_BYTES]


class HttpxTransport:
    def __init__(
        self,
        budget: ReplyBudget | None = None,
        hosts: CheckedHosts | None = None,
        *,
        proxy: str | None = None,
        max_connections: int = 512,
    ) -> None:
        self._budget = budget or ReplyBudget()  # a whole answer's memory (reply_budget.py)
        # Where the host's addresses are checked before a request (upstream_address.py);
        # through a proxy, which resolves the name itself, a lookup of gw's own.
        self._hosts = hosts
        self._proxy = proxy
        self._max_connections = max_connections
        self._tls = TlsContexts()
        self._clients: dict[ProviderTls | None, httpx.AsyncClient] = {}

    def _client(self, tls: ProviderTls | None, provider: str) -> httpx.AsyncClient:
        client = self._clients.get(tls)
        if client is None:
            proxy = self._proxy
            tunnel_tls = proxy is not None and proxy.startswith("https:")
            client = self._clients[tls] = build_http_client(
                self._max_connections,
                proxy,
                verify=self._tls.get(tls, provider),
                proxy_verify=self._tls.get(None, provider) if tunnel_tls else None,
            )
        return client

    async def _check_host(self, request: httpx.Request, provider: str) -> None:
        if self._hosts is not None:
            url = request.url
            await self._hosts.check(url.host, url.port or _DEFAULT_PORTS[url.scheme], provider)

    @staticmethod
    def _request(
        client: httpx.AsyncClient,
        url: str,
        headers: Mapping[str, str],
        body: bytes,
        timeouts: AttemptTimeouts,
    ) -> httpx.Request:
        return client.build_request(
            "POST", url, content=body, headers=dict(headers), timeout=_timeout(timeouts)
        )

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
        client = self._client(tls, provider)
        request = self._request(client, url, headers, body, timeouts)
        await self._check_host(request, provider)
        try:
            response = await client.send(request, stream=True)
            try:
                compressed = "content-encoding" in response.headers  # length before decoding
                length = response.headers.get("content-length", "")
                declared = int(length) if length.isdigit() and not compressed else None
                chunks = response.aiter_bytes()
                content = await self._budget.read(chunks, provider, declared=declared)
            finally:
                await response.aclose()
        except httpx.RequestError as error:
            raise map_transport_error(error, provider=provider) from None
        return HttpReply(status=response.status_code, headers=response.headers, body=content)

    @contextlib.asynccontextmanager
    async def post_streaming(
        self,
        url: str,
        *,
        headers: Mapping[str, str],
        body: bytes,
        timeouts: AttemptTimeouts,
        provider: str,
        tls: ProviderTls | None = None,
    ) -> AsyncIterator[HttpxStreamingReply]:
        client = self._client(tls, provider)
        request = self._request(client, url, headers, body, timeouts)
        await self._check_host(request, provider)
        try:
            response = await client.send(request, stream=True)
        except httpx.RequestError as error:
            raise map_transport_error(error, provider=provider) from None
        try:
            yield HttpxStreamingReply(response, provider)
        finally:
            await response.aclose()

    async def close(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            await client.aclose()
