"""POST /v1/responses: the OpenAI Responses API in, the same format out.

The request goes through the IR like every other client format (gw/server/inference/ingress.py),
so any upstream serves it; a ``kind: openai_responses`` upstream gets what the IR does not
model back verbatim (gw/codecs/openai_responses/). Before it runs, a
``previous_response_id`` pins it to the upstream account holding that response
(gw/server/inference/previous_response.py), and ``background: true`` queues it instead
(gw/server/inference/background_jobs.py).
"""

from __future__ import annotations

from typing import Any

from litestar import Response, post
from litestar.datastructures import Headers
from litestar.handlers import HTTPRouteHandler

from gw.codecs.openai_responses.client_request import decode_responses_request
from gw.codecs.openai_responses.client_response import encode_responses_response
from gw.codecs.openai_responses.client_stream import ResponsesStreamEncoder
from gw.errors import GatewayError, InvalidRequestError
from gw.execution.request_context import RequestContext
from gw.execution.stream_session import StreamSession
from gw.ir import ChatRequest, ChatResponse
from gw.record import TraceRecord, response_id
from gw.server.inference.ingress import serve_chat
from gw.server.inference.previous_response import pin_previous
from gw.server.responses import JSON, gw_headers, openai_error_response
from gw.server.runtime.fast_path import Endpoint
from gw.server.services import HttpRequest, ServerServices


class OpenAIResponsesFormat:
    endpoint = "responses"

    def decode(self, body: bytes, headers: Headers) -> ChatRequest:
        return decode_responses_request(body)

    def check_response(self, response: ChatResponse) -> None:
        """Every answer the IR holds has a Responses form."""

    def encode_response(
        self, response: ChatResponse, ctx: RequestContext, chat: ChatRequest
    ) -> bytes:
        return encode_responses_response(
            response, chat, response_id=response_id(ctx.request_id), created_at=int(ctx.started_at)
        )

    def stream_encoder(
        self, session: StreamSession, ctx: RequestContext, chat: ChatRequest
    ) -> ResponsesStreamEncoder:
        return ResponsesStreamEncoder(
            request=chat,
            response_id=response_id(ctx.request_id),
            model=session.reported_model,
            created_at=int(ctx.started_at),
        )

    def error_response(self, error: GatewayError, trace: TraceRecord) -> Response[bytes]:
        return openai_error_response(error, trace)


class _KeepingBody(OpenAIResponsesFormat):
    """The format for one request, keeping its body (a background job stores it) and the
    request as decoded: the answer echoes that one, since the request that runs may carry
    the upstream's previous_response_id in place of the client's."""

    body = b""
    decoded: ChatRequest | None = None

    def decode(self, body: bytes, headers: Headers) -> ChatRequest:
        self.body = body
        self.decoded = super().decode(body, headers)
        return self.decoded

    def encode_response(
        self, response: ChatResponse, ctx: RequestContext, chat: ChatRequest
    ) -> bytes:
        return super().encode_response(response, ctx, self.decoded or chat)

    def stream_encoder(
        self, session: StreamSession, ctx: RequestContext, chat: ChatRequest
    ) -> ResponsesStreamEncoder:
        return super().stream_encoder(session, ctx, self.decoded or chat)


RESPONSES_PATH = "/v1/responses"
FORMAT = "openai_responses"


def responses_endpoint(services: ServerServices) -> Endpoint:
    """The endpoint function, for Litestar's route and for the fast path (fast_path.py)."""

    async def create_response(request: HttpRequest) -> Response[Any]:
        client = _KeepingBody()

        async def prepare(
            ctx: RequestContext, chat: ChatRequest
        ) -> tuple[RequestContext, ChatRequest] | Response[Any]:
            ctx, chat = await pin_previous(ctx, chat, services.response_links)
            if chat.extensions.get(FORMAT, {}).get("background") is not True:
                return ctx, chat
            if services.background is None:
                raise InvalidRequestError(
                    "background responses are off on this gateway; an operator turns them on "
                    "with responses.background.enabled: true",
                    param="background",
                )
            # The client's own request: the one that runs may hold the upstream's
            # previous_response_id, which the queued object must not echo.
            queued = await services.background.enqueue(ctx, client.decoded or chat, client.body)
            headers = gw_headers(ctx.request_id, "-", ctx.snapshot.revision)
            return Response(content=queued, status_code=200, media_type=JSON, headers=headers)

        return await serve_chat(services, client, request, prepare=prepare)

    return create_response


def responses_handlers(endpoint: Endpoint) -> list[HTTPRouteHandler]:
    return [post(RESPONSES_PATH, status_code=200, include_in_schema=False)(endpoint)]
