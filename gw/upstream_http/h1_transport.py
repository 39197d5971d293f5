"""HttpTransport over gw's own HTTP/1.1 client (``server.upstream_transport: builtin``).

Why gw has its own: a bare byte pipe took 1.03 M instructions per 22-chunk stream with
aiohttp and 0.56 M with a minimal httptools client (callgrind), and importing aiohttp (it
builds TLS contexts at import) took ~0.35 s of every start. Upstreams speak HTTP/1.1 JSON
and SSE over one POST; that is all this client does: pooled keep-alive connections, TLS
(gw/upstream_http/tls.py), chunked, length and close-delimited bodies, gzip/deflate, 1xx
skipped, bounded heads, a connect deadline (racing a host's addresses), and a read
deadline between bytes the upstream sends (or takes of the request).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager
from types import TracebackType
from typing import NamedTuple
from urllib.parse import quote, urlsplit

from gw.config.schema import ProviderTls
from gw.errors import UpstreamAuthFailedError, UpstreamError
from gw.ports import AttemptTimeouts
from gw.upstream_http.h1_connection import H1Connection, Origin
from gw.upstream_http.h1_pool import ConnectionPool
from gw.upstream_http.http_transport import HttpReply
from gw.upstream_http.reply_budget import ReplyBudget

# Framing is the client's own business: these never come from an adapter's headers.
_OWN_HEADERS = frozenset({"host", "content-length", "transfer-encoding", "connection"})
_DEFAULTS = {
    "user-agent": "user-agent: gw\r\n",
    "accept-encoding": "accept-encoding: gzip, deflate\r\n",
}


# RFC 9110: a header name is a token; a value holds no control character but tab.
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
_checked_names: set[str] = set()  # names come from adapters and config: a handful


class Target(NamedTuple):
    origin: Origin
    request_line: str  # "POST <path> HTTP/1.1\r\nhost: <host>\r\n"


class BuiltinTransport:
    def __init__(
        self, pool: ConnectionPool | None = None, budget: ReplyBudget | None = None
    ) -> None:
        self._pool = pool or ConnectionPool()
        self._budget = budget or ReplyBudget()  # a whole answer's memory (reply_budget.py)

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
        exchange = self._exchange(
            url, headers, body, provider, timeouts, read=timeouts.read, tls=tls
        )
        async with exchange as connection:
            content = await connection.read_body(self._budget)
            return HttpReply(status=connection.status, headers=connection.headers, body=content)

    def post_streaming(
        self,
        url: str,
        *,
        headers: Mapping[str, str],
        body: bytes,
        timeouts: AttemptTimeouts,
        provider: str,
        tls: ProviderTls | None = None,
    ) -> Exchange:
        # No read deadline: the engine times a stream's first token and its idle gaps.
        return self._exchange(url, headers, body, provider, timeouts, read=None, tls=tls)

    async def close(self) -> None:
        await self._pool.close()

    def _exchange(
        self,
        url: str,
        headers: Mapping[str, str],
        body: bytes,
        provider: str,
        timeouts: AttemptTimeouts,
        *,
        read: float | None,
        tls: ProviderTls | None,
    ) -> Exchange:
        target = _target(url, provider, tls)
        parts = [_head(target, headers, len(body), provider), body]
        return Exchange(self._pool, target, parts, provider, connect=timeouts.connect, read=read)


class Exchange(AbstractAsyncContextManager[H1Connection]):
    """``async with``: the connection, once the answer's head arrived. Leaving it puts the
    connection back when the body was read to its end (or ends soon after a reader that
    stopped at the stream's logical end) and closes it otherwise."""

    def __init__(
        self,
        pool: ConnectionPool,
        target: Target,
        parts: list[bytes],
        provider: str,
        *,
        connect: float,
        read: float | None,
    ) -> None:
        self._pool = pool
        self._target = target
        self._parts = parts
        self._provider = provider
        self._connect_timeout = connect
        self._read_timeout = read
        self._connection: H1Connection | None = None

    async def __aenter__(self) -> H1Connection:
        connection = await self._pool.acquire(
            self._target.origin, self._connect_timeout, self._provider
        )
        self._connection = connection
        try:
            connection.send(self._parts, self._provider, self._read_timeout)
            await connection.head()
        except BaseException:
            self._pool.release(connection)
            raise
        return connection

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        connection = self._connection
        if connection is None:
            return
        if kind is None:  # a stream left at its logical end: its last chunk may be in flight
            connection.release_when_complete(self._pool.release)
        else:
            self._pool.release(connection)


def _target(url: str, provider: str, tls: ProviderTls | None) -> Target:
    try:
        return _parse_target(url, tls)
    except ValueError as error:
        raise UpstreamError(f"provider {provider}: {error}", blame="upstream") from None


@functools.lru_cache(maxsize=256)  # a handful of configured base URLs x endpoints
def _parse_target(url: str, tls: ProviderTls | None) -> Target:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise ValueError(f"the upstream URL is not http(s): {scheme or 'no scheme'}")
    if parts.username is not None or parts.password is not None:
        raise ValueError(
            "the upstream URL holds credentials; put the key in the provider's api_key"
        )
    host = parts.hostname
    if not host:
        raise ValueError("the upstream URL has no host")
    default_port = 443 if scheme == "https" else 80
    port = default_port if parts.port is None else parts.port  # .port raises for a bad one
    if ":" not in host:  # a name (IDNA also refuses empty or overlong labels) or IPv4
        host = host.encode("idna").decode("ascii")
    path = parts.path or "/"
    if parts.query:
        path = f"{path}?{parts.query}"
    if not path.isascii() or any(char <= " " for char in path):
        path = quote(path, safe="/%:@!$&'()*+,;=-._~?")
    bracketed = f"[{host}]" if ":" in host else host
    authority = bracketed if port == default_port else f"{bracketed}:{port}"
    origin = (scheme, host, port, tls if scheme == "https" else None)
    return Target(origin, f"POST {path} HTTP/1.1\r\nhost: {authority}\r\n")


def _head(target: Target, headers: Mapping[str, str], length: int, provider: str) -> bytes:
    lines = [target.request_line]
    values = []
    defaults = _DEFAULTS
    for name, value in headers.items():
        if name not in _checked_names:
            _check_name(name, provider)
        lowered = name.lower()
        if lowered in _OWN_HEADERS:
            continue
        if lowered in defaults:
            defaults = {key: line for key, line in defaults.items() if key != lowered}
        lines.append(f"{name}: {value}\r\n")
        values.append(value)
    if _CONTROL.search("\t".join(values)):  # one scan for all: no line smuggles another
        raise _invalid_header(provider, "a line break or control character in a value")
    lines.extend(defaults.values())
    lines.append(f"content-length: {length}\r\n\r\n")
    head = "".join(lines)
    if head.isascii() or all(ord(char) < 256 for char in head):
        return head.encode("latin-1")
    # Raised outside an except block: the encoding error's context holds the whole head.
    raise _invalid_header(provider, "characters HTTP cannot carry")


def _check_name(name: str, provider: str) -> None:
    if not _TOKEN.fullmatch(name):
        raise _invalid_header(provider, "a name that is not an HTTP token")
    if len(_checked_names) < 1024:
        _checked_names.add(name)


def _invalid_header(provider: str, reason: str) -> UpstreamAuthFailedError:
    # Never the value itself: it may be a key.
    return UpstreamAuthFailedError(
        f"provider {provider}: a header for the upstream is not valid HTTP ({reason}); "
        "check the provider's headers and API key"
    )
