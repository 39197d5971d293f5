"""GET /v1/models: the routes a client may name in ``model``, in OpenAI's list shape, or
Anthropic's for the Anthropic SDK (Google's for google-genai: gw/server/inference/gemini_models.py);
GET /v1/models/{id}: one of them (``models.retrieve``)."""

from __future__ import annotations

from datetime import UTC, datetime

import msgspec
from litestar import Response, get
from litestar.handlers import HTTPRouteHandler

from gw.errors import GatewayError, ModelNotFoundError, client_value
from gw.execution.request_context import RequestContext
from gw.server.auth import require_scope
from gw.server.inference.gemini_models import from_google_sdk, serve_model, serve_models
from gw.server.responses import (
    JSON,
    anthropic_error_response,
    gw_headers,
    openai_error_response,
)
from gw.server.services import HttpRequest, ServerServices


def model_handlers(services: ServerServices) -> list[HTTPRouteHandler]:
    @get("/v1/models", include_in_schema=False)
    async def list_models(request: HttpRequest) -> Response[bytes]:
        if from_google_sdk(request):
            return await serve_models(services, request)
        ctx = services.begin(request, "models.list")
        try:
            names = await _visible_routes(services, ctx, request)
        except GatewayError as error:
            return _refused(services, ctx, request, error)
        now = services.clock.time()
        anthropic = _from_anthropic_sdk(request)
        body = _anthropic_list(names, now) if anthropic else _openai_list(names, now)
        return _answer(ctx, body)

    # A path parameter: Gemini's POST /v1/models/{model}:generateContent shares this path,
    # and its model may hold a slash (gw/server/inference/gemini_api.py).
    @get("/v1/models/{model_id:path}", include_in_schema=False)
    async def retrieve_model(request: HttpRequest, model_id: str) -> Response[bytes]:
        model_id = model_id.lstrip("/")
        if from_google_sdk(request):
            return await serve_model(services, request, model_id)
        ctx = services.begin(request, "models.retrieve")
        try:
            names = await _visible_routes(services, ctx, request)
            if model_id not in names:
                known = ", ".join(names) or "none"
                raise ModelNotFoundError(
                    f"there is no route {client_value(model_id)}; routes: {known}"
                )
        except GatewayError as error:
            return _refused(services, ctx, request, error)
        now = services.clock.time()
        shape = _anthropic_model if _from_anthropic_sdk(request) else _openai_model
        return _answer(ctx, shape(model_id, now))

    return [list_models, retrieve_model]


def _from_anthropic_sdk(request: HttpRequest) -> bool:
    """The Anthropic SDK always sends anthropic-version: it gets Anthropic's shapes."""
    return "anthropic-version" in request.headers


async def _visible_routes(
    services: ServerServices, ctx: RequestContext, request: HttpRequest
) -> list[str]:
    """The routes the caller may name (a key limited to some models sees only those)."""
    principal = await services.authenticate(request)
    require_scope(principal, "inference")
    allowed = principal.models
    return [name for name in ctx.snapshot.routes if allowed is None or name in allowed]


def _refused(
    services: ServerServices, ctx: RequestContext, request: HttpRequest, error: GatewayError
) -> Response[bytes]:
    failed = services.gateway.reject(ctx, error, stream=False)
    if _from_anthropic_sdk(request):
        return anthropic_error_response(failed.error, failed.trace)
    return openai_error_response(failed.error, failed.trace)


def _answer(ctx: RequestContext, body: dict[str, object]) -> Response[bytes]:
    return Response(
        content=msgspec.json.encode(body),
        media_type=JSON,
        headers=gw_headers(ctx.request_id, "-", ctx.snapshot.revision),
    )


def _openai_model(name: str, now: float) -> dict[str, object]:
    return {"id": name, "object": "model", "created": int(now), "owned_by": "gw"}


def _anthropic_model(name: str, now: float) -> dict[str, object]:
    created_at = datetime.fromtimestamp(now, UTC).isoformat().replace("+00:00", "Z")
    return {"type": "model", "id": name, "display_name": name, "created_at": created_at}


def _openai_list(names: list[str], now: float) -> dict[str, object]:
    return {"object": "list", "data": [_openai_model(name, now) for name in names]}


def _anthropic_list(names: list[str], now: float) -> dict[str, object]:
    data = [_anthropic_model(name, now) for name in names]
    return {
        "data": data,
        "has_more": False,
        "first_id": names[0] if names else None,
        "last_id": names[-1] if names else None,
    }
