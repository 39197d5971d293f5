"""Adapter for Google AI Studio's Gemini API (provider kind ``gemini``), chat only.

``POST {base_url}/v1beta/models/{model}:generateContent``, or
``:streamGenerateContent?alt=sse`` for a stream. The key travels in the
``x-goog-api-key`` header, never as ``?key=``: URLs reach logs and traces. Bytes move
through an ``HttpTransport``; the wire format lives in ``gw.codecs.gemini``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from gw.adapters.exchange import post_for_body, stream_events
from gw.adapters.secrets import SecretResolver
from gw.codecs.cache_marks import cache_mark_note
from gw.codecs.foreign_fields import foreign_field_notes
from gw.codecs.gemini.embeddings import (
    batches,
    decode_embeddings_response,
    embeddings_path,
    encode_embeddings_request,
    join_answers,
)
from gw.codecs.gemini.upstream_errors import error_from_upstream
from gw.codecs.gemini.upstream_request import (
    API_VERSION,
    encode_upstream_request,
    request_path,
)
from gw.codecs.gemini.upstream_response import decode_upstream_response
from gw.codecs.gemini.upstream_stream import UpstreamStreamDecoder
from gw.ir import ChatResponse, EmbeddingResponse, StreamEvent
from gw.ports import EmbeddingCall, UpstreamCall
from gw.upstream_http.http_transport import HttpTransport

GEMINI_BASE_URL = "https://generativelanguage.googleapis.com"


class GeminiUpstream:
    """Speaks Gemini's generateContent over the shared transport."""

    def __init__(self, transport: HttpTransport, secrets: SecretResolver) -> None:
        self._transport = transport
        self._secrets = secrets

    async def complete(self, call: UpstreamCall) -> ChatResponse:
        body = await post_for_body(
            self._transport,
            call,
            _url(call, stream=False),
            headers=self._headers(call),
            body=_body(call),
            read_error=error_from_upstream,
        )
        return decode_upstream_response(body, model=call.request.model)

    def stream(self, call: UpstreamCall) -> AsyncIterator[StreamEvent]:
        # No end marker: the decoder reads to EOF, which leaves the connection reusable.
        return stream_events(
            self._transport,
            call,
            _url(call, stream=True),
            headers=self._headers(call),
            body=_body(call),
            read_error=error_from_upstream,
            decoder=UpstreamStreamDecoder(model=call.request.model),
        )

    async def embed(self, call: EmbeddingCall) -> EmbeddingResponse:
        """One ``batchEmbedContents`` call per ``MAX_BATCH`` inputs, answers joined in order."""
        answers = []
        for batch in batches(call.request):
            body = await post_for_body(
                self._transport,
                call,
                _base(call) + embeddings_path(call.request.model),
                headers=self._headers(call),
                body=encode_embeddings_request(batch),
                read_error=error_from_upstream,
            )
            answers.append(decode_embeddings_response(body, model=call.request.model))
        return join_answers(answers, model=call.request.model)

    def _headers(self, call: UpstreamCall | EmbeddingCall) -> dict[str, str]:
        headers = {"content-type": "application/json", **self._secrets.headers(call)}
        key = self._secrets.api_key(call)
        if key is not None:
            headers["x-goog-api-key"] = key
        return headers


def _body(call: UpstreamCall) -> bytes:
    """The request body; what Gemini's format cannot carry exactly goes to the trace."""
    encoded = encode_upstream_request(call.request)
    call.notes.extend(encoded.notes)
    call.notes.extend(cache_mark_note(call.request, "Gemini"))
    call.notes.extend(foreign_field_notes(call.request, "gemini"))
    return encoded.body


def _url(call: UpstreamCall, *, stream: bool) -> str:
    return _base(call) + request_path(call.request.model, stream=stream)


def _base(call: UpstreamCall | EmbeddingCall) -> str:
    # The host is the base URL (as in Google's SDK); a configured "/v1beta" is tolerated.
    return (call.provider.base_url or GEMINI_BASE_URL).rstrip("/").removesuffix(f"/{API_VERSION}")
