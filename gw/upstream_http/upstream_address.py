"""The addresses an upstream's host resolves to, checked before gw connects to one.

A base URL's host is checked when the config loads (gw/config/upstream_host.py), but a
name is only an address once DNS answers, and the answer can change after the check (or be
chosen by whoever runs that DNS). So each new connection resolves the name itself, refuses
the lot when any answer is link-local or a cloud metadata address, and connects to the
checked addresses, never to a second lookup's answer: the request, with its key, is
written only on such a connection. Loopback and private answers are allowed, as in config.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from gw.config.upstream_host import classify_address, refusal
from gw.errors import UpstreamError

# (family, sockaddr) as getaddrinfo gives them: sockaddr[0] is the address text.
Resolved = tuple[int, tuple[Any, ...]]
Resolve = Callable[[str, int], Awaitable[Sequence[Resolved]]]


async def system_resolve(host: str, port: int) -> list[Resolved]:
    """The system resolver's answer (hosts file, DNS), for a TCP connection."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [(family, sockaddr) for family, _, _, _, sockaddr in infos]


def address_refusal(host: str, addresses: Sequence[str]) -> str | None:
    """Why connecting to ``host`` at ``addresses`` is refused, or None."""
    for text in addresses:
        address = ipaddress.ip_address(text.partition("%")[0])  # an fe80::1%eth0 zone id
        reason = refusal(classify_address(address))
        if reason is not None:
            shown = host if host == str(address) else f"{host} (resolved to {address})"
            return f"the upstream host {shown} {reason}"
    return None


async def checked_addresses(
    host: str, port: int, provider: str, resolve: Resolve = system_resolve
) -> Sequence[Resolved]:
    """``host``'s addresses, all of them fit to receive a key; else ``upstream_error``.
    An address literal is its own answer (no lookup)."""
    try:
        literal = ipaddress.ip_address(host)
    except ValueError:
        addresses = await resolve(host, port)
    else:
        family = socket.AF_INET6 if literal.version == 6 else socket.AF_INET
        addresses = [(family, (host, port))]
    reason = address_refusal(host, [sockaddr[0] for _, sockaddr in addresses])
    if reason is not None:
        raise refused(provider, reason)
    return addresses


class CheckedHosts:
    """For a client whose connections gw does not open itself (httpx): each host checked
    by a lookup of its own before a request, a good answer remembered for ``ttl``
    seconds. The client then looks the name up again, so a DNS server that answers
    differently within that time is not caught: the builtin transport checks the very
    addresses it connects to.

    ``proxied``: the host is reached through an HTTP proxy, which resolves the name itself
    (gw never learns the address it connects to). gw's own lookup still refuses a name
    that resolves to a refused address; one that fails or takes over ``lookup_timeout``
    (gw's resolver may not know names only the proxy's network does) lets the request go
    on, remembered for ``ttl`` like a good answer, so no request waits on it again soon."""

    def __init__(
        self,
        resolve: Resolve = system_resolve,
        ttl: float = 30.0,
        *,
        proxied: bool = False,
        lookup_timeout: float = 1.0,
    ) -> None:
        self._resolve = resolve
        self._ttl = ttl
        self._proxied = proxied
        self._lookup_timeout = lookup_timeout
        self._good_until: dict[tuple[str, int], float] = {}

    async def check(self, host: str, port: int, provider: str) -> None:
        loop = asyncio.get_running_loop()
        if self._good_until.get((host, port), 0.0) > loop.time():
            return
        if self._proxied:
            await self._check_proxied(host, port, provider)
        else:
            await checked_addresses(host, port, provider, self._resolve)
        if len(self._good_until) > 1024:  # hosts come from config: a handful
            self._good_until.clear()
        self._good_until[host, port] = loop.time() + self._ttl

    async def _check_proxied(self, host: str, port: int, provider: str) -> None:
        try:
            async with asyncio.timeout(self._lookup_timeout):
                addresses = await self._resolve(host, port)
        except (OSError, TimeoutError):
            return  # the proxy resolves it; gw cannot check what it does not know
        reason = address_refusal(host, [sockaddr[0] for _, sockaddr in addresses])
        if reason is not None:
            raise refused(provider, reason)


def refused(provider: str, reason: str) -> UpstreamError:
    return UpstreamError(
        f"provider {provider}: {reason}; nothing was sent (check its base_url and what "
        "the name resolves to)",
        blame="upstream",
    )
