"""Adapter for OpenAI's Responses API (provider kind ``openai_responses``).

``POST {base_url}/responses`` (``base_url`` as the OpenAI SDK's, default
``https://api.openai.com/v1``) with the key as a bearer token, streamed or not; embeddings
go to ``{base_url}/embeddings`` as for kind ``openai``. Any client format is served
through the IR; a Responses client's own items, tools and settings reach it verbatim.

Azure OpenAI: its v1 API is the same wire at ``https://RESOURCE.openai.azure.com/openai/v1``
and takes the key as a bearer token (what the OpenAI SDK sends there), so it needs only
that ``base_url``. Set ``api_version`` for Azure's dated or ``preview`` API versions: it is
sent as the ``api-version`` query parameter and the key moves to the ``api-key`` header,
as kind ``azure_openai`` sends it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from urllib.parse import quote

from gw.adapters.exchange import post_for_body, stream_events
from gw.adapters.openai import OpenAIUpstream
from gw.codecs.openai_responses import (
    UpstreamStreamDecoder,
    decode_upstream_response,
    encode_upstream_request,
    error_from_upstream,
    lossy_notes,
)
from gw.config.snapshot import OPENAI_BASE_URL
from gw.ir import ChatResponse, StreamEvent
from gw.ports import EmbeddingCall, UpstreamCall

RESPONSES_PATH = "responses"


class OpenAIResponsesUpstream(OpenAIUpstream):
    """Speaks ``POST {base_url}/responses``; ``embed`` is kind ``openai``'s, same host."""

    async def complete(self, call: UpstreamCall) -> ChatResponse:
        body = await post_for_body(
            self._transport,
            call,
            self._url(call, RESPONSES_PATH),
            headers=self._headers(call),
            body=_body(call, stream=False),
            read_error=error_from_upstream,
        )
        return decode_upstream_response(body)

    def stream(self, call: UpstreamCall) -> AsyncIterator[StreamEvent]:
        return stream_events(
            self._transport,
            call,
            self._url(call, RESPONSES_PATH),
            headers=self._headers(call),
            body=_body(call, stream=True),
            read_error=error_from_upstream,
            decoder=UpstreamStreamDecoder(),
        )

    def _url(self, call: UpstreamCall | EmbeddingCall, path: str = RESPONSES_PATH) -> str:
        base = (call.provider.base_url or OPENAI_BASE_URL).rstrip("/")
        version = call.provider.api_version
        query = "" if version is None else f"?api-version={quote(version, safe='')}"
        return f"{base}/{path}{query}"

    def _headers(self, call: UpstreamCall | EmbeddingCall) -> dict[str, str]:
        headers = {"content-type": "application/json", **self._secrets.headers(call)}
        key = self._secrets.api_key(call)
        if key is None:
            return headers
        if call.provider.api_version is None:
            headers["authorization"] = f"Bearer {key}"
        else:  # Azure's dated and preview API versions
            headers["api-key"] = key
        return headers


def _body(call: UpstreamCall, *, stream: bool) -> bytes:
    call.notes.extend(lossy_notes(call.request))
    return encode_upstream_request(call.request, model=call.request.model, stream=stream)
