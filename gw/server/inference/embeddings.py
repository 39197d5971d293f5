"""POST /v1/embeddings: OpenAI's embeddings in, the same format out.

The same flow as a non-streaming chat request (``gw.server.inference.ingress``): authenticate, read
the body within its limits, decode, take an admission slot, run while watching for a
client that hangs up; errors in OpenAI's shape with the ``gw`` block.
"""

from __future__ import annotations

from litestar import Response, post
from litestar.handlers import HTTPRouteHandler

from gw.codecs.openai_chat import (
    decode_embeddings_request,
    encode_embeddings_response,
    requested_encoding,
)
from gw.errors import ClientAbortedError, GatewayError
from gw.execution.request_context import RequestContext, RequestFailedError
from gw.ir import EmbeddingRequest, EmbeddingResponse
from gw.server.admission import queue_header
from gw.server.inference.ingress import idempotency_claim, kept, read_request_body
from gw.server.responses import JSON, openai_error_response, trace_headers
from gw.server.runtime.disconnect import ClientGoneError, ClientWatch
from gw.server.services import HttpRequest, ServerServices

ENDPOINT = "embeddings"  # the trace's endpoint name


def embedding_handlers(services: ServerServices) -> list[HTTPRouteHandler]:
    @post("/v1/embeddings", status_code=200, include_in_schema=False)
    async def create_embeddings(request: HttpRequest) -> Response[bytes]:
        ctx = services.begin(request, ENDPOINT)
        try:
            return await _serve(services, ctx, request)
        except RequestFailedError as failed:
            return openai_error_response(failed.error, failed.trace)

    return [create_embeddings]


async def _serve(
    services: ServerServices, ctx: RequestContext, request: HttpRequest
) -> Response[bytes]:
    gateway = services.gateway
    try:
        ctx, embed, body = await read_request_body(
            services, ctx, request, decode_embeddings_request
        )
        claim = await idempotency_claim(services, ctx, request, body, embed.model)
    except GatewayError as error:
        raise gateway.reject(ctx, error, stream=False) from None
    if isinstance(claim, Response):
        return claim
    if claim is None:
        return await _admitted(services, ctx, request, embed)
    return await kept(claim, _admitted(services, ctx, request, embed))


async def _admitted(
    services: ServerServices, ctx: RequestContext, request: HttpRequest, embed: EmbeddingRequest
) -> Response[bytes]:
    gateway = services.gateway
    try:
        queued_ms = await services.admission.acquire()
    except GatewayError as error:
        raise gateway.reject(ctx, error, requested_model=embed.model, stream=False) from None
    watch = ClientWatch(request)
    try:
        done = await watch.run(gateway.embed(ctx, embed))
    except ClientGoneError:
        return Response(content=b"", status_code=ClientAbortedError.status)
    except RequestFailedError as failed:  # admitted, then failed: it waited like any other
        refused = openai_error_response(failed.error, failed.trace)
        refused.headers.update(queue_header(queued_ms))
        return refused
    finally:
        watch.close()
        services.admission.release()
    return Response(
        content=_encode(done.response, embed),
        status_code=200,
        media_type=JSON,
        headers={**trace_headers(done.trace), **queue_header(queued_ms)},
    )


def _encode(response: EmbeddingResponse, request: EmbeddingRequest) -> bytes:
    """In the format the client asked for; ``model`` is the one that answered, if known."""
    return encode_embeddings_response(
        response,
        model=response.model or request.model,
        encoding_format=requested_encoding(request),
    )
