"""Upstreams the environment sends through a proxy: HTTP_PROXY, HTTPS_PROXY, ALL_PROXY and
NO_PROXY, read once at start (either case, lower case first, as Python's urllib reads
them; NO_PROXY as Go's net/http reads it).

Every ``server.upstream_transport`` connects directly; an upstream the environment
proxies goes through an httpx client for that proxy instead, so a gateway behind a
corporate proxy reaches its providers whichever is set. Loopback upstreams are never
proxied (as in Go's net/http): a proxy cannot reach this machine's own loopback.

A proxy URL may carry credentials: it is never logged or shown, only its scheme, host and
port (``proxy_label``).
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager
from urllib.parse import urlsplit

from gw.config.schema import ProviderTls
from gw.ports import AttemptTimeouts
from gw.upstream_http.http_transport import HttpReply, HttpTransport, StreamingReply
from gw.upstream_http.reply_budget import ReplyBudget
from gw.upstream_http.upstream_address import CheckedHosts

PROXY_SCHEMES = ("http", "https")


class ProxySettingError(ValueError):
    """A proxy variable gw cannot use; the message names the variable, never a password."""


def env_proxies(environ: Mapping[str, str]) -> dict[str, str]:
    """The proxy settings in ``environ``: scheme (``http``, ``https``, ``all``) -> proxy
    URL, and ``no`` -> NO_PROXY. Lower-case names win and a URL without a scheme is
    ``http://``, as in curl and urllib."""
    proxies: dict[str, str] = {}
    for name, value in environ.items():
        key = name.lower()
        wanted = key in ("http_proxy", "https_proxy", "all_proxy", "no_proxy")
        if wanted and value.strip() and (name == key or key[:-6] not in proxies):
            proxies[key[:-6]] = value.strip()
    for scheme, url in proxies.items():
        if scheme != "no" and "://" not in url:
            proxies[scheme] = f"http://{url}"
    return proxies


def check_proxy_url(variable: str, url: str) -> None:
    """Refuse a proxy URL that is not ``http(s)://host[:port]``, naming ``variable``."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 -- raises ValueError on a bad port
    except ValueError:
        raise ProxySettingError(
            f"{variable} is not a URL gw can read: fix it (http://host:port) or unset it"
        ) from None
    if parts.scheme not in PROXY_SCHEMES or not parts.hostname:
        raise ProxySettingError(
            f"{variable} must be an http:// or https:// proxy URL (it names "
            f"{parts.scheme or 'no scheme'}://...); gw does not speak SOCKS. "
            f"Unset it, or list the upstreams' hosts in NO_PROXY"
        )
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        # Also what a password with an unencoded / ? or # looks like: say nothing of it.
        raise ProxySettingError(
            f"{variable} must be scheme://[user:password@]host[:port] with nothing after "
            f"(percent-encode / ? # and @ in a password)"
        )


def proxy_label(url: str) -> str:
    """The proxy's scheme, host and port, without the credentials a URL may carry."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    host = f"[{host}]" if ":" in host else host
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}"


def public_proxies(proxies: Mapping[str, str]) -> dict[str, str]:
    """The settings as ``gw status`` shows them: each proxy without its credentials, and
    NO_PROXY as ``no_proxy``; empty when nothing is proxied."""
    shown = {k: proxy_label(v) for k, v in sorted(proxies.items()) if k != "no"}
    if shown and "no" in proxies:
        shown["no_proxy"] = proxies["no"]
    return shown


def describe_proxies(shown: Mapping[str, str]) -> str | None:
    """One line from ``public_proxies``: which proxy each scheme goes through, and what
    goes direct; None when nothing is proxied."""
    names = {"http": "http", "https": "https", "all": "any scheme"}
    routes = [f"{names[k]} via {v}" for k, v in sorted(shown.items()) if k in names]
    if not routes:
        return None
    exempt = f"NO_PROXY {shown['no_proxy']!r} and loopback" if "no_proxy" in shown else "loopback"
    return f"{', '.join(routes)}; direct: {exempt}"


def proxy_for(url: str, proxies: Mapping[str, str]) -> str | None:
    """The proxy URL an upstream ``url`` goes through, or None to connect directly."""
    parts = urlsplit(url)
    host = (parts.hostname or "").rstrip(".")  # api.openai.com. is api.openai.com
    proxy = proxies.get(parts.scheme) or proxies.get("all")
    if proxy is None or _is_loopback(host):
        return None
    no_proxy = proxies.get("no", "")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    if no_proxy and _bypassed(host, port, no_proxy):
        return None
    return proxy


def _bypassed(host: str, port: int, no_proxy: str) -> bool:
    """NO_PROXY as Go's net/http reads it: ``*`` alone; host names, each matching itself
    and its subdomains (a leading ``.`` or ``*.`` changes nothing); IP addresses and
    networks (``10.0.0.0/8``, ``[fd00::]/8``); any of them with a ``:port`` to match that
    port only."""
    ip = _ip_address(host)
    for raw in no_proxy.split(","):
        entry = raw.strip().lower()
        if entry == "*":
            return True
        entry, entry_port = _split_port(entry)
        entry = entry.removeprefix("*").lstrip(".").rstrip(".")
        if not entry or entry_port not in (None, port):
            continue
        if ip is None:
            if host == entry or host.endswith(f".{entry}"):
                return True
            continue
        try:
            if ip in ipaddress.ip_network(entry, strict=False):
                return True
        except ValueError:
            continue  # a host name: it does not match an address
    return False


def _split_port(entry: str) -> tuple[str, int | None]:
    """``host:port``, ``[v6]:port``, ``[v6]/bits``, or an entry without a port (a bare
    IPv6 address); a port that is not a number is -1, which no URL has."""
    if entry.startswith("["):
        address, _, rest = entry[1:].partition("]")
        if rest.startswith("/"):
            return address + rest, None
        return address, _port(rest[1:]) if rest.startswith(":") else None
    name, colon, port = entry.rpartition(":")
    if colon and ":" not in name:
        return name, _port(port)
    return entry, None


def _port(text: str) -> int:
    return int(text) if text.isascii() and text.isdigit() else -1


def _is_loopback(host: str) -> bool:
    if host == "localhost" or host.endswith(".localhost"):
        return True
    ip = _ip_address(host)
    return ip is not None and ip.is_loopback


def _ip_address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


class EnvProxyTransport:
    """``direct`` for every upstream but those the environment proxies, which go through an
    httpx client for their proxy, made on first use (none when no upstream is proxied)."""

    def __init__(
        self, direct: HttpTransport, proxies: Mapping[str, str], budget: ReplyBudget
    ) -> None:
        self._direct = direct
        self._budget = budget
        # NO_PROXY is read once per upstream URL, not per request (URLs come from config).
        self._proxy_for = functools.lru_cache(maxsize=1024)(
            functools.partial(proxy_for, proxies=dict(proxies))
        )
        self._proxied: dict[str, HttpTransport] = {}

    def _for(self, url: str) -> HttpTransport:
        proxy = self._proxy_for(url)
        if proxy is None:
            return self._direct
        transport = self._proxied.get(proxy)
        if transport is None:
            from gw.upstream_http.httpx_transport import HttpxTransport  # noqa: PLC0415 -- httpx costs ~70 ms of imports; only when a proxy is used

            hosts = CheckedHosts(proxied=True)  # the proxy resolves; gw's lookup checks too
            transport = self._proxied[proxy] = HttpxTransport(self._budget, hosts, proxy=proxy)
        return transport

    async def post(
        self,
        url: str,
        *,
        headers: Mapping[str, str],
        body: bytes,
        timeouts: AttemptTimeouts,
        provider: str,
        tls: ProviderTls | None = None,
    ) -> HttpReply:
        return await self._for(url).post(
            url, headers=headers, body=body, timeouts=timeouts, provider=provider, tls=tls
        )

    def post_streaming(
        self,
        url: str,
        *,
        headers: Mapping[str, str],
        body: bytes,
        timeouts: AttemptTimeouts,
        provider: str,
        tls: ProviderTls | None = None,
    ) -> AbstractAsyncContextManager[StreamingReply]:
        return self._for(url).post_streaming(
            url, headers=headers, body=body, timeouts=timeouts, provider=provider, tls=tls
        )

    async def close(self) -> None:
        try:
            await self._direct.close()
        finally:
            for transport in self._proxied.values():
                await transport.close()


def proxy_settings(environ: Mapping[str, str]) -> dict[str, str]:
    """``env_proxies``, each proxy URL checked; ``ProxySettingError`` for one gw cannot use."""
    proxies = env_proxies(environ)
    for scheme, url in proxies.items():
        if scheme != "no":
            lower = f"{scheme}_proxy"  # the name env_proxies took it from: lower case wins
            check_proxy_url(lower if environ.get(lower, "").strip() else lower.upper(), url)
    return proxies


def with_env_proxies(
    direct: HttpTransport, proxies: Mapping[str, str], budget: ReplyBudget
) -> HttpTransport:
    """``direct``, or, when ``proxies`` (``proxy_settings``) names any, ``direct`` wrapped
    so that the upstreams they proxy go through their proxy (within the same ``budget``)."""
    if not any(scheme != "no" for scheme in proxies):
        return direct
    return EnvProxyTransport(direct, proxies, budget)
