"""Adapter for Anthropic's Messages API (provider kind ``anthropic``).

``POST {base_url}/v1/messages`` with the key in ``x-api-key`` and the API version in
``anthropic-version`` (``api_version`` in config, else ``2023-06-01``, which still takes
temperature, top_p and top_k; ``2026-10-21`` removed them). The ``anthropic`` SDK 2.x sends
2026-10-21 with the key as a bearer token; x-api-key stays documented for every version.
Bytes move through an ``HttpTransport``; this module only speaks the wire format.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Mapping

from gw.adapters.exchange import post_for_body, stream_events
from gw.adapters.secrets import SecretResolver
from gw.codecs.anthropic_messages.upstream_errors import error_from_upstream
from gw.codecs.anthropic_messages.upstream_messages import lossy_notes
from gw.codecs.anthropic_messages.upstream_request import (
    DEFAULT_API_VERSION,
    encode_upstream_request,
    request_notes,
)
from gw.codecs.anthropic_messages.upstream_response import decode_upstream_response
from gw.codecs.anthropic_messages.upstream_stream import UpstreamStreamDecoder
from gw.codecs.foreign_fields import foreign_field_notes
from gw.errors import GatewayError
from gw.ir import ChatResponse, StreamEvent
from gw.ports import UpstreamCall
from gw.upstream_http.http_transport import HttpTransport

ANTHROPIC_BASE_URL = "https://api.anthropic.com"
# Sent as max_tokens when the client set none: Anthropic requires one (DESIGN.md invariant 7).
# Every current Claude model can produce this many tokens; a lower ceiling (a policy
# limit, the catalog's max_output_tokens: UpstreamCall.output_ceiling) lowers it.
DEFAULT_MAX_TOKENS = 4096


class AnthropicUpstream:
    """Speaks ``POST {base_url}/v1/messages`` over the shared transport."""

    def __init__(self, transport: HttpTransport, secrets: SecretResolver) -> None:
        self._transport = transport
        self._secrets = secrets

    async def complete(self, call: UpstreamCall) -> ChatResponse:
        body = await post_for_body(
            self._transport,
            call,
            _url(call),
            headers=self._headers(call),
            body=_body(call, stream=False),
            read_error=_error,
        )
        return decode_upstream_response(body)

    def stream(self, call: UpstreamCall) -> AsyncIterator[StreamEvent]:
        return stream_events(
            self._transport,
            call,
            _url(call),
            headers=self._headers(call),
            body=_body(call, stream=True),
            read_error=_error,
            decoder=UpstreamStreamDecoder(),
        )

    def _headers(self, call: UpstreamCall) -> dict[str, str]:
        headers = {
            "content-type": "application/json",
            "anthropic-version": _api_version(call),
            **self._secrets.headers(call),
        }
        if call.request.betas:
            _add_betas(headers, call.request.betas)
        key = self._secrets.api_key(call)
        if key is not None:
            headers["x-api-key"] = key
        return headers


def _add_betas(headers: dict[str, str], betas: tuple[str, ...]) -> None:
    """The client's beta features join any the provider's ``headers`` turn on, once each."""
    configured = [name for name in headers if name.lower() == BETA_HEADER]
    names = [item.strip() for name in configured for item in headers.pop(name).split(",")]
    headers[BETA_HEADER] = ",".join(dict.fromkeys(name for name in (*names, *betas) if name))


BETA_HEADER = "anthropic-beta"


def _url(call: UpstreamCall) -> str:
    return f"{(call.provider.base_url or ANTHROPIC_BASE_URL).rstrip('/')}/v1/messages"


def _body(call: UpstreamCall, *, stream: bool) -> bytes:
    call.notes.extend(lossy_notes(call.request.messages))
    call.notes.extend(foreign_field_notes(call.request, "anthropic"))
    call.notes.extend(request_notes(call.request))
    default = DEFAULT_MAX_TOKENS
    if call.output_ceiling is not None:
        default = min(default, call.output_ceiling)
    if call.request.max_tokens is None:
        call.limit_notes.append(f"max_tokens {default} added: Anthropic requires one")
    return encode_upstream_request(
        call.request,
        model=call.request.model,
        stream=stream,
        default_max_tokens=default,
        api_version=_api_version(call),
    )


def _api_version(call: UpstreamCall) -> str:
    return call.provider.api_version or DEFAULT_API_VERSION


def _error(status: int, body: bytes, headers: Mapping[str, str]) -> GatewayError:
    # The wall clock turns anthropic-ratelimit-*-reset times into a wait when a 429 comes
    # without retry-after.
    return error_from_upstream(status, body, headers, now=time.time())
