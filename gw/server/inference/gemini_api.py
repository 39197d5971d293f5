"""The Gemini API (``/v1beta``, as google-genai and Gemini CLI call it) in, the same format out.

``POST /v1beta/models/{model}:generateContent`` and ``:streamGenerateContent`` go through
the IR like every other client format (gw/server/inference/ingress.py), so any upstream serves
them; ``:countTokens`` answers gw's estimate without an upstream call; ``:embedContent``
and ``:batchEmbedContents`` go through gw's embeddings path (gemini_embed.py);
``GET /v1beta/models`` and ``/v1beta/models/{model}`` list what a client may name
(gemini_models.py). ``{model}`` is a route name or ``provider/model``, which holds a
slash, so one route takes every path under ``/v1beta`` and reads it here; anything else
there is a 404 ``endpoint_not_found`` naming what gw serves, never a 405. google-genai
calls ``/v1`` by default: the same methods answer under ``/v1/models`` too.

The key comes as ``x-goog-api-key`` or ``?key=`` (gw/server/auth.py); neither the path's
query string nor the key reaches a trace or a log.
"""

from __future__ import annotations

from typing import Any

from litestar import Response, route
from litestar.datastructures import Headers
from litestar.handlers import HTTPRouteHandler
from litestar.types import Method as HttpMethodName

from gw.codecs.gemini.client_request import (
    decode_count_tokens_request,
    decode_generate_request,
    encode_count_tokens_response,
)
from gw.codecs.gemini.client_response import check_response, encode_response
from gw.codecs.gemini.client_stream import GeminiStreamEncoder
from gw.errors import EndpointNotFoundError, GatewayError
from gw.execution.request_context import RequestContext, refuse_if_denied
from gw.execution.stream_session import StreamSession
from gw.ir import ChatRequest, ChatResponse
from gw.record import TraceRecord
from gw.routing.estimate import estimate_input_tokens
from gw.server.inference.gemini_embed import serve_embed
from gw.server.inference.gemini_models import serve_model, serve_models
from gw.server.inference.ingress import read_chat, serve_chat
from gw.server.responses import JSON, gemini_error_response, gw_headers
from gw.server.runtime.sse_stream import SSEStream
from gw.server.services import HttpRequest, ServerServices

GEMINI_PREFIX = "/v1beta"
V1_MODELS = "/v1/models"
SERVED = (
    "gw serves the Gemini API's POST /v1beta/models/{model}:generateContent, "
    ":streamGenerateContent, :countTokens, :embedContent and :batchEmbedContents, and "
    "GET /v1beta/models and /v1beta/models/{model} (the same under /v1)"
)
_METHODS: list[HttpMethodName] = ["GET", "POST", "PUT", "PATCH", "DELETE"]


class GeminiGenerateFormat:
    """Gemini's ``generateContent``; the model and the stream flag come from the path, so
    there is one of these per request."""

    def __init__(self, model: str, *, stream: bool = False, sse: bool = True) -> None:
        self.endpoint = "gemini.streamGenerateContent" if stream else "gemini.generateContent"
        self._model = model
        self._stream = stream
        self._sse = sse

    def decode(self, body: bytes, headers: Headers) -> ChatRequest:
        return decode_generate_request(body, model=self._model, stream=self._stream)

    def check_response(self, response: ChatResponse) -> None:
        check_response(response)

    def encode_response(
        self, response: ChatResponse, ctx: RequestContext, chat: ChatRequest
    ) -> bytes:
        return encode_response(
            response, response_id=ctx.request_id, model=response.model or chat.model
        )

    def stream_encoder(
        self, session: StreamSession, ctx: RequestContext, chat: ChatRequest
    ) -> GeminiStreamEncoder:
        provider = ctx.snapshot.providers.get(session.target.provider)
        return GeminiStreamEncoder(
            response_id=ctx.request_id,
            model=session.reported_model,
            sse=self._sse,
            # A Gemini upstream's signature without text belongs on the part after it.
            signatures_lead=provider is not None and provider.kind == "gemini",
        )

    def error_response(self, error: GatewayError, trace: TraceRecord) -> Response[bytes]:
        return gemini_error_response(error, trace)


class _CountTokensFormat(GeminiGenerateFormat):
    def __init__(self, model: str) -> None:
        super().__init__(model)
        self.endpoint = "gemini.countTokens"

    def decode(self, body: bytes, headers: Headers) -> ChatRequest:
        return decode_count_tokens_request(body, model=self._model)


def gemini_handlers(services: ServerServices) -> list[HTTPRouteHandler]:
    @route(
        GEMINI_PREFIX + "/{rest:path}",
        http_method=_METHODS,
        status_code=200,
        include_in_schema=False,
    )
    async def gemini_api(request: HttpRequest, rest: str) -> Response[Any]:
        """Every path under /v1beta: read here, as ``{model}`` may hold slashes."""
        path = rest.lstrip("/")
        method = request.method
        if path in ("models", "models/") and method == "GET":
            return await serve_models(services, request)
        if path.startswith("models/"):
            name = path.removeprefix("models/")
            if method == "GET" and name:
                return await serve_model(services, request, name)
            if method == "POST":
                return await _serve_action(services, request, name)
        return not_found(services, request)

    # google-genai's default API version is v1: the same methods under /v1/models (whose
    # GETs gw/server/inference/models.py answers in Google's shape for Google's clients).
    @route(
        V1_MODELS + "/{model_id:path}", http_method="POST", status_code=200, include_in_schema=False
    )
    async def gemini_v1(request: HttpRequest, model_id: str) -> Response[Any]:
        return await _serve_action(services, request, model_id.lstrip("/"))

    return [gemini_api, gemini_v1]


async def _serve_action(services: ServerServices, request: HttpRequest, name: str) -> Response[Any]:
    """``POST .../models/{model}:{action}``; ``name`` is what follows ``models/``."""
    model, colon, action = name.rpartition(":")
    if not colon:
        return not_found(services, request)
    if action == "generateContent":
        return await serve_chat(services, GeminiGenerateFormat(model), request)
    if action == "streamGenerateContent":
        sse = request.query_params.get("alt") == "sse"
        client = GeminiGenerateFormat(model, stream=True, sse=sse)
        answer = await serve_chat(services, client, request)
        if isinstance(answer, SSEStream) and not sse:
            answer.media_type = JSON  # Google's other stream form: one JSON array
        return answer
    if action == "countTokens":
        return await _count_tokens(services, request, model)
    if action in ("embedContent", "batchEmbedContents"):
        return await serve_embed(services, request, model, batch=action == "batchEmbedContents")
    return not_found(services, request)


async def _count_tokens(
    services: ServerServices, request: HttpRequest, model: str
) -> Response[bytes]:
    """gw's estimate (about four characters a token); no upstream is called."""
    count = _CountTokensFormat(model)
    ctx = services.begin(request, count.endpoint)
    try:
        ctx, chat = await read_chat(services, count, ctx, request)
        refuse_if_denied(ctx, chat)
    except GatewayError as error:
        failed = services.gateway.reject(ctx, error, requested_model=model, stream=False)
        return gemini_error_response(failed.error, failed.trace)
    return Response(
        content=encode_count_tokens_response(estimate_input_tokens(chat)),
        media_type=JSON,
        headers=gw_headers(ctx.request_id, "-", ctx.snapshot.revision),
    )


def not_found(services: ServerServices, request: HttpRequest) -> Response[bytes]:
    """404 ``endpoint_not_found`` in Google's shape, naming the endpoints gw serves."""
    ctx = services.begin(request, "http")
    path = request.url.path  # never the query string: it may hold the key
    error = EndpointNotFoundError(f"no such endpoint: {request.method} {path}; {SERVED}")
    failed = services.gateway.reject(ctx, error, stream=False)
    return gemini_error_response(failed.error, failed.trace)
