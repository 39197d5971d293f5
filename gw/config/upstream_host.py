"""Where a provider's ``base_url`` points, told apart before gw sends it a key.

gw sends each provider its API key, so a base URL is a place the key goes. Link-local
addresses (169.254.0.0/16, fe80::/10) and the cloud metadata services (169.254.169.254,
fd00:ec2::254, metadata.google.internal, 100.100.100.200, ...) hand out instance
credentials to whoever asks from the machine: a base URL there turns a config edit (or a
config written through the admin API) into a credential leak. They are refused, at load
(``gw.config.validate``) and again for the address a host name resolves to, when the
upstream client connects (``gw.upstream_http.upstream_address``).

Loopback and private addresses are allowed (a local model server is a main use), but named
by ``gw config validate``.

Disguised addresses are caught before the check. An IPv6 address that embeds an IPv4 one
(``::ffff:127.0.0.1``, NAT64, 6to4, Teredo) is judged by the embedded one too. Numeric
host forms other than dotted-quad decimal (``0x7f000001``, ``2130706433``, ``0177.0.0.1``,
``127.1``), which the C resolver reads as an IPv4 address, are refused outright with the
canonical form in the message; so is a non-ASCII host that IDNA maps onto such a form.
"""

from __future__ import annotations

import ipaddress
from typing import Final, Literal

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
HostKind = Literal["public", "loopback", "private", "link_local", "metadata", "unspecified"]
REFUSED_KINDS: Final = frozenset({"link_local", "metadata", "unspecified"})

# Instance metadata services: AWS, GCP, Azure, OpenStack, DigitalOcean, Oracle
# (169.254.169.254), AWS ECS task metadata (169.254.170.2), AWS over IPv6, Alibaba Cloud,
# Azure's wire server, Oracle Cloud Classic.
METADATA_ADDRESSES: Final = frozenset(
    ipaddress.ip_address(text)
    for text in (
        "169.254.169.254",
        "169.254.170.2",
        "fd00:ec2::254",
        "100.100.100.200",
        "168.63.129.16",
        "192.0.0.192",
    )
)
METADATA_NAMES: Final = frozenset(
    {
        "metadata.google.internal",
        "metadata.goog",
        "metadata",
        "instance-data",
        "instance-data.ec2.internal",
    }
)
NAT64_PREFIX: Final = ipaddress.ip_network("64:ff9b::/96")
_REASONS: Final = {
    "link_local": "a link-local address",
    "metadata": "a cloud metadata service, which hands out the machine's credentials",
    "unspecified": "the unspecified address (0.0.0.0 or ::), which reaches this machine",
}


class HostFormError(ValueError):
    """A host written in a form gw does not accept; the message says which to write."""


def classify_address(address: Address) -> HostKind:
    """What kind of place ``address`` is; an IPv6 address embedding an IPv4 one is
    judged by the more dangerous of the two."""
    kinds = [_own_kind(address)]
    if isinstance(address, ipaddress.IPv6Address):
        kinds += [_own_kind(embedded) for embedded in _embedded_ipv4(address)]
    return max(kinds, key=_danger)


def classify_host(host: str) -> HostKind:
    """What kind of place a URL's host is, before any lookup: a name is ``public`` unless
    it is a metadata service's name or ``localhost``. Raises ``HostFormError`` for a
    disguised numeric form."""
    name = canonical_host(host)
    if name in METADATA_NAMES:
        return "metadata"
    try:
        return classify_address(ipaddress.ip_address(name))
    except ValueError:
        pass
    if name == "localhost" or name.endswith(".localhost"):  # RFC 6761: always loopback
        return "loopback"
    return "public"


def canonical_host(host: str) -> str:
    """``host`` lower-cased, without a trailing dot, IDNA-encoded as the upstream client
    sends it; raises ``HostFormError`` for a numeric form other than dotted-quad decimal."""
    written = name = host.strip().lower().removesuffix(".")
    if not name.isascii():
        try:  # what gw's client connects to (nameprep maps fullwidth digits to ASCII)
            name = name.encode("idna").decode("ascii")
        except UnicodeError:
            raise HostFormError(f"{host!r} is not a valid host name") from None
    if ":" in name:  # IPv6 (the brackets are gone); a zone id is kept by ipaddress
        return name
    numeric = _inet_aton(name)
    if numeric is not None and str(numeric) != written:
        raise HostFormError(
            f"{host!r} is a numeric IPv4 address in a non-canonical form; write it as {numeric}"
        )
    return name


def refusal(kind: HostKind) -> str | None:
    """Why a base URL of ``kind`` is refused, or None when it is allowed."""
    if kind not in REFUSED_KINDS:
        return None
    return (
        f"points at {_REASONS[kind]}; gw refuses it so that no provider key is sent there "
        "(a local model server belongs on a loopback or private address)"
    )


def _own_kind(address: Address) -> HostKind:
    if address in METADATA_ADDRESSES:
        return "metadata"
    if address.is_unspecified or (
        isinstance(address, ipaddress.IPv4Address) and address in _THIS_NETWORK
    ):
        return "unspecified"
    if address.is_link_local:
        return "link_local"
    if address.is_loopback:
        return "loopback"
    if address.is_private or (
        isinstance(address, ipaddress.IPv4Address) and address in _SHARED_SPACE
    ):
        return "private"
    return "public"


def _embedded_ipv4(address: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    found = [address.ipv4_mapped, address.sixtofour]
    if address.teredo is not None:
        found.extend(address.teredo)
    tail = ipaddress.IPv4Address(address.packed[12:])
    compatible = address.packed[:12] == bytes(12) and tail not in _THIS_NETWORK  # not ::1, ::
    if address in NAT64_PREFIX or compatible:  # NAT64; the old IPv4-compatible ::a.b.c.d
        found.append(tail)
    return [ip for ip in found if ip is not None]


_THIS_NETWORK: Final = ipaddress.ip_network("0.0.0.0/8")  # Linux connects 0.x to this host
_SHARED_SPACE: Final = ipaddress.ip_network("100.64.0.0/10")  # carrier NAT, Tailscale
_ORDER: Final[tuple[HostKind, ...]] = (
    "public",
    "private",
    "loopback",
    "unspecified",
    "link_local",
    "metadata",
)


def _danger(kind: HostKind) -> int:
    return _ORDER.index(kind)


def _inet_aton(name: str) -> ipaddress.IPv4Address | None:
    """The IPv4 address the C library's ``inet_aton`` reads ``name`` as (1-4 parts, each
    decimal, 0x hex or 0-led octal; the last fills the remaining bytes), or None."""
    parts = name.split(".")
    if not 1 <= len(parts) <= 4:
        return None
    values = []
    for part in parts:
        value = _number(part)
        if value is None:
            return None
        values.append(value)
    *head, last = values
    if any(value > 0xFF for value in head) or last >= 1 << (8 * (4 - len(head))):
        return None
    number = last
    for index, value in enumerate(head):
        number |= value << (8 * (3 - index))
    return ipaddress.IPv4Address(number)


def _number(part: str) -> int | None:
    try:
        if part[:2] in ("0x", "0X"):
            return int(part[2:] or "0", 16)
        if len(part) > 1 and part.startswith("0"):
            return int(part[1:], 8)
        return int(part, 10) if part.isdigit() else None
    except ValueError:
        return None
