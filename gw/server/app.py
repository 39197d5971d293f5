"""Build the Litestar app from ready-made services; start-up and shutdown hooks come in."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

import msgspec
from litestar import Response, get
from litestar.exceptions import HTTPException

from gw.errors import (
    DEFAULT_RETRY_AFTER_S,
    GatewayError,
    PermissionDeniedError,
)
from gw.server.admin.api import admin_handlers
from gw.server.admin.config_api import config_handlers
from gw.server.admin.dashboard import dashboard_handlers
from gw.server.admin.inspect_api import inspect_handlers
from gw.server.admin.metrics_endpoint import metrics_handlers
from gw.server.admin.replay_api import replay_handlers
from gw.server.admin.switches_api import switches_handlers
from gw.server.browser_guard import open_mode_refusal
from gw.server.edges import cors_config
from gw.server.error_pages import ErrorPages
from gw.server.ids import new_request_id
from gw.server.inference.chat import CHAT_PATH, chat_endpoint, chat_handlers
from gw.server.inference.embeddings import embedding_handlers
from gw.server.inference.gemini_api import gemini_handlers
from gw.server.inference.messages import MESSAGES_PATH, message_handlers, messages_endpoint
from gw.server.inference.models import model_handlers
from gw.server.inference.response_jobs_api import response_job_handlers
from gw.server.inference.responses_api import RESPONSES_PATH, responses_endpoint, responses_handlers
from gw.server.openapi_doc import openapi_handlers
from gw.server.responses import JSON, gw_headers
from gw.server.runtime.fast_path import FastPath
from gw.server.runtime.litestar_app import GatewayLitestar
from gw.server.services import HttpRequest, ServerServices
from gw.store.file_checks import StoreUnavailableError

Hook = Callable[[], Awaitable[None]]
PROBES = frozenset({"/livez", "/readyz"})  # liveness checks carry no data: never guarded


def build_app(
    services: ServerServices, *, on_startup: Sequence[Hook] = (), on_shutdown: Sequence[Hook] = ()
) -> FastPath:
    """The ASGI app: Litestar, with SDKs' inference POSTs taken by the fast path first."""

    @get("/livez", include_in_schema=False)
    async def livez() -> Response[bytes]:
        return Response(content=b'{"status":"ok"}', media_type=JSON)

    @get("/readyz", include_in_schema=False)
    async def readyz() -> Response[bytes]:
        """Ready when a snapshot is loaded (always, once serving) and the store can be
        written (gw/startup/store_health.py); unready says why, with a stable code."""
        problem = None
        try:
            if services.ready is not None:
                problem = await services.ready()
        except StoreUnavailableError as exc:
            body = {"status": "unavailable", "code": exc.problem.code, "reason": str(exc)}
            return Response(content=msgspec.json.encode(body), media_type=JSON, status_code=503)
        except Exception as exc:  # noqa: BLE001 -- any failure means not ready; say which
            body = {"status": "unavailable", "reason": f"the state store: {type(exc).__name__}"}
            wait = {"retry-after": str(DEFAULT_RETRY_AFTER_S)}  # every 503 of gw's says when
            return Response(
                content=msgspec.json.encode(body), media_type=JSON, status_code=503, headers=wait
            )
        ready: dict[str, object] = {"status": "ready", "revision": services.snapshot().revision}
        if problem is not None:  # served through: said, so a person sees it
            ready["degraded"] = {"code": problem.code, "reason": problem.message}
        return Response(content=msgspec.json.encode(ready), media_type=JSON)

    errors = ErrorPages(services)
    guard = open_mode_guard(services, errors.render)
    chat, messages = chat_endpoint(services), messages_endpoint(services)
    responses = responses_endpoint(services)
    app = GatewayLitestar(
        before_request=guard,
        route_handlers=[
            *chat_handlers(chat),
            *responses_handlers(responses),
            *response_job_handlers(services),
            *embedding_handlers(services),
            *message_handlers(services, messages),
            *gemini_handlers(services),
            *model_handlers(services),
            *admin_handlers(services),
            *config_handlers(services),
            *inspect_handlers(services),
            *replay_handlers(services),
            *switches_handlers(services),
            *dashboard_handlers(services),
            *metrics_handlers(services),
            *openapi_handlers(),
            livez,
            readyz,
        ],
        exception_handlers={HTTPException: errors.framework_error, Exception: errors.internal},
        on_startup=list(on_startup),
        on_shutdown=list(on_shutdown),
        request_max_body_size=None,  # read_body enforces server.max_body_bytes itself
        logging_config=None,
        openapi_config=None,  # /openapi.json is hand-written: gw/server/openapi_doc.py
        cors_config=cors_config(services.snapshot().config.server.cors_origins),
    )
    endpoints = {CHAT_PATH: chat, MESSAGES_PATH: messages, RESPONSES_PATH: responses}

    def untraced_headers() -> dict[str, str]:
        return gw_headers(new_request_id(), "-", services.snapshot().revision)

    return FastPath(
        app,
        endpoints,
        guard=guard,
        error_page=errors.any,
        render=errors.render,
        gw_headers=untraced_headers,
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
