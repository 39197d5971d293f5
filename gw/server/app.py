"""Build the Litestar app from ready-made services; start-up and shutdown hooks come in."""

from __future__ import annotations

import logging
import traceback
from collections.abc import Awaitable, Callable, Sequence

import msgspec
from litestar import Litestar, Response, get
from litestar.exceptions import HTTPException

from gw.errors import (
    EndpointNotFoundError,
    GatewayError,
    InternalError,
    InvalidRequestError,
    MethodNotAllowedError,
    PermissionDeniedError,
)
from gw.server.admin import admin_handlers
from gw.server.admin_config import config_handlers
from gw.server.admin_inspect import inspect_handlers
from gw.server.browser_guard import open_mode_refusal
from gw.server.chat import chat_handlers
from gw.server.dashboard import dashboard_handlers
from gw.server.edges import cors_config
from gw.server.embeddings import embedding_handlers
from gw.server.messages import message_handlers
from gw.server.metrics_endpoint import metrics_handlers
from gw.server.models import model_handlers
from gw.server.openapi_doc import openapi_handlers
from gw.server.responses import JSON, anthropic_error_response, openai_error_response
from gw.server.services import HttpRequest, ServerServices

Hook = Callable[[], Awaitable[None]]
PROBES = frozenset({"/livez", "/readyz"})  # liveness checks carry no data: never guarded
logger = logging.getLogger("gw.server")


def build_app(
    services: ServerServices, *, on_startup: Sequence[Hook] = (), on_shutdown: Sequence[Hook] = ()
) -> Litestar:
    @get("/livez", include_in_schema=False)
    async def livez() -> Response[bytes]:
        return Response(content=b'{"status":"ok"}', media_type=JSON)

    @get("/readyz", include_in_schema=False)
    async def readyz() -> Response[bytes]:
        """Ready when a snapshot is loaded (always, once serving) and the store answers."""
        try:
            if services.ready is not None:
                await services.ready()
        except Exception as exc:  # noqa: BLE001 -- any failure means not ready; say which
            body = {"status": "unavailable", "reason": f"the state store: {type(exc).__name__}"}
            return Response(content=msgspec.json.encode(body), media_type=JSON, status_code=503)
        ready = {"status": "ready", "revision": services.snapshot().revision}
        return Response(content=msgspec.json.encode(ready), media_type=JSON)

    def render(request: HttpRequest, error: GatewayError) -> Response[bytes]:
        """Errors raised outside the handlers: same shape, headers and trace as the rest;
        Anthropic's shape under /v1/messages, OpenAI's everywhere else."""
        ctx = services.begin(request, "http")
        failed = services.gateway.reject(ctx, error, stream=False)
        if request.url.path.startswith("/v1/messages"):
            return anthropic_error_response(failed.error, failed.trace)
        return openai_error_response(failed.error, failed.trace)

    def framework_error(request: HttpRequest, exc: Exception) -> Response[bytes]:
        """Routing-level errors (unknown path, wrong method, unreadable request)."""
        status = exc.status_code if isinstance(exc, HTTPException) else 500
        path = request.url.path
        if status == 404:
            return render(request, EndpointNotFoundError(f"no such endpoint: {path}"))
        if status == 405:
            return render(request, MethodNotAllowedError(f"{request.method} not allowed on {path}"))
        if status < 500:
            return render(request, InvalidRequestError(f"the request could not be read ({status})"))
        return internal_error(request, exc)

    def internal_error(request: HttpRequest, exc: Exception) -> Response[bytes]:
        # Frames only: an exception's text may carry request data (invariant 9).
        frames = "".join(traceback.format_tb(exc.__traceback__))
        logger.error("unhandled %s on %s:\n%s", type(exc).__name__, request.url.path, frames)
        message = f"gw failed unexpectedly ({type(exc).__name__}); this is a gw bug"
        return render(request, InternalError(message))

    return Litestar(
        before_request=open_mode_guard(services, render),
        route_handlers=[
            *chat_handlers(services),
            *embedding_handlers(services),
            *message_handlers(services),
            *model_handlers(services),
            *admin_handlers(services),
            *config_handlers(services),
            *inspect_handlers(services),
            *dashboard_handlers(services),
            *metrics_handlers(services),
            *openapi_handlers(),
            livez,
            readyz,
        ],
        exception_handlers={HTTPException: framework_error, Exception: internal_error},
        on_startup=list(on_startup),
        on_shutdown=list(on_shutdown),
        request_max_body_size=None,  # read_body enforces server.max_body_bytes itself
        logging_config=None,
        openapi_config=None,  # /openapi.json is hand-written: gw/server/openapi_doc.py
        cors_config=cors_config(services.snapshot().config.server.cors_origins),
    )


def open_mode_guard(
    services: ServerServices, render: Callable[[HttpRequest, GatewayError], Response[bytes]]
) -> Callable[[HttpRequest], Awaitable[Response[bytes] | None]]:
    """Before every handler: in open mode, refuse what a web page sent (browser_guard)."""

    async def guard(request: HttpRequest) -> Response[bytes] | None:
        if services.authenticator.mode != "open" or request.scope["path"] in PROBES:
            return None
        origins = services.snapshot().config.server.cors_origins
        reason = open_mode_refusal(request.headers, origins)
        return None if reason is None else render(request, PermissionDeniedError(reason))

    return guard
