"""The upstream HTTP client ``server.upstream_transport`` names, with the environment's
proxies honoured (gw/adapters/env_proxy.py)."""

from __future__ import annotations

from collections.abc import Mapping

from gw.adapters.env_proxy import with_env_proxies
from gw.adapters.h1_transport import BuiltinTransport
from gw.adapters.http_transport import HttpTransport


def build_transport(kind: str, proxies: Mapping[str, str]) -> HttpTransport:
    """The upstream HTTP client (call inside the running event loop), sending the
    upstreams the environment proxies (``env_proxy.proxy_settings``) through httpx."""
    # The others are imported only when chosen: httpx costs every start ~70 ms of imports,
    # aiohttp ~0.35 s (it builds its TLS contexts at import).
    if kind == "httpx":
        from gw.adapters.httpx_transport import HttpxTransport, build_http_client  # noqa: PLC0415

        direct: HttpTransport = HttpxTransport(build_http_client())
    elif kind == "aiohttp":
        from gw.adapters.aiohttp_transport import AiohttpTransport, build_session  # noqa: PLC0415

        direct = AiohttpTransport(build_session())
    else:
        direct = BuiltinTransport()
    return with_env_proxies(direct, proxies)
