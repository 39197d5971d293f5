"""POST /v1beta/models/{model}:embedContent and :batchEmbedContents through gw's embeddings
path: the same flow as POST /v1/embeddings (gw/server/inference/embeddings.py), in Gemini's shapes.
"""

from __future__ import annotations

from functools import partial

from litestar import Response

from gw.codecs.gemini.client_embeddings import (
    decode_batch_embed_request,
    decode_embed_request,
    encode_batch_embed_response,
    encode_embed_response,
)
from gw.errors import ClientAbortedError, GatewayError
from gw.execution.request_context import RequestContext, RequestFailedError
from gw.ir import EmbeddingRequest
from gw.server.admission import queue_header
from gw.server.inference.ingress import idempotency_claim, kept, read_request_body
from gw.server.responses import JSON, gemini_error_response, trace_headers
from gw.server.runtime.disconnect import ClientGoneError, ClientWatch
from gw.server.services import HttpRequest, ServerServices


async def serve_embed(
    services: ServerServices, request: HttpRequest, model: str, *, batch: bool
) -> Response[bytes]:
    endpoint = "gemini.batchEmbedContents" if batch else "gemini.embedContent"
    ctx = services.begin(request, endpoint)
    try:
        return await _serve(services, ctx, request, model, batch=batch)
    except RequestFailedError as failed:
        return gemini_error_response(failed.error, failed.trace)


async def _serve(
    services: ServerServices, ctx: RequestContext, request: HttpRequest, model: str, *, batch: bool
) -> Response[bytes]:
    gateway = services.gateway
    decode = decode_batch_embed_request if batch else decode_embed_request
    try:
        ctx, embed, body = await read_request_body(
            services, ctx, request, partial(decode, model=model)
        )
        claim = await idempotency_claim(services, ctx, request, body, model)
    except GatewayError as error:
        raise gateway.reject(ctx, error, requested_model=model, stream=False) from None
    if isinstance(claim, Response):
        return claim
    answer = _admitted(services, ctx, request, embed, batch=batch)
    return await answer if claim is None else await kept(claim, answer)


async def _admitted(
    services: ServerServices,
    ctx: RequestContext,
    request: HttpRequest,
    embed: EmbeddingRequest,
    *,
    batch: bool,
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
        refused = gemini_error_response(failed.error, failed.trace)
        refused.headers.update(queue_header(queued_ms))
        return refused
    finally:
        watch.close()
        services.admission.release()
    encode = encode_batch_embed_response if batch else encode_embed_response
    return Response(
        content=encode(done.response),
        status_code=200,
        media_type=JSON,
        headers={**trace_headers(done.trace), **queue_header(queued_ms)},
    )
