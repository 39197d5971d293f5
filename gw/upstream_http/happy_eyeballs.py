"""Connecting to a host with several addresses, RFC 8305 style ("Happy Eyeballs").

Tried one after another, an address that swallows packets (a dead IPv6 route, a host
that went away) holds each connection for the whole connect timeout before the next
is tried. So attempts are staggered: the next address starts when the one before has
failed, or has not connected within ``ATTEMPT_DELAY``; the first TCP connection made wins
and every other attempt is cancelled (a socket that connected anyway is closed). TLS then
runs on the winner alone.

Only the addresses given are tried: the caller passes those ``upstream_address`` checked,
and nothing here looks the name up again.
"""

from __future__ import annotations

import asyncio
import itertools
import socket
from collections import deque
from collections.abc import Sequence
from typing import Any

from gw.upstream_http.upstream_address import Resolved

ATTEMPT_DELAY = 0.25  # seconds: RFC 8305's recommended Connection Attempt Delay


def interleaved(addresses: Sequence[Resolved]) -> list[Resolved]:
    """The resolver's order (RFC 6724's, from getaddrinfo), the address families
    alternating from the first one's (RFC 8305, section 4)."""
    if not addresses:
        return []
    first_family = addresses[0][0]
    preferred = [address for address in addresses if address[0] == first_family]
    others = [address for address in addresses if address[0] != first_family]
    pairs = itertools.zip_longest(preferred, others)
    return [address for pair in pairs for address in pair if address is not None]


async def open_socket(family: int, sockaddr: tuple[Any, ...]) -> socket.socket:
    """A TCP socket connected to ``sockaddr``; closed again if that fails or is cancelled."""
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        await asyncio.get_running_loop().sock_connect(sock, sockaddr)
    except BaseException:
        sock.close()
        raise
    return sock


async def connect_first(
    addresses: Sequence[Resolved], port: int, delay: float = ATTEMPT_DELAY
) -> socket.socket:
    """A socket connected to the first of ``addresses`` (at ``port``) that takes the
    connection, attempts staggered by ``delay``; raises the last attempt's ``OSError``
    when every one fails. The caller bounds the whole by its connect deadline."""
    if len(addresses) == 1:  # nothing to race: no task, no timer
        family, sockaddr = addresses[0]
        return await open_socket(family, (sockaddr[0], port, *sockaddr[2:]))
    pending = deque(interleaved(addresses))
    running: set[asyncio.Task[socket.socket]] = set()
    failure: OSError = socket.gaierror(socket.EAI_NONAME, "the host has no address")
    try:
        while pending or running:
            if pending:
                family, sockaddr = pending.popleft()
                target = (sockaddr[0], port, *sockaddr[2:])  # an IPv6 scope id stays
                running.add(asyncio.create_task(open_socket(family, target)))
            done, running = await asyncio.wait(
                running,
                timeout=delay if pending else None,
                return_when=asyncio.FIRST_COMPLETED,
            )
            winner: socket.socket | None = None
            for task in done:
                error = task.exception()
                if error is None:
                    connected = task.result()
                    if winner is None:
                        winner = connected
                    else:
                        connected.close()  # two connected in one turn: one is enough
                elif isinstance(error, OSError):
                    failure = error
                else:
                    raise error
            if winner is not None:
                return winner
        raise failure
    finally:
        await _abandon(running)


async def _abandon(running: set[asyncio.Task[socket.socket]]) -> None:
    """Cancel the attempts still running; close a socket that connected meanwhile."""
    for task in running:
        task.cancel()
    for outcome in await asyncio.gather(*running, return_exceptions=True):
        if isinstance(outcome, socket.socket):
            outcome.close()
