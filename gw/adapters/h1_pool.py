"""The keep-alive pool of gw's own HTTP/1.1 client: idle connections by origin, a cap on
open ones, and connecting (TCP, or TLS with the system's trust store) within a deadline."""

from __future__ import annotations

import asyncio
import functools
import socket
import ssl
from collections import deque

from gw.adapters.h1_connection import H1Connection, Origin
from gw.adapters.upstream_address import Resolve, checked_addresses, system_resolve
from gw.errors import UpstreamError, UpstreamTimeoutError


class ConnectionPool:
    def __init__(
        self,
        max_connections: int = 512,
        keepalive_seconds: float = 30.0,
        tls_context: ssl.SSLContext | None = None,  # None: the system's trust store
        resolve: Resolve = system_resolve,
    ) -> None:
        self._limit = max_connections
        self._resolve = resolve
        self._tls_context = tls_context
        self._keepalive = keepalive_seconds
        self._idle: dict[Origin, list[H1Connection]] = {}
        self._open = 0  # connecting, in use or idle
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._sweeper: asyncio.TimerHandle | None = None
        self._closed = False

    async def acquire(self, origin: Origin, connect_timeout: float, provider: str) -> H1Connection:
        """A live idle connection to ``origin``, or a new one within ``connect_timeout``
        (which also bounds a wait for a free slot when all ``max_connections`` are open)."""
        connection = self._take_idle(origin)
        if connection is not None:
            return connection
        try:
            async with asyncio.timeout(connect_timeout):
                return await self._connection_within_cap(origin, provider)
        except TimeoutError:  # before OSError: TimeoutError is one
            raise UpstreamTimeoutError(
                f"provider {provider}: connecting to the upstream timed out", blame="upstream"
            ) from None
        except OSError as error:
            raise UpstreamError(
                f"provider {provider}: could not connect to the upstream ({_reason(error)})",
                blame="upstream",
            ) from None

    def release(self, connection: H1Connection) -> None:
        """Back to the pool when its exchange ended cleanly; closed otherwise."""
        if not connection.reusable or self._closed:
            connection.close(abort=not connection.complete)
            return
        loop = asyncio.get_running_loop()
        connection.idle_since = loop.time()
        self._idle.setdefault(connection.origin, []).append(connection)
        if self._sweeper is None:
            self._sweeper = loop.call_later(self._keepalive, self._sweep)
        self._wake_one()  # a waiter for this origin can take it

    async def close(self) -> None:
        self._closed = True
        if self._sweeper is not None:
            self._sweeper.cancel()
        for connections in self._idle.values():
            for connection in connections:
                connection.close()
        self._idle.clear()

    def _take_idle(self, origin: Origin) -> H1Connection | None:
        idle = self._idle.get(origin)
        if not idle:
            return None
        oldest_allowed = asyncio.get_running_loop().time() - self._keepalive
        while idle:
            connection = idle.pop()  # the most recent: the least likely to be closed by now
            if not connection.open:
                continue
            if connection.idle_since < oldest_allowed:
                connection.close()
                continue
            return connection
        return None

    async def _connection_within_cap(self, origin: Origin, provider: str) -> H1Connection:
        """A new connection once fewer than the cap are open (or an idle one to ``origin``
        that came back meanwhile), to an address of its host checked by upstream_address."""
        loop = asyncio.get_running_loop()
        while self._open >= self._limit:
            self._close_one_idle()
            waiter = loop.create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            except BaseException:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)
                elif waiter.done() and not waiter.cancelled():
                    self._wake_one()  # woken, then cancelled: pass the free slot on
                raise
            connection = self._take_idle(origin)
            if connection is not None:
                return connection
        self._open += 1
        connection = H1Connection(loop, origin, self._lost)
        try:
            await self._connect(loop, connection, origin, provider)
        except BaseException:
            self._lost(connection)
            raise
        return connection

    async def _connect(
        self,
        loop: asyncio.AbstractEventLoop,
        connection: H1Connection,
        origin: Origin,
        provider: str,
    ) -> None:
        """Connect to the first checked address of the host that takes it (in the
        resolver's order, as asyncio does); TLS still verifies the host's name."""
        scheme, host, port = origin
        tls = scheme == "https"
        addresses = await checked_addresses(host, port, provider, self._resolve)
        failure: OSError = socket.gaierror(socket.EAI_NONAME, "no address")
        for family, sockaddr in addresses:
            try:
                await loop.create_connection(
                    lambda: connection,
                    sockaddr[0],
                    port,
                    family=family,
                    ssl=(self._tls_context or _system_tls_context()) if tls else None,
                    server_hostname=host if tls else None,
                )
            except ssl.SSLError:
                raise  # the host answered: another of its addresses would not do better
            except OSError as error:
                failure = error
            else:
                return
        raise failure

    def _lost(self, connection: H1Connection) -> None:
        """A connection closed (or never opened): its slot is free."""
        if connection.counted:
            connection.counted = False
            self._open -= 1
            idle = self._idle.get(connection.origin)
            if idle and connection in idle:
                idle.remove(connection)
            self._wake_one()

    def _wake_one(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    def _close_one_idle(self) -> None:
        """At the cap, an idle connection to another origin gives way (its close frees a slot)."""
        for connections in self._idle.values():
            if connections:
                connections.pop(0).close()
                return

    def _sweep(self) -> None:
        """Every keep-alive period while connections are idle: close the expired ones."""
        loop = asyncio.get_running_loop()
        oldest_allowed = loop.time() - self._keepalive
        for connections in self._idle.values():
            for connection in [c for c in connections if c.idle_since < oldest_allowed]:
                connections.remove(connection)
                connection.close()
        idle = any(self._idle.values())
        self._sweeper = loop.call_later(self._keepalive, self._sweep) if idle else None


@functools.cache
def _system_tls_context() -> ssl.SSLContext:
    """Built on the first https upstream (loading the trust store costs tens of ms)."""
    context = ssl.create_default_context()
    context.set_alpn_protocols(["http/1.1"])
    return context


def _reason(error: OSError) -> str:
    if isinstance(error, ssl.SSLCertVerificationError):
        return f"TLS certificate not trusted: {error.verify_message}"
    if isinstance(error, ssl.SSLError):
        return f"TLS failed: {error.reason or error}"
    if isinstance(error, socket.gaierror):
        return "host name not found"
    if isinstance(error, ConnectionRefusedError):
        return "connection refused"
    return error.strerror or type(error).__name__
