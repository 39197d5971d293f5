"""One request flow for every client format: auth, body, decode, admission, answer or stream.

A ``ClientFormat`` says how its wire format reads a request and writes an answer, a
stream and an error; everything else (timeouts, admission, hang-ups, traces) is the same
for OpenAI Chat Completions and Anthropic Messages, so it lives here once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

import msgspec
from litestar import Response
from litestar.datastructures import Headers

from gw.errors import ClientAbortedError, GatewayError, RequestTimeoutError
from gw.execution.cache_use import CACHE_HEADER, cache_mode
from gw.execution.request_context import RequestContext, RequestFailedError
from gw.execution.stream_session import StreamSession
from gw.ir import ChatRequest, ChatResponse
from gw.record import TraceRecord
from gw.server.admission import queue_header
from gw.server.auth import Principal, require_model, require_scope
from gw.server.body import read_body
from gw.server.inference.hints import parse_hints
from gw.server.inference.idempotency import HEADER, Claim
from gw.server.responses import JSON, cache_header, gw_headers, trace_headers, warning_headers
from gw.server.runtime.disconnect import ClientGoneError, ClientWatch
from gw.server.runtime.sse_stream import SSEStream, StreamEncoder
from gw.server.services import HttpRequest, ServerServices


class ModelRequest(Protocol):
    @property
    def model(self) -> str:
        """What the client asked for: a route name or ``provider/model``."""
        ...


DecodedT = TypeVar("DecodedT", bound=ModelRequest)
# Run after a request is decoded, before it takes an admission slot: the request to run
# (its context pinned, its body rewritten), or the answer when it is not run now (a
# background Responses job queued: gw/server/inference/responses_api.py).
Prepare = Callable[
    [RequestContext, ChatRequest], Awaitable[tuple[RequestContext, ChatRequest] | Response[Any]]
]


class ClientFormat(Protocol):
    """What differs between client wire formats."""

    endpoint: str  # the trace's endpoint name

    def decode(self, body: bytes, headers: Headers) -> ChatRequest: ...

    def check_response(self, response: ChatResponse) -> None:
        """Raise a ``GatewayError`` if this format cannot express ``response``."""
        ...

    def encode_response(
        self, response: ChatResponse, ctx: RequestContext, chat: ChatRequest
    ) -> bytes: ...

    def stream_encoder(
        self, session: StreamSession, ctx: RequestContext, chat: ChatRequest
    ) -> StreamEncoder: ...

    def error_response(self, error: GatewayError, trace: TraceRecord) -> Response[bytes]: ...


async def serve_chat(
    services: ServerServices,
    client: ClientFormat,
    request: HttpRequest,
    *,
    prepare: Prepare | None = None,
) -> Response[Any]:
    """The whole life of one chat request, in ``client``'s format."""
    ctx = services.begin(request, client.endpoint)
    try:
        return await _serve(services, client, ctx, request, prepare)
    except RequestFailedError as failed:
        return client.error_response(failed.error, failed.trace)


async def read_chat(
    services: ServerServices, client: ClientFormat, ctx: RequestContext, request: HttpRequest
) -> tuple[RequestContext, ChatRequest]:
    """Authenticate, read the body within server.body_timeout, decode; GatewayError if not."""
    headers = request.headers
    return await read_request(services, ctx, request, lambda body: client.decode(body, headers))


async def read_request(
    services: ServerServices,
    ctx: RequestContext,
    request: HttpRequest,
    decode: Callable[[bytes], DecodedT],
) -> tuple[RequestContext, DecodedT]:
    """``read_chat`` for any endpoint: ``decode`` turns the body into its request."""
    ctx, decoded, _ = await read_request_body(services, ctx, request, decode)
    return ctx, decoded


async def read_request_body(
    services: ServerServices,
    ctx: RequestContext,
    request: HttpRequest,
    decode: Callable[[bytes], DecodedT],
) -> tuple[RequestContext, DecodedT, bytes]:
    """``read_request``, with the body as it came (an Idempotency-Key's fingerprint)."""
    server = ctx.snapshot.config.server
    principal = await services.authenticate(request)
    require_scope(principal, "inference")
    ctx = _with_principal(ctx, principal)
    hints = parse_hints(request.headers)
    if hints is not None:
        ctx = msgspec.structs.replace(ctx, hints=hints)
    if CACHE_HEADER in request.headers or "cache-control" in request.headers:
        ctx = msgspec.structs.replace(ctx, cache_mode=cache_mode(request.headers))
    # The body is read before taking an admission slot, within a time limit, so a slow
    # sender holds no slot and cannot hold its connection forever.
    try:
        async with asyncio.timeout(server.body_timeout.seconds):
            body = await read_body(request, server.max_body_bytes.bytes)
    except TimeoutError:
        limit = server.body_timeout
        raise RequestTimeoutError(
            f"the request body did not arrive within server.body_timeout ({limit})"
        ) from None
    decoded = decode(body)
    require_model(principal, decoded.model)
    return ctx, decoded, body


async def _serve(
    services: ServerServices,
    client: ClientFormat,
    ctx: RequestContext,
    request: HttpRequest,
    prepare: Prepare | None,
) -> Response[Any]:
    gateway = services.gateway
    chat: ChatRequest | None = None
    claim: Claim | None = None
    try:
        headers = request.headers
        ctx, chat, body = await read_request_body(
            services, ctx, request, lambda body: client.decode(body, headers)
        )
        if HEADER in headers:  # the one lookup a request without the header pays
            began = await idempotency_claim(
                services, ctx, request, body, chat.model, stream=chat.stream,
                background=_background(chat),
            )  # fmt: skip
            if isinstance(began, Response):
                return began
            claim = began
        if prepare is not None:
            prepared = await prepare(ctx, chat)
            if isinstance(prepared, Response):
                return prepared
            ctx, chat = prepared
    except GatewayError as error:
        if claim is not None:
            claim.abandon()
        model, stream = (chat.model, chat.stream) if chat else ("", False)
        raise gateway.reject(ctx, error, requested_model=model, stream=stream) from None
    if claim is None:
        return await _admitted(services, client, ctx, request, chat)
    return await kept(claim, _admitted(services, client, ctx, request, chat))


async def idempotency_claim(
    services: ServerServices,
    ctx: RequestContext,
    request: HttpRequest,
    body: bytes,
    model: str,
    *,
    stream: bool = False,
    background: bool = False,
) -> Claim | Response[bytes] | None:
    """The request's Idempotency-Key claimed (gw/server/inference/idempotency.py): None
    without the header (one lookup: all such a request pays), or the stored answer."""
    if services.idempotency is None or HEADER not in request.headers:
        return None
    return await services.idempotency.begin(
        ctx, request, body, model=model, stream=stream, background=background
    )


async def kept(claim: Claim, answer: Awaitable[Response[Any]]) -> Response[Any]:
    """``answer``, held for the key ``claim`` holds (or the key let go when it fails)."""
    try:
        response = await answer
    except BaseException:
        claim.abandon()
        raise
    await claim.keep(response)
    return response


def _background(chat: ChatRequest) -> bool:
    """A background Responses request (gw/server/inference/responses_api.py queues it)."""
    return chat.extensions.get("openai_responses", {}).get("background") is True


async def _admitted(
    services: ServerServices,
    client: ClientFormat,
    ctx: RequestContext,
    request: HttpRequest,
    chat: ChatRequest,
) -> Response[Any]:
    """From the admission slot to the answer, the stream or the error."""
    gateway = services.gateway
    try:
        queued_ms = await services.admission.acquire()
    except GatewayError as error:
        raise gateway.reject(ctx, error, requested_model=chat.model, stream=chat.stream) from None
    watch = ClientWatch(request)
    session: StreamSession | None = None
    handed_over = False  # once the stream response owns the watch, the slot and the session
    try:
        if not chat.stream:
            completed = await watch.run(gateway.complete(ctx, chat, accept=client.check_response))
            return Response(
                content=client.encode_response(completed.response, ctx, chat),
                status_code=200,
                media_type=JSON,
                headers={**trace_headers(completed.trace), **queue_header(queued_ms)},
            )
        session = await watch.run(gateway.open_stream(ctx, chat))
        streamed = SSEStream(
            session.events(),
            client.stream_encoder(session, ctx, chat),
            watch=watch,
            on_close=_closer(services, session),
            relay=session.relay,
            headers={
                **gw_headers(ctx.request_id, session.route_header, ctx.snapshot.revision),
                **warning_headers(session.warnings),
                **cache_header(session.cache),
                **queue_header(queued_ms),
                "cache-control": "no-cache",
                "x-accel-buffering": "no",
            },
        )
    except ClientGoneError:
        return Response(content=b"", status_code=ClientAbortedError.status)
    except RequestFailedError as failed:  # admitted, then failed: it waited like any other
        refused = client.error_response(failed.error, failed.trace)
        refused.headers.update(queue_header(queued_ms))
        return refused
    else:
        handed_over = True
        return streamed
    finally:
        if not handed_over:
            watch.close()
            services.admission.release()
            if session is not None:
                await session.close()


def _closer(services: ServerServices, session: StreamSession) -> Callable[[], Awaitable[None]]:
    """What ends a stream response, once: its trace written, its admission slot freed."""
    closed = False

    async def close() -> None:
        nonlocal closed
        if not closed:
            closed = True
            # The slot first: a cancel still pending on this task may land in the await.
            services.admission.release()
            await session.close()

    return close


def _with_principal(ctx: RequestContext, principal: Principal) -> RequestContext:
    if principal.key_id is None and principal.tenant is None:
        return ctx
    return msgspec.structs.replace(
        ctx, key_id=principal.key_id, tenant=principal.tenant, key_budget=principal.budget
    )
