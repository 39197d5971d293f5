"""GET /v1/models: the routes a client may name in ``model``, in OpenAI's list shape."""

from __future__ import annotations

import msgspec
from litestar import Response, get
from litestar.handlers import HTTPRouteHandler

from gw.errors import GatewayError
from gw.server.responses import JSON, gw_headers, openai_error_response
from gw.server.services import HttpRequest, ServerServices


def model_handlers(services: ServerServices) -> list[HTTPRouteHandler]:
    @get("/v1/models", include_in_schema=False)
    async def list_models(request: HttpRequest) -> Response[bytes]:
        ctx = services.begin(request, "models.list")
        try:
            services.authenticator.authenticate(request.headers)
        except GatewayError as error:
            failed = services.gateway.reject(ctx, error, stream=False)
            return openai_error_response(failed.error, failed.trace)
        created = int(services.clock.time())
        data = [
            {"id": name, "object": "model", "created": created, "owned_by": "gw"}
            for name in ctx.snapshot.routes
        ]
        return Response(
            content=msgspec.json.encode({"object": "list", "data": data}),
            media_type=JSON,
            headers=gw_headers(ctx.request_id, "-", ctx.snapshot.revision),
        )

    return [list_models]
