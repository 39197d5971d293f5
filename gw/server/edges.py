"""The edges of trust a deployment configures: browser origins (CORS) and the proxies
whose ``X-Forwarded-For`` is believed.

- ``server.cors_origins``: the origins a browser app may call gw from. Preflights are
  answered by the CORS middleware before any handler, so before auth; answers, errors
  included, carry the CORS headers and expose gw's own ``x-gw-*`` headers. ``*`` is
  allowed only on a loopback bind. Credentials (cookies) are never allowed: gw's
  clients send keys in headers.
- ``server.trusted_proxies``: addresses or CIDRs of reverse proxies. Only a connection
  from one of them has its ``X-Forwarded-For`` honoured (uvicorn's proxy middleware);
  with none configured, the header is ignored and the peer address is the client.
"""

from __future__ import annotations

import ipaddress

from litestar.config.cors import CORSConfig

from gw.server.auth import is_loopback

EXPOSED_HEADERS = ["x-gw-request-id", "x-gw-route", "x-gw-revision", "x-gw-queue-ms"]
ALLOWED_HEADERS = [
    "authorization",
    "content-type",
    "x-api-key",
    "anthropic-version",
    "anthropic-beta",
    "x-request-id",
    "x-gw-strategy",
    "x-gw-max-cost-usd",
    "x-gw-provider",
]


def cors_config(origins: tuple[str, ...]) -> CORSConfig | None:
    if not origins:
        return None
    return CORSConfig(
        allow_origins=list(origins),
        allow_methods=["GET", "POST", "PUT", "DELETE", "OPTIONS"],
        allow_headers=ALLOWED_HEADERS,
        expose_headers=EXPOSED_HEADERS,
        allow_credentials=False,
    )


def edge_problem(host: str, origins: tuple[str, ...], proxies: tuple[str, ...]) -> str | None:
    """Why these settings must not be served on ``host``; None when they may."""
    if "*" in origins and not is_loopback(host):
        return (
            f"server.cors_origins has '*' but server.host {host} is not a loopback address; "
            "list the browser origins that may call gw (e.g. https://app.example.com)"
        )
    for proxy in proxies:
        try:
            ipaddress.ip_network(proxy, strict=False)
        except ValueError:
            return (
                f"server.trusted_proxies: {proxy!r} is not an IP address or CIDR "
                "(e.g. 10.0.0.0/8 or 127.0.0.1)"
            )
    return None
