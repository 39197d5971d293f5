"""The dashboard: a web view of gw that changes nothing, served by gw itself at ``/``.

Static files shipped in the package (gw/server/admin/dashboard_ui/: HTML, ES modules, CSS), no
build step and nothing fetched from elsewhere; the page draws everything, charts included,
from the admin API's reads (traces, health, usage, status, config) and its one POST that
writes nothing, the Config tab's ``gw replay`` preview. Routes::

    GET  /                                 the page (never cached): a session, else 401
    GET  /dashboard/assets/{name}          its scripts, stylesheet and icon (no data)
    GET  /dashboard/login?token=T          redeem a login link: session cookie, 303 to /
    GET  /dashboard/logout                 end the session, 303 to /
    POST /admin/v1/dashboard/login-link    admin:read: {"url", "path", "expires_in_s"}

The admin plane is never anonymous (gw/server/auth.py), in ``open`` mode too: the page
holds no key, so ``gw dashboard`` (with the local admin token, or a key) mints a one-time
login link, and the session it opens may only read, and POST that preview from the page
(gw/server/admin/dashboard_sessions.py). Without a session the page answers 401, and its
script shows how to log in. In ``open`` mode gw/server/browser_guard.py still refuses other
origins and rebound Host names.

Every response here carries a strict Content-Security-Policy (scripts, styles, images and
fetches from gw's own origin only; no inline script or style; no framing), ``nosniff`` and
no referrer, so a login token in the address bar never leaks to another site.
"""

from __future__ import annotations

from importlib.resources import files
from typing import Final

from litestar import Response, get, post
from litestar.datastructures import Cookie
from litestar.exceptions import NotFoundException
from litestar.handlers import HTTPRouteHandler

from gw.errors import GatewayError
from gw.execution.request_context import RequestFailedError
from gw.server.admin.config_api import AdminApi
from gw.server.admin.dashboard_sessions import COOKIE_NAME, SESSION_TTL_S
from gw.server.auth import require_scope
from gw.server.responses import openai_error_response
from gw.server.services import HttpRequest, ServerServices

ASSET_DIR: Final = "dashboard_ui"
LOGIN_PATH: Final = "/dashboard/login"
CONTENT_SECURITY_POLICY: Final = "; ".join(
    (
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self'",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    )
)
SECURITY_HEADERS: Final = {
    "content-security-policy": CONTENT_SECURITY_POLICY,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
    "cross-origin-opener-policy": "same-origin",
    "cross-origin-resource-policy": "same-origin",
}
NO_STORE: Final = {**SECURITY_HEADERS, "cache-control": "no-store"}
# Assets may be kept but are checked every time: an upgraded gw serves its own at once.
REVALIDATE: Final = {**SECURITY_HEADERS, "cache-control": "no-cache"}
MEDIA_TYPES: Final = {
    ".html": "text/html",
    ".js": "text/javascript",
    ".css": "text/css",
    ".svg": "image/svg+xml",
}
PAGES: Final = ("index.html", "login-refused.html")


def load_assets() -> dict[str, tuple[bytes, str]]:
    """Every shipped file of the dashboard by name: its bytes and media type. Read when the
    app is built (never at import), from the installed package, zipapp included."""
    assets: dict[str, tuple[bytes, str]] = {}
    for entry in files("gw.server.admin").joinpath(ASSET_DIR).iterdir():
        suffix = "." + entry.name.rpartition(".")[2]
        if entry.is_file() and suffix in MEDIA_TYPES:
            assets[entry.name] = (entry.read_bytes(), MEDIA_TYPES[suffix])
    return assets


def dashboard_handlers(services: ServerServices) -> list[HTTPRouteHandler]:
    assets = load_assets()
    pages = {name: assets.pop(name)[0] for name in PAGES}
    api = AdminApi(services)
    sessions = services.dashboard

    def page(name: str, status: int = 200) -> Response[bytes]:
        return Response(
            content=pages[name],
            status_code=status,
            media_type=MEDIA_TYPES[".html"],
            headers=NO_STORE,
        )

    def see_other(cookie: Cookie) -> Response[bytes]:
        return Response(
            content=b"",
            status_code=303,
            media_type="text/plain",
            headers={**NO_STORE, "location": "/"},
            cookies=[cookie],
        )

    @get("/", include_in_schema=False)
    async def index(request: HttpRequest) -> Response[bytes]:
        # A 401 still carries the page: its script finds the admin API refusing it too
        # and shows how to log in (`gw dashboard`). Refusals are not traced: no request
        # id is spent on a page view.
        try:
            require_scope(await services.authenticate_admin(request), "admin:read")
        except GatewayError:
            return page("index.html", 401)
        return page("index.html")

    @get("/dashboard/assets/{name:str}", include_in_schema=False)
    async def asset(name: str) -> Response[bytes]:
        found = assets.get(name)
        if found is None:
            raise NotFoundException
        content, media_type = found
        return Response(content=content, media_type=media_type, headers=REVALIDATE)

    @get(LOGIN_PATH, include_in_schema=False)
    async def login(request: HttpRequest) -> Response[bytes]:
        session = sessions.redeem(request.query_params.get("token") or "")
        if session is None:
            return page("login-refused.html", 403)
        return see_other(
            Cookie(
                key=COOKIE_NAME,
                value=session,
                path="/",
                max_age=int(SESSION_TTL_S),
                httponly=True,
                samesite="strict",
                # gw serves plain http on loopback, where a Secure cookie would not come
                # back; behind a TLS-terminating proxy the scheme says https, and it is set.
                secure=request.url.scheme == "https",
            )
        )

    @get("/dashboard/logout", include_in_schema=False)
    async def logout(request: HttpRequest) -> Response[bytes]:
        sessions.end(request.cookies.get(COOKIE_NAME) or "")
        return see_other(Cookie(key=COOKIE_NAME, value="", path="/", max_age=0))

    @post("/admin/v1/dashboard/login-link", status_code=200, include_in_schema=False)
    async def login_link(request: HttpRequest) -> Response[bytes]:
        try:
            ctx = await api.begin(request, "admin.dashboard_login_link")
        except RequestFailedError as refused:
            return openai_error_response(refused.error, refused.trace)
        ttl = ctx.snapshot.config.auth.dashboard_link_ttl.seconds
        path = f"{LOGIN_PATH}?token={sessions.issue_link_token(ttl)}"
        base = str(request.base_url).rstrip("/")
        body = {"url": base + path, "path": path, "expires_in_s": ttl}
        response = api.answer(ctx, body)
        response.headers["cache-control"] = "no-store"
        return response

    return [index, asset, login, logout, login_link]
