"""``GET /metrics``: Prometheus metrics (gw/telemetry/metrics.py), in the text format.

Who may scrape, in either auth mode (it is part of the admin plane: gw/server/auth.py):
the local admin token (Prometheus on the same machine: ``authorization: {credentials_file:
<state-dir>/admin-token}``, read at every scrape, so a restart's new token is followed), or
a key with the ``usage:read`` scope (``admin:read`` and ``admin`` hold it, and so does the
admin key): no key is 401 ``authentication_failed``, a key without the scope (an
inference-only key) 403 ``permission_denied``, in the OpenAI error shape. With
``telemetry.metrics: false`` the endpoint does not exist: 404 ``endpoint_not_found``
(followed across config reloads).
"""

from __future__ import annotations

from litestar import Response, get
from litestar.handlers import HTTPRouteHandler

from gw.errors import EndpointNotFoundError, GatewayError
from gw.server.auth import require_scope
from gw.server.responses import gw_headers, openai_error_response
from gw.server.services import HttpRequest, ServerServices

# What ``services.metrics`` renders (prometheus-client's generate_latest). Not imported from
# gw/telemetry/metrics.py: that would load prometheus-client with every CLI command.
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def metrics_handlers(services: ServerServices) -> list[HTTPRouteHandler]:
    @get("/metrics", include_in_schema=False)
    async def metrics(request: HttpRequest) -> Response[bytes]:
        ctx = services.begin(request, "metrics")
        try:
            if services.metrics is None or not ctx.snapshot.config.telemetry.metrics:
                raise EndpointNotFoundError("no such endpoint: /metrics (telemetry.metrics is off)")
            principal = await services.authenticate_admin(request)
            require_scope(principal, "usage:read")
            # Like /admin/v1/usage: a tenant's key sees its own tenant's series only.
            tenant = None if principal.has_scope("admin:read") else principal.tenant
        except GatewayError as error:
            failed = services.gateway.reject(ctx, error, stream=False)
            return openai_error_response(failed.error, failed.trace)
        return Response(
            content=services.metrics(tenant),
            media_type=CONTENT_TYPE,
            headers=gw_headers(ctx.request_id, "-", ctx.snapshot.revision),
        )

    return [metrics]
