"""The upstream HTTP client ``server.upstream_transport`` names, with the environment's
proxies honoured (gw/upstream_http/env_proxy.py)."""

from __future__ import annotations

from collections.abc import Mapping

from gw.upstream_http.env_proxy import with_env_proxies
from gw.upstream_http.h1_pool import ConnectionPool
from gw.upstream_http.h1_transport import BuiltinTransport
from gw.upstream_http.http_transport import HttpTransport
from gw.upstream_http.reply_budget import ReplyBudget
from gw.upstream_http.upstream_address import CheckedHosts


def build_transport(
    kind: str,
    proxies: Mapping[str, str],
    budget: ReplyBudget | None = None,
    *,
    max_connections: int = 512,
    max_per_host: int | None = None,
) -> HttpTransport:
    """The upstream HTTP client (call inside the running event loop), sending the
    upstreams the environment proxies (``env_proxy.proxy_settings``) through httpx; whole
    answers are read within ``budget`` (gw/upstream_http/reply_budget.py). Its pool opens at
    most ``max_connections``, ``max_per_host`` to one host (httpx has no per-host cap)."""
    budget = budget or ReplyBudget()
    # httpx is imported only when chosen: it costs every start ~70 ms of imports.
    if kind == "httpx":
        from gw.upstream_http.httpx_transport import HttpxTransport  # noqa: PLC0415

        direct: HttpTransport = HttpxTransport(
            budget, CheckedHosts(), max_connections=max_connections
        )
    else:
        pool = ConnectionPool(max_connections, max_per_host=max_per_host)
        direct = BuiltinTransport(pool, budget=budget)
    return with_env_proxies(direct, proxies, budget)
