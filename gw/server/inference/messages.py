"""POST /v1/messages (and count_tokens): Anthropic Messages in, the same format out."""

from __future__ import annotations

from typing import Any

from litestar import Response, post
from litestar.datastructures import Headers
from litestar.handlers import HTTPRouteHandler

from gw.codecs.anthropic_messages.client_request import (
    decode_count_tokens_request,
    decode_messages_request,
    encode_count_tokens_response,
)
from gw.codecs.anthropic_messages.client_response import (
    check_messages_response,
    encode_messages_response,
)
from gw.codecs.anthropic_messages.client_stream import MessagesStreamEncoder
from gw.errors import GatewayError
from gw.execution.request_context import RequestContext, refuse_if_denied
from gw.execution.stream_session import StreamSession
from gw.ir import ChatRequest, ChatResponse
from gw.record import TraceRecord, message_id
from gw.routing.estimate import estimate_input_tokens
from gw.server.inference.ingress import read_chat, serve_chat
from gw.server.responses import JSON, anthropic_error_response, gw_headers
from gw.server.runtime.fast_path import Endpoint
from gw.server.services import HttpRequest, ServerServices


class AnthropicMessagesFormat:
    endpoint = "messages"

    def decode(self, body: bytes, headers: Headers) -> ChatRequest:
        return decode_messages_request(body, headers.getall("anthropic-beta", ()))

    def check_response(self, response: ChatResponse) -> None:
        check_messages_response(response)

    def encode_response(
        self, response: ChatResponse, ctx: RequestContext, chat: ChatRequest
    ) -> bytes:
        return encode_messages_response(
            response, message_id=_message_id(ctx), model=response.model or chat.model
        )

    def stream_encoder(
        self, session: StreamSession, ctx: RequestContext, chat: ChatRequest
    ) -> MessagesStreamEncoder:
        return MessagesStreamEncoder(
            message_id=_message_id(ctx),
            model=session.reported_model,
            input_tokens=estimate_input_tokens(chat),
        )

    def error_response(self, error: GatewayError, trace: TraceRecord) -> Response[bytes]:
        return anthropic_error_response(error, trace)


class _CountTokensFormat(AnthropicMessagesFormat):
    endpoint = "messages.count_tokens"

    def decode(self, body: bytes, headers: Headers) -> ChatRequest:
        return decode_count_tokens_request(body)


def _message_id(ctx: RequestContext) -> str:
    # Anthropic ids start with msg_; gw's request id follows, so `gw explain` takes either.
    return message_id(ctx.request_id)


MESSAGES_PATH = "/v1/messages"


def messages_endpoint(services: ServerServices) -> Endpoint:
    """The endpoint function, for Litestar's route and for the fast path (fast_path.py)."""
    messages = AnthropicMessagesFormat()

    async def create_message(request: HttpRequest) -> Response[Any]:
        return await serve_chat(services, messages, request)

    return create_message


def message_handlers(services: ServerServices, endpoint: Endpoint) -> list[HTTPRouteHandler]:
    count = _CountTokensFormat()
    create_message = post(MESSAGES_PATH, status_code=200, include_in_schema=False)(endpoint)

    @post("/v1/messages/count_tokens", status_code=200, include_in_schema=False)
    async def count_tokens(request: HttpRequest) -> Response[bytes]:
        """gw's estimate (about four characters a token); no upstream is called."""
        ctx = services.begin(request, count.endpoint)
        try:
            ctx, chat = await read_chat(services, count, ctx, request)
            refuse_if_denied(ctx, chat)
        except GatewayError as error:
            failed = services.gateway.reject(ctx, error, stream=False)
            return anthropic_error_response(failed.error, failed.trace)
        return Response(
            content=encode_count_tokens_response(estimate_input_tokens(chat)),
            media_type=JSON,
            headers=gw_headers(ctx.request_id, "-", ctx.snapshot.revision),
        )

    return [create_message, count_tokens]
