"""GET /v1/models: the routes a client may name in ``model``, in OpenAI's list shape, or
Anthropic's for the Anthropic SDK."""

from __future__ import annotations

from datetime import UTC, datetime

import msgspec
from litestar import Response, get
from litestar.handlers import HTTPRouteHandler

from gw.errors import GatewayError
from gw.server.auth import require_scope
from gw.server.responses import JSON, gw_headers, openai_error_response
from gw.server.services import HttpRequest, ServerServices


def model_handlers(services: ServerServices) -> list[HTTPRouteHandler]:
    @get("/v1/models", include_in_schema=False)
    async def list_models(request: HttpRequest) -> Response[bytes]:
        ctx = services.begin(request, "models.list")
        try:
            principal = await services.authenticate(request)
            require_scope(principal, "inference")
        except GatewayError as error:
            failed = services.gateway.reject(ctx, error, stream=False)
            return openai_error_response(failed.error, failed.trace)
        allowed = principal.models  # a key limited to some models sees only those routes
        names = [name for name in ctx.snapshot.routes if allowed is None or name in allowed]
        now = services.clock.time()
        # The Anthropic SDK always sends anthropic-version: answer in its list shape.
        body = (
            _anthropic_list(names, now)
            if "anthropic-version" in request.headers
            else _openai_list(names, now)
        )
        return Response(
            content=msgspec.json.encode(body),
            media_type=JSON,
            headers=gw_headers(ctx.request_id, "-", ctx.snapshot.revision),
        )

    return [list_models]


def _openai_list(names: list[str], now: float) -> dict[str, object]:
    created = int(now)
    data = [{"id": n, "object": "model", "created": created, "owned_by": "gw"} for n in names]
    return {"object": "list", "data": data}


def _anthropic_list(names: list[str], now: float) -> dict[str, object]:
    created_at = datetime.fromtimestamp(now, UTC).isoformat().replace("+00:00", "Z")
    data = [{"type": "model", "id": n, "display_name": n, "created_at": created_at} for n in names]
    return {
        "data": data,
        "has_more": False,
        "first_id": names[0] if names else None,
        "last_id": names[-1] if names else None,
    }
