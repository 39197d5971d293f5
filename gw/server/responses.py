"""Headers and error bodies every /v1 response carries, successes and errors alike."""

from __future__ import annotations

import math
from urllib.parse import quote

from litestar import Response

from gw.codecs.anthropic_messages.client_errors import encode_error as encode_anthropic_error
from gw.codecs.gemini.client_errors import encode_error as encode_gemini_error
from gw.codecs.openai_chat import encode_error
from gw.errors import DEFAULT_RETRY_AFTER_S, GatewayError
from gw.record import TraceRecord

JSON = "application/json"


def gw_headers(request_id: str, route: str, revision: int) -> dict[str, str]:
    # The id also goes under the names the SDKs read it from (the OpenAI SDKs'
    # ``_request_id``: x-request-id; the Anthropic SDKs': request-id), on every format, so
    # each client's request-id accessor shows the id `gw explain` takes.
    return {
        "x-gw-request-id": request_id,
        "x-request-id": request_id,
        "request-id": request_id,
        "x-gw-route": header_safe(route),
        "x-gw-revision": str(revision),
    }


ROUTE_HEADER_MAX = 256


def header_safe(value: str) -> str:
    """``value`` fit for a header: the model in ``provider/model`` is the client's own text,
    so characters other than printable ASCII are percent-encoded and a long one is cut."""
    if value.isascii() and value.isprintable() and len(value) <= ROUTE_HEADER_MAX:
        return value
    return quote(value[:ROUTE_HEADER_MAX], safe="/:@!$&'()*+,;=-._~ ")


WARNING_HEADER = "x-gw-warning"
WARNING_HEADER_MAX = 1024


def warning_headers(warnings: tuple[str, ...]) -> dict[str, str]:
    """``x-gw-warning``: the decision's non-blocking warnings (a clamp, a budget nearly
    spent), joined by `` | ``; none when there are none."""
    if not warnings:
        return {}
    text = " | ".join(warnings)[:WARNING_HEADER_MAX]
    return {WARNING_HEADER: quote(text, safe="/:@!$&'()*+,;=-._~ %|")}


def cache_header(outcome: str | None) -> dict[str, str]:
    """``x-gw-cache``: what the response cache did (hit, miss, bypass); none when the
    request's policy has no cache."""
    return {} if outcome is None else {"x-gw-cache": outcome}


def trace_headers(trace: TraceRecord) -> dict[str, str]:
    headers = gw_headers(trace.request_id, trace.route_header, trace.revision)
    if trace.decision is not None and trace.decision.warnings:
        headers |= warning_headers(trace.decision.warnings)
    if trace.cache is not None:
        headers["x-gw-cache"] = trace.cache
    return headers


def gw_block(error: GatewayError, trace: TraceRecord) -> dict[str, object]:
    """The ``gw`` block of an error body: enough to find and explain the request."""
    return {
        "code": error.code,
        "request_id": trace.request_id,
        "route": trace.route_header,
        "requested_model": trace.requested_model or None,
        "policy": trace.policy,
        "revision": trace.revision,
        "attempts": [
            {
                "number": attempt.number,
                "provider": attempt.provider,
                "model": attempt.model,
                "outcome": attempt.outcome,
                "error_code": attempt.error_code,
                "upstream_status": attempt.upstream_status,
                "blame": attempt.blame,
                "latency_ms": attempt.latency_ms,
            }
            for attempt in trace.attempts
        ],
    }


def openai_error_response(error: GatewayError, trace: TraceRecord) -> Response[bytes]:
    return _error_response(error, trace, encode_error(error, gw_block=gw_block(error, trace)))


def anthropic_error_response(error: GatewayError, trace: TraceRecord) -> Response[bytes]:
    body = encode_anthropic_error(error, gw_block=gw_block(error, trace))
    return _error_response(error, trace, body)


def gemini_error_response(error: GatewayError, trace: TraceRecord) -> Response[bytes]:
    return _error_response(
        error, trace, encode_gemini_error(error, gw_block=gw_block(error, trace))
    )


def _error_response(error: GatewayError, trace: TraceRecord, body: bytes) -> Response[bytes]:
    headers = trace_headers(trace)
    # Every one says when to come back: the known wait, or 1 s; so does a 409 that passes
    # by itself (an Idempotency-Key whose first request is still being answered).
    if error.status in (429, 503) or (error.status == 409 and error.retryable):
        wait = DEFAULT_RETRY_AFTER_S if error.retry_after is None else error.retry_after
        headers["retry-after"] = str(max(1, math.ceil(wait)))
    return Response(content=body, status_code=error.status, media_type=JSON, headers=headers)
