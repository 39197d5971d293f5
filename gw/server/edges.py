"""The edges of trust a deployment configures: browser origins (CORS) and the proxies
whose ``X-Forwarded-For`` is believed.

- ``server.cors_origins``: the origins a browser app may call gw from. Preflights are
  answered by the CORS middleware before any handler, so before auth; answers, errors
  included, carry the CORS headers and expose gw's own ``x-gw-*`` headers. ``*`` is
  allowed only on a loopback bind with ``auth.mode: keys`` (else any page could spend).
  Credentials (cookies) are never allowed: gw's clients send keys in headers.
- ``server.trusted_proxies``: addresses or CIDRs of reverse proxies. Only a connection
  from one of them has its ``X-Forwarded-For`` honoured (uvicorn's proxy middleware);
  with none configured, the header is ignored and the peer address is the client.
"""

from __future__ import annotations

import ipaddress

from litestar.config.cors import CORSConfig

from gw.server.auth import is_loopback

EXPOSED_HEADERS = [
    "x-gw-request-id", "x-gw-route", "x-gw-revision", "x-gw-queue-ms", "x-request-id",
    "request-id",
]  # fmt: skip


def cors_config(origins: tuple[str, ...]) -> CORSConfig | None:
    if not origins:
        return None
    return CORSConfig(
        allow_origins=list(origins),
        allow_methods=["GET", "POST", "PUT", "DELETE", "OPTIONS"],
        # Any request header: the SDKs add their own (x-stainless-*, anthropic-dangerous-
        # direct-browser-access), and with no credentials allowed, "*" grants nothing more.
        allow_headers=["*"],
        expose_headers=EXPOSED_HEADERS,
        allow_credentials=False,
    )


def edge_problem(
    host: str, origins: tuple[str, ...], proxies: tuple[str, ...], mode: str | None
) -> str | None:
    """Why these settings must not be served on ``host``; None when they may."""
    if "*" in origins and not is_loopback(host):
        return (
            f"server.cors_origins has '*' but server.host {host} is not a loopback address; "
            "list the browser origins that may call gw (e.g. https://app.example.com)"
        )
    if "*" in origins and mode != "keys":
        return (
            "server.cors_origins has '*' while auth may be open: any web page you visit "
            "could call gw and spend; list the origins, or set auth.mode: keys"
        )
    for proxy in proxies:
        try:
            ipaddress.ip_network(proxy, strict=True)
        except ValueError:
            return (
                f"server.trusted_proxies: {proxy!r} is not an IP address or a CIDR with its "
                "host bits zero (e.g. 10.0.0.0/8 or 127.0.0.1)"
            )
    return None
