"""The upstream HTTP client ``server.upstream_transport`` names, with the environment's
proxies honoured (gw/adapters/env_proxy.py)."""

from __future__ import annotations

from collections.abc import Mapping

from gw.adapters.env_proxy import proxy_settings, with_env_proxies
from gw.adapters.h1_transport import BuiltinTransport
from gw.adapters.http_transport import HttpTransport


def build_transport(kind: str, environ: Mapping[str, str]) -> HttpTransport:
    """The upstream HTTP client (call inside the running event loop), sending the
    upstreams the environment proxies through httpx for their proxy
    (``gw.wiring.check_proxies`` has refused the proxy URLs gw cannot use)."""
    # The others are imported only when chosen: httpx costs every start ~70 ms of imports,
    # aiohttp ~0.35 s (it builds its TLS contexts at import).
    if kind == "httpx":
        from gw.adapters.httpx_transport import HttpxTransport, build_http_client  # noqa: PLC0415

        return with_env_proxies(HttpxTransport(build_http_client()), proxy_settings(environ))
    if kind == "aiohttp":
        from gw.adapters.aiohttp_transport import AiohttpTransport, build_session  # noqa: PLC0415

        return with_env_proxies(AiohttpTransport(build_session()), proxy_settings(environ))
    return with_env_proxies(BuiltinTransport(), proxy_settings(environ))
