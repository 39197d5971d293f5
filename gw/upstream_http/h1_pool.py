"""The keep-alive pool of gw's own HTTP/1.1 client: idle connections by origin, a cap on
open ones, and connecting (TCP to the first of a host's checked addresses that answers,
then TLS) within a deadline."""

from __future__ import annotations

import asyncio
from collections import deque

from gw.errors import OverloadedError, UpstreamError, UpstreamTimeoutError
from gw.upstream_http.connect_errors import connect_failure
from gw.upstream_http.h1_connection import H1Connection, Origin
from gw.upstream_http.happy_eyeballs import ATTEMPT_DELAY, connect_first
from gw.upstream_http.tls import TlsContexts
from gw.upstream_http.upstream_address import Resolve, checked_addresses, system_resolve


class ConnectionPool:
    """At most ``max_connections`` open connections, ``max_per_host`` to one origin.

    A request that finds every allowed slot taken waits for one, within its connect
    timeout; a wait that runs out is gw's own saturation (503 ``overloaded``, blamed on the
    gateway, so it never counts against the upstream's health), not the upstream's.
    """

    def __init__(
        self,
        max_connections: int = 512,
        keepalive_seconds: float = 30.0,
        tls: TlsContexts | None = None,  # contexts by provider settings (tls.py)
        resolve: Resolve = system_resolve,
        max_per_host: int | None = None,  # None: only max_connections
        *,
        attempt_delay: float = ATTEMPT_DELAY,  # before the next of a host's addresses
    ) -> None:
        self._limit = max_connections
        self._per_host_limit = max_per_host or max_connections
        self._resolve = resolve
        self._attempt_delay = attempt_delay
        self._tls = tls or TlsContexts()
        self._keepalive = keepalive_seconds
        self._idle: dict[Origin, list[H1Connection]] = {}
        self._open = 0  # connecting, in use or idle
        self._open_to: dict[Origin, int] = {}  # the same, per origin
        self._waiters: deque[tuple[Origin, asyncio.Future[None]]] = deque()
        self._sweeper: asyncio.TimerHandle | None = None
        self._closed = False

    async def acquire(self, origin: Origin, connect_timeout: float, provider: str) -> H1Connection:
        """A live idle connection to ``origin``, or a new one; ``connect_timeout`` bounds
        the wait for a free slot and the connecting together."""
        connection = self._take_idle(origin)
        if connection is not None:
            return connection
        loop = asyncio.get_running_loop()
        deadline = loop.time() + connect_timeout
        try:
            async with asyncio.timeout_at(deadline):
                connection = await self._slot(origin)
        except TimeoutError:
            raise self._saturated(origin) from None
        if connection.open:  # an idle one that came back while this request waited
            return connection
        try:
            async with asyncio.timeout_at(deadline):
                await self._connect(loop, connection, origin, provider)
        except TimeoutError:  # before OSError: TimeoutError is one
            self._lost(connection)
            raise UpstreamTimeoutError(
                f"provider {provider}: connecting to the upstream timed out", blame="upstream"
            ) from None
        except OSError as error:
            self._lost(connection)
            raise UpstreamError(
                f"provider {provider}: could not connect to the upstream "
                f"({connect_failure(error)})",
                blame="upstream",
            ) from None
        except BaseException:
            self._lost(connection)
            raise
        return connection

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
        self._wake_next()  # a waiter for this origin can take it

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

    async def _slot(self, origin: Origin) -> H1Connection:
        """A new, unconnected connection holding a slot once the caps allow one, or an idle
        connection to ``origin`` that came back meanwhile."""
        loop = asyncio.get_running_loop()
        while self._open >= self._limit or self._open_to.get(origin, 0) >= self._per_host_limit:
            if self._open >= self._limit:
                self._close_one_idle()
            waiter = loop.create_future()
            entry = (origin, waiter)
            self._waiters.append(entry)
            try:
                await waiter
            except BaseException:
                if entry in self._waiters:
                    self._waiters.remove(entry)
                elif waiter.done() and not waiter.cancelled():
                    self._wake_next()  # woken, then cancelled: pass the free slot on
                raise
            connection = self._take_idle(origin)
            if connection is not None:
                return connection
        self._open += 1
        self._open_to[origin] = self._open_to.get(origin, 0) + 1
        return H1Connection(loop, origin, self._lost)

    def _saturated(self, origin: Origin) -> OverloadedError:
        _, host, port, _ = origin
        return OverloadedError(
            f"gw's upstream connection pool is full ({self._open} connections open, "
            f"{self._open_to.get(origin, 0)} of them to {host}:{port}; caps: "
            f"server.upstream_max_connections {self._limit}, "
            f"server.upstream_max_connections_per_host {self._per_host_limit}); "
            "raise them, or lower server.max_concurrency",
            blame="gateway",
            retry_after=1.0,
        )

    async def _connect(
        self,
        loop: asyncio.AbstractEventLoop,
        connection: H1Connection,
        origin: Origin,
        provider: str,
    ) -> None:
        """Connect to the checked addresses of the host, several of them raced as RFC 8305
        says (gw/upstream_http/happy_eyeballs.py); TLS then verifies the host's name."""
        scheme, host, port, settings = origin
        tls = self._tls.get(settings, provider) if scheme == "https" else None
        addresses = await checked_addresses(host, port, provider, self._resolve)
        sock = await connect_first(addresses, port, self._attempt_delay)
        try:
            await loop.create_connection(
                lambda: connection,
                sock=sock,
                ssl=tls,
                server_hostname=host if tls else None,
            )
        except BaseException:
            sock.close()  # the transport may not have taken it over
            raise

    def _lost(self, connection: H1Connection) -> None:
        """A connection closed (or never opened): its slot is free."""
        if connection.counted:
            connection.counted = False
            self._open -= 1
            origin = connection.origin
            self._open_to[origin] -= 1
            if not self._open_to[origin]:
                del self._open_to[origin]
            idle = self._idle.get(origin)
            if idle and connection in idle:
                idle.remove(connection)
            self._wake_next()

    def _wake_next(self) -> None:
        """Wake the longest waiter that the pool can now serve: one whose origin has an
        idle connection or is under its per-host cap (it takes a free slot, or closes an
        idle connection elsewhere to get one)."""
        for index, (origin, waiter) in enumerate(self._waiters):
            if waiter.done():
                continue
            if self._idle.get(origin) or self._open_to.get(origin, 0) < self._per_host_limit:
                del self._waiters[index]
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
