"""The inference POSTs of SDKs, answered without Litestar's per-request machinery.

Litestar routes each request, builds its handler's arguments from a signature model,
turns the returned response into an ASGI one and wraps ``send`` for every chunk of a
stream. Skipping that for the two hot endpoints took 0.14 M of 3.17 M instructions off
a 22-chunk stream through gw (callgrind; docs/performance.md).

``FastPath`` is the ASGI app uvicorn runs. A ``POST`` to one of its endpoints without an
``Origin`` header (SDKs, curl: not a browser, so nothing for CORS to do) goes straight to
the same endpoint function Litestar would call, after the same ``before_request`` guard,
with the same error rendering for what the endpoint raises. Everything else, browser
requests to these paths included, goes to Litestar unchanged.

What of Litestar it relies on: a ``Request`` built over the server's scope alone (no
routing state: handlers read its headers, cookies, client and URL, and the body through
``receive``, gw/server/body.py), and ``Response.to_asgi_response(app, request)`` turning
what an endpoint returns into the ASGI response Litestar would send. Both are public API,
but Litestar routes everything else, so a change there shows only here;
tests/unit/server/runtime/test_internals.py checks them.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from litestar import Litestar, Request, Response
from litestar.types import Receive, Scope, Send

from gw.errors import GatewayError, InvalidRequestError

# GETs that change something: a dashboard login link is redeemed once, a logout ends a
# session, a finished background response is handed out once. A HEAD must not do that (a
# link unfurler would take the session or the answer), so it is not run as their GET.
GETS_THAT_ACT = ("/dashboard/login", "/dashboard/logout", "/v1/responses/")

# Litestar's request, whatever its app state (gw.server.services.HttpRequest is one).
HttpRequest = Request[Any, Any, Any]
Endpoint = Callable[[HttpRequest], Awaitable[Response[Any]]]
HeaderSource = Callable[[], Mapping[str, str]]
Guard = Callable[[HttpRequest], Awaitable[Response[bytes] | None]]
ErrorPage = Callable[[HttpRequest, Exception], Response[bytes]]
Render = Callable[[HttpRequest, GatewayError], Response[bytes]]

# RFC 9110 Host: uri-host [":" port], without userinfo. uvicorn passes any bytes on, and
# Litestar (or building a request's URL) fails on some with a 500 (e.g. "host:1/x").
_VALID_HOST = re.compile(
    rb"(?:\[[0-9A-Fa-f:.]+(?:%25[0-9A-Za-z._~-]+)?\]|[0-9A-Za-z!$&'()*+,;=._~%-]*)"
    rb"(?::(?P<port>[0-9]{0,5}))?"
)
BAD_HOST = (
    "the Host header is not a valid host[:port] (RFC 9110); send the server's address, "
    "e.g. 127.0.0.1:8787, once"
)


class FastPath:
    def __init__(
        self,
        app: Litestar,
        endpoints: Mapping[str, Endpoint],
        *,
        guard: Guard,
        error_page: ErrorPage,
        render: Render,
        gw_headers: HeaderSource,
    ) -> None:
        self.app = app  # the Litestar app behind: every other request, and the lifespan
        self._endpoints = dict(endpoints)
        self._guard = guard
        self._error_page = error_page
        self._render = render
        self._gw_headers = gw_headers

    async def __call__(self, scope: Any, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            if not _valid_host(scope["headers"]):
                request: HttpRequest = Request(scope, receive, send)
                refusal = self._render(request, InvalidRequestError(BAD_HOST))
                await refusal.to_asgi_response(None, request)(scope, receive, send)
                return
            method = scope["method"]
            if method == "POST":
                endpoint = self._endpoints.get(scope["path"])
                if endpoint is not None and not _from_a_browser(scope):
                    await self._serve(endpoint, scope, receive, send)
                    return
            elif method == "OPTIONS" and scope["path"].startswith(("/v1/", "/v1beta/")):
                # Litestar answers OPTIONS (and CORS preflights) itself, without the
                # x-gw-* headers every /v1 (and Gemini /v1beta) response carries
                # (DESIGN.md): added here.
                send = _adding(send, self._gw_headers)
            elif method == "HEAD" and not scope["path"].startswith(GETS_THAT_ACT):
                # HEAD is answered wherever GET is (Litestar routes GET only: a HEAD got
                # 405, e.g. Claude Code's start-up check of the base URL): the GET's head,
                # no body. Not where a GET acts: there HEAD stays refused (405).
                scope = {**scope, "method": "GET"}
                send = _headless(send)
        await self.app(scope, receive, send)

    async def _serve(self, endpoint: Endpoint, scope: Scope, receive: Receive, send: Send) -> None:
        request: HttpRequest = Request(scope, receive, send)
        try:
            response = await self._guard(request) or await endpoint(request)
        except Exception as exc:  # noqa: BLE001 -- rendered as Litestar's exception handlers do
            response = self._error_page(request, exc)
        await response.to_asgi_response(None, request)(scope, receive, send)


def _adding(send: Send, headers: HeaderSource) -> Send:
    """``send``, with ``headers`` added to the response's head unless it has them."""

    async def sending(message: Any) -> None:
        if message["type"] == "http.response.start":
            present = list(message.get("headers", ()))
            if not any(name.lower() == b"x-gw-request-id" for name, _ in present):
                added = [(k.encode(), v.encode()) for k, v in headers().items()]
                message = {**message, "headers": present + added}
        await send(message)

    return sending


def _headless(send: Send) -> Send:
    """``send``, with every body chunk emptied: the answer to a HEAD request."""

    async def sending(message: Any) -> None:
        if message["type"] == "http.response.body" and message.get("body"):
            message = {**message, "body": b""}
        await send(message)

    return sending


def _valid_host(headers: list[tuple[bytes, bytes]]) -> bool:
    """At most one Host header, and a well-formed one (none at all is HTTP/1.0's way)."""
    hosts = [value for name, value in headers if name == b"host"]
    if not hosts:
        return True
    matched = _VALID_HOST.fullmatch(hosts[0]) if len(hosts) == 1 else None
    if matched is None:
        return False
    port = matched["port"]
    return not port or int(port) <= 65535


def _from_a_browser(scope: Scope) -> bool:
    """A browser sends ``Origin`` on every cross-origin POST (and on same-origin ones)."""
    return any(name == b"origin" for name, _ in scope["headers"])
