"""Open mode's guard against web pages: with no API keys, the browser is the attacker.

In ``open`` mode anyone who can reach the port may call gw, which is fine for the
processes of the machine's user but not for a web page that user happens to visit: a page
can POST to ``http://127.0.0.1:<port>`` (a "simple" cross-site request needs no
preflight) and spend, or change the config; through DNS rebinding it can even read
answers. So, in open mode only, gw refuses:

- a request whose ``Origin`` (which browsers send on every cross-origin POST, PUT and
  DELETE) is neither gw's own origin nor one of ``server.cors_origins``;
- a request without ``Origin`` that a browser marks ``Sec-Fetch-Site: cross-site`` or
  ``same-site`` (a page's image, script or no-cors fetch, or a link followed from another
  site: requests that change nothing should not be made by other pages either);
- a request whose ``Host`` is not a loopback name or address (a rebound DNS name).

SDKs and curl send no ``Origin`` and a loopback ``Host``, so they are not affected. In
``keys`` mode a page holds no key, and nothing here applies.
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Mapping

_OTHER_SITES = frozenset({"cross-site", "same-site"})


def open_mode_refusal(headers: Mapping[str, str], allowed_origins: tuple[str, ...]) -> str | None:
    """Why this request must be refused in open mode; None when it may go on."""
    origin = headers.get("origin")
    # gw's own pages (the dashboard) are no threat.
    if origin is not None and not is_own_origin(origin, headers) and origin not in allowed_origins:
        return (
            f"a web page ({origin[:200]}) may not call gw while auth is open; list the "
            "page's origin in server.cors_origins, or use API keys (auth.mode: keys)"
        )
    if origin is None and headers.get("sec-fetch-site") in _OTHER_SITES:
        return (
            "a web page on another site may not call gw while auth is open; open gw's "
            "pages directly, or use API keys (auth.mode: keys)"
        )
    host = _hostname(headers.get("host", ""))
    if host and not is_loopback_name(host):
        return (
            f"Host {host[:200]!r} is not a loopback name, and auth is open; call gw as "
            "127.0.0.1 or localhost, or use API keys (auth.mode: keys)"
        )
    return None


def is_own_origin(origin: str, headers: Mapping[str, str]) -> bool:
    """Whether ``origin`` is gw's own, as the request's ``Host`` names it."""
    host = headers.get("host", "")
    return origin in (f"http://{host}", f"https://{host}")


@functools.lru_cache(maxsize=256)  # every open-mode request asks; a client uses one Host
def is_loopback_name(host: str) -> bool:
    """A name or address that can only mean this machine: ``localhost`` and its
    subdomains (browsers resolve ``*.localhost`` to loopback themselves), loopback
    addresses, IPv4-mapped ones included; one trailing dot allowed."""
    name = host.removesuffix(".")
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return bool((mapped or address).is_loopback)


def _hostname(host: str) -> str:
    """``[::1]:8080`` -> ``::1``; ``localhost:8080`` -> ``localhost``."""
    if host.startswith("["):
        return host[1:].partition("]")[0]
    name, _, _port = host.rpartition(":") if host.count(":") == 1 else (host, "", "")
    return name.lower()
