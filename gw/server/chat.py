"""POST /v1/chat/completions: OpenAI Chat Completions in, the same format out."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator
from typing import Any

import msgspec
from litestar import Response, post
from litestar.handlers import HTTPRouteHandler

from gw.codecs.openai_chat import ChatStreamEncoder, decode_chat_request, encode_chat_response
from gw.errors import ClientAbortedError, GatewayError, RequestTimeoutError
from gw.execution.gateway import RequestContext, RequestFailedError, StreamSession
from gw.ir import ChatRequest, ErrorEvent
from gw.server.body import read_body
from gw.server.disconnect import ClientGoneError, ClientWatch
from gw.server.responses import JSON, gw_headers, openai_error_response, trace_headers
from gw.server.services import HttpRequest, ServerServices
from gw.server.sse_stream import LastChunk, SSEStream

ENDPOINT = "chat.completions"


def chat_handlers(services: ServerServices) -> list[HTTPRouteHandler]:
    @post("/v1/chat/completions", status_code=200, include_in_schema=False)
    async def chat_completions(request: HttpRequest) -> Response[Any]:
        ctx = services.begin(request, ENDPOINT)
        try:
            return await _serve(services, ctx, request)
        except RequestFailedError as failed:
            return openai_error_response(failed.error, failed.trace)

    return [chat_completions]


async def _serve(
    services: ServerServices, ctx: RequestContext, request: HttpRequest
) -> Response[Any]:
    gateway = services.gateway
    server = ctx.snapshot.config.server
    chat: ChatRequest | None = None
    try:
        principal = services.authenticator.authenticate(request.headers)
        ctx = _with_principal(ctx, principal.key_id, principal.tenant)
        # The body is read before taking an admission slot, within a time limit, so a
        # slow sender holds no slot and cannot hold its connection forever.
        try:
            async with asyncio.timeout(server.body_timeout.seconds):
                body = await read_body(request, server.max_body_bytes.bytes)
        except TimeoutError:
            limit = server.body_timeout
            raise RequestTimeoutError(
                f"the request body did not arrive within server.body_timeout ({limit})"
            ) from None
        chat = decode_chat_request(body)
        await services.admission.acquire()
    except GatewayError as error:
        model, stream = (chat.model, chat.stream) if chat else ("", False)
        raise gateway.reject(ctx, error, requested_model=model, stream=stream) from None
    watch = ClientWatch(request)
    handed_over = False  # once the stream response owns the watch and the admission slot
    try:
        if not chat.stream:
            completed = await watch.run(gateway.complete(ctx, chat))
            response = msgspec.structs.replace(
                completed.response, id=ctx.request_id, created=int(ctx.started_at)
            )
            return Response(
                content=encode_chat_response(response, model=response.model or chat.model),
                status_code=200,
                media_type=JSON,
                headers=trace_headers(completed.trace),
            )
        session = await watch.run(gateway.open_stream(ctx, chat))
        handed_over = True
        return SSEStream(
            _sse(services, session, ctx, chat),
            watch=watch,
            headers={
                **gw_headers(ctx.request_id, session.target.key, ctx.snapshot.revision),
                "cache-control": "no-cache",
                "x-accel-buffering": "no",
            },
        )
    except ClientGoneError:
        return Response(content=b"", status_code=ClientAbortedError.status)
    finally:
        if not handed_over:
            watch.close()
            services.admission.release()


async def _sse(
    services: ServerServices, session: StreamSession, ctx: RequestContext, chat: ChatRequest
) -> AsyncGenerator[bytes, None]:
    """Encode the committed stream; a later failure becomes one error event (invariant 3)."""
    encoder = ChatStreamEncoder(
        request_id=ctx.request_id,
        model=session.reported_model,
        created=int(ctx.started_at),
        include_usage=chat.include_usage,
    )
    try:
        async with contextlib.aclosing(session.events()) as events:
            async for event in events:
                frame = encoder.encode(event)
                if frame:
                    yield frame
        yield LastChunk(encoder.done())
    except GatewayError as error:
        yield LastChunk(encoder.encode(ErrorEvent(code=error.code, message=error.client_message)))
    finally:
        services.admission.release()


def _with_principal(ctx: RequestContext, key_id: str | None, tenant: str | None) -> RequestContext:
    if key_id is None and tenant is None:
        return ctx
    return msgspec.structs.replace(ctx, key_id=key_id, tenant=tenant)
