"""Open mode's guard against web pages: with no API keys, the browser is the attacker.

In ``open`` mode anyone who can reach the port may call gw, which is fine for the
processes of the machine's user but not for a web page that user happens to visit: a page
can POST to ``http://127.0.0.1:<port>`` (a "simple" cross-site request needs no
preflight) and spend, or change the config; through DNS rebinding it can even read
answers. So, in open mode only, gw refuses:

- a request whose ``Origin`` (which browsers send on every cross-origin POST, PUT and
  DELETE) is neither gw's own origin nor one of ``server.cors_origins``;
- a request whose ``Host`` is not a loopback name or address (a rebound DNS name).

SDKs and curl send no ``Origin`` and a loopback ``Host``, so they are not affected. In
``keys`` mode a page holds no key, and nothing here applies.
"""

from __future__ import annotations

from collections.abc import Mapping

from gw.server.auth import is_loopback


def open_mode_refusal(headers: Mapping[str, str], allowed_origins: tuple[str, ...]) -> str | None:
    """Why this request must be refused in open mode; None when it may go on."""
    origin = headers.get("origin")
    own = f"http://{headers.get('host', '')}"  # gw's own pages (the dashboard) are no threat
    if origin is not None and origin != own and origin not in allowed_origins:
        return (
            f"a web page ({origin[:200]}) may not call gw while auth is open; list the "
            "page's origin in server.cors_origins, or use API keys (auth.mode: keys)"
        )
    host = _hostname(headers.get("host", ""))
    if host and not is_loopback(host):
        return (
            f"Host {host[:200]!r} is not a loopback name, and auth is open; call gw as "
            "127.0.0.1 or localhost, or use API keys (auth.mode: keys)"
        )
    return None


def _hostname(host: str) -> str:
    """``[::1]:8080`` -> ``::1``; ``localhost:8080`` -> ``localhost``."""
    if host.startswith("["):
        return host[1:].partition("]")[0]
    name, _, _port = host.rpartition(":") if host.count(":") == 1 else (host, "", "")
    return name.lower()
