"""Build the Litestar app from ready-made services; start-up and shutdown hooks come in."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from litestar import Litestar, Response, get
from litestar.exceptions import HTTPException

from gw.codecs.openai_chat import encode_error
from gw.errors import (
    EndpointNotFoundError,
    GatewayError,
    InvalidRequestError,
    MethodNotAllowedError,
)
from gw.server.chat import chat_handlers
from gw.server.ids import new_request_id
from gw.server.models import model_handlers
from gw.server.responses import JSON, gw_headers
from gw.server.services import HttpRequest, ServerServices

Hook = Callable[[], Awaitable[None]]


def build_app(
    services: ServerServices, *, on_startup: Sequence[Hook] = (), on_shutdown: Sequence[Hook] = ()
) -> Litestar:
    @get("/livez", include_in_schema=False)
    async def livez() -> Response[bytes]:
        return Response(content=b'{"status":"ok"}', media_type=JSON)

    def framework_error(request: HttpRequest, exc: Exception) -> Response[bytes]:
        """Routing-level errors (unknown path, wrong method) in the same shape as ours."""
        status = exc.status_code if isinstance(exc, HTTPException) else 500
        error: GatewayError
        if status == 404:
            error = EndpointNotFoundError(f"no such endpoint: {request.url.path}")
        elif status == 405:
            error = MethodNotAllowedError(f"{request.method} is not allowed on {request.url.path}")
        else:
            error = InvalidRequestError(str(getattr(exc, "detail", "")) or "bad request")
        request_id, revision = new_request_id(), services.snapshot().revision
        block = {"code": error.code, "request_id": request_id, "route": "-", "revision": revision}
        return Response(
            content=encode_error(error, gw_block=block),
            status_code=error.status,
            media_type=JSON,
            headers=gw_headers(request_id, "-", revision),
        )

    return Litestar(
        route_handlers=[*chat_handlers(services), *model_handlers(services), livez],
        exception_handlers={HTTPException: framework_error},
        on_startup=list(on_startup),
        on_shutdown=list(on_shutdown),
        request_max_body_size=None,  # read_body enforces server.max_body_bytes itself
        logging_config=None,
        openapi_config=None,
    )
