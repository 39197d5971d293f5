"""An API key's IP allowlist: the networks a client must call from. Values in, values out.

A key's ``allowed_ips`` is None (any address may use it) or a tuple of CIDR strings in
normal form, stored as a JSON array (``api_keys.allowed_ips``, migration 4). The rules:

- A bare address means that one address: ``203.0.113.7`` is kept as ``203.0.113.7/32``,
  ``2001:db8::1`` as ``2001:db8::1/128``.
- A network with host bits set (``10.1.2.3/8``) is refused, not silently widened to
  ``10.0.0.0/8``: it is more often a typo for one address than a wish for sixteen million,
  and ``server.trusted_proxies`` follows the same rule.
- IPv4-mapped IPv6 (``::ffff:10.0.0.0/104``) is kept in its IPv4 form (``10.0.0.0/8``), and
  a client the socket reports as ``::ffff:a.b.c.d`` (a dual-stack listener) is matched as
  ``a.b.c.d``: one IPv4 client, whichever way the kernel spells it.
- Duplicates are dropped, order kept. An empty list is refused: a key nobody may use is a
  mistake, and leaving the option out already means any address.

Parsing a network costs microseconds, so the request path parses a key's list once per
cache read (``networks_of``, called by gw/server/key_cache.py), not once per request.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from typing import TypeAlias

Network: TypeAlias = ipaddress.IPv4Network | ipaddress.IPv6Network
Address: TypeAlias = ipaddress.IPv4Address | ipaddress.IPv6Address

_MAPPED_V4_PREFIX = 96  # ::ffff:0:0/96 holds the IPv4-mapped addresses


def parse_network(text: str) -> Network:
    """``"10.0.0.0/8"``, ``"127.0.0.1"`` or ``"2001:db8::/32"`` -> its network, in IPv4 form
    when IPv4-mapped. ValueError names the value and says what to write."""
    value = text.strip()
    # A zone id (fe80::1%eth0) names a link on this host, not where a client is.
    interface = None if "%" in value else _interface(value)
    if interface is None:
        raise ValueError(
            f"{text!r} is not an IP address or CIDR network"
            " (e.g. 203.0.113.7, 10.0.0.0/8, 2001:db8::/32)"
        )
    network = interface.network
    if interface.ip != network.network_address:
        raise ValueError(
            f"{text!r} has host bits set: write {network} for the whole network, or"
            f" {interface.ip} for that one address"
        )
    if isinstance(network, ipaddress.IPv6Network):
        mapped = network.network_address.ipv4_mapped
        if mapped is not None and network.prefixlen >= _MAPPED_V4_PREFIX:
            return ipaddress.IPv4Network((mapped, network.prefixlen - _MAPPED_V4_PREFIX))
    return network


def _interface(value: str) -> ipaddress.IPv4Interface | ipaddress.IPv6Interface | None:
    """The address and the network it sits in (``10.1.2.3/8``), or None when not one."""
    try:
        return ipaddress.ip_interface(value)
    except ValueError:
        return None


def parse_allowlist(texts: Iterable[str]) -> tuple[str, ...]:
    """What a key stores: each entry checked and in normal form, duplicates dropped.
    ValueError names the first bad value."""
    networks = tuple(dict.fromkeys(str(parse_network(text)) for text in texts))
    if not networks:
        raise ValueError("the IP allowlist is empty; leave it out to allow any address")
    return networks


def networks_of(allowed: tuple[str, ...]) -> tuple[Network, ...]:
    """A stored allowlist as networks (ValueError when a stored entry is not one)."""
    return tuple(parse_network(text) for text in allowed)


def client_address(host: str | None) -> Address | None:
    """The address a request came from, IPv4-mapped IPv6 as IPv4; None when ``host`` is
    missing or not an IP address (a Unix socket, a test transport)."""
    if host is None:
        return None
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def allows(networks: tuple[Network, ...], host: str | None) -> bool:
    """Whether a client at ``host`` is inside one of ``networks``. An unknown address is
    never allowed: a key with an allowlist fails closed."""
    address = client_address(host)
    if address is None:
        return False
    # ``in`` across versions is simply False, so an IPv4 client never matches an IPv6 net.
    return any(address in network for network in networks)
