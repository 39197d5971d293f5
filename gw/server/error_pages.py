"""Error responses for what goes wrong outside gw's handlers: routing, reading, bugs.

Same shape, headers and trace as every other gw error: Anthropic's shape under
/v1/messages, Google's on the Gemini API's paths, OpenAI's everywhere else. Litestar's
exception handlers call these, and so does the inference fast path (gw/server/runtime/fast_path.py)
for what its endpoints raise.
"""

from __future__ import annotations

import logging
import traceback

from litestar import Response
from litestar.exceptions import HTTPException

from gw.errors import (
    CLIENT_VALUE_MAX_CHARS,
    EndpointNotFoundError,
    GatewayError,
    InternalError,
    InvalidRequestError,
    MethodNotAllowedError,
    client_value,
    clipped,
)
from gw.server.auth import is_gemini_path
from gw.server.responses import (
    anthropic_error_response,
    gemini_error_response,
    openai_error_response,
)
from gw.server.services import HttpRequest, ServerServices

logger = logging.getLogger("gw.server")

# What an unknown path's 404 lists (the Gemini paths' own 404 lists those in detail).
SERVED = (
    "gw serves POST /v1/chat/completions, /v1/responses, /v1/messages, "
    "/v1/messages/count_tokens and /v1/embeddings; GET and DELETE /v1/responses/{id}; "
    "GET /v1/models; the Gemini API under /v1beta/models; the admin API under /admin/v1; "
    "GET /metrics, /livez, /readyz and the dashboard at /"
)


class ErrorPages:
    def __init__(self, services: ServerServices) -> None:
        self._services = services

    def render(self, request: HttpRequest, error: GatewayError) -> Response[bytes]:
        """``error`` as the response to ``request``, traced like every refusal."""
        services = self._services
        ctx = services.begin(request, "http")
        failed = services.gateway.reject(ctx, error, stream=False)
        if request.scope["path"].startswith("/v1/messages"):
            return anthropic_error_response(failed.error, failed.trace)
        if is_gemini_path(request.scope["path"]):
            return gemini_error_response(failed.error, failed.trace)
        return openai_error_response(failed.error, failed.trace)

    def framework_error(self, request: HttpRequest, exc: Exception) -> Response[bytes]:
        """Routing-level errors (unknown path, wrong method, unreadable request)."""
        status = exc.status_code if isinstance(exc, HTTPException) else 500
        # The scope's path, not request.url: building that parses the Host header.
        path = request.scope["path"]
        shown = path if len(path) <= CLIENT_VALUE_MAX_CHARS else client_value(path)
        if status == 404:
            return self.render(
                request, EndpointNotFoundError(f"no such endpoint: {shown}; {SERVED}")
            )
        if status == 405:
            message = f"{request.method} not allowed on {shown}"
            return self.render(request, MethodNotAllowedError(message))
        if status < 500:
            message = f"the request could not be read ({status})"
            return self.render(request, InvalidRequestError(message))
        return self.internal(request, exc)

    def internal(self, request: HttpRequest, exc: Exception) -> Response[bytes]:
        """A gw bug: logged with its frames only (its text may carry request data,
        invariant 9), answered 500."""
        frames = "".join(traceback.format_tb(exc.__traceback__))
        path = clipped(request.scope["path"])
        logger.error("unhandled %s on %s:\n%s", type(exc).__name__, path, frames)
        message = f"gw failed unexpectedly ({type(exc).__name__}); this is a gw bug"
        return self.render(request, InternalError(message))

    def any(self, request: HttpRequest, exc: Exception) -> Response[bytes]:
        """What the exception handlers Litestar is given make of ``exc``."""
        if isinstance(exc, HTTPException):
            return self.framework_error(request, exc)
        return self.internal(request, exc)
