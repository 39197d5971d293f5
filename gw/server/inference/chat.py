"""POST /v1/chat/completions: OpenAI Chat Completions in, the same format out."""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import Response, post
from litestar.datastructures import Headers
from litestar.handlers import HTTPRouteHandler

from gw.codecs.openai_chat import ChatStreamEncoder, decode_chat_request, encode_chat_response
from gw.errors import GatewayError
from gw.execution.request_context import RequestContext
from gw.execution.stream_session import StreamSession
from gw.ir import ChatRequest, ChatResponse
from gw.record import TraceRecord
from gw.server.inference.ingress import serve_chat
from gw.server.responses import openai_error_response
from gw.server.runtime.fast_path import Endpoint
from gw.server.services import HttpRequest, ServerServices


class OpenAIChatFormat:
    endpoint = "chat.completions"

    def decode(self, body: bytes, headers: Headers) -> ChatRequest:
        return decode_chat_request(body)

    def check_response(self, response: ChatResponse) -> None:
        """Every answer the IR holds has an OpenAI form."""

    def encode_response(
        self, response: ChatResponse, ctx: RequestContext, chat: ChatRequest
    ) -> bytes:
        response = msgspec.structs.replace(response, id=ctx.request_id, created=int(ctx.started_at))
        return encode_chat_response(response, model=response.model or chat.model)

    def stream_encoder(
        self, session: StreamSession, ctx: RequestContext, chat: ChatRequest
    ) -> ChatStreamEncoder:
        return ChatStreamEncoder(
            request_id=ctx.request_id,
            model=session.reported_model,
            created=int(ctx.started_at),
            include_usage=chat.include_usage,
        )

    def error_response(self, error: GatewayError, trace: TraceRecord) -> Response[bytes]:
        return openai_error_response(error, trace)


CHAT_PATH = "/v1/chat/completions"


def chat_endpoint(services: ServerServices) -> Endpoint:
    """The endpoint function, for Litestar's route and for the fast path (fast_path.py)."""
    client = OpenAIChatFormat()

    async def chat_completions(request: HttpRequest) -> Response[Any]:
        return await serve_chat(services, client, request)

    return chat_completions


def chat_handlers(endpoint: Endpoint) -> list[HTTPRouteHandler]:
    return [post(CHAT_PATH, status_code=200, include_in_schema=False)(endpoint)]
