"""Adapter for OpenAI Chat Completions and every OpenAI-compatible server.

Host, key and extra headers are config data (``ProviderConfig``), so a new compatible
host (vLLM, Ollama, Groq, DeepSeek, OpenRouter, ...) is a config entry, not code. Bytes
move through an ``HttpTransport``; this module only speaks the wire format.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Literal
from urllib.parse import quote

from gw.adapters.exchange import post_for_body, stream_events
from gw.adapters.secrets import SecretResolver
from gw.codecs.openai_chat import (
    UpstreamStreamDecoder,
    decode_upstream_embeddings_response,
    decode_upstream_response,
    encode_upstream_embeddings_request,
    encode_upstream_request,
    error_from_upstream,
)
from gw.codecs.openai_chat.upstream_request import lossy_notes
from gw.config.snapshot import OPENAI_BASE_URL
from gw.ir import ChatResponse, EmbeddingResponse, StreamEvent
from gw.ports import EmbeddingCall, UpstreamCall
from gw.upstream_http.http_transport import HttpTransport

AZURE_API_VERSION = "2024-10-21"  # latest GA data-plane inference version


class OpenAIUpstream:
    """Speaks ``POST {base_url}/chat/completions`` and ``/embeddings`` over the shared
    transport."""

    def __init__(self, transport: HttpTransport, secrets: SecretResolver) -> None:
        self._transport = transport
        self._secrets = secrets

    async def complete(self, call: UpstreamCall) -> ChatResponse:
        body = await post_for_body(
            self._transport,
            call,
            self._url(call),
            headers=self._headers(call),
            body=_body(call, stream=False),
            read_error=error_from_upstream,
        )
        return decode_upstream_response(body)

    def stream(self, call: UpstreamCall) -> AsyncIterator[StreamEvent]:
        return stream_events(
            self._transport,
            call,
            self._url(call),
            headers=self._headers(call),
            body=_body(call, stream=True),
            read_error=error_from_upstream,
            decoder=UpstreamStreamDecoder(),
        )

    async def embed(self, call: EmbeddingCall) -> EmbeddingResponse:
        body = await post_for_body(
            self._transport,
            call,
            self._url(call, "embeddings"),
            headers=self._headers(call),
            body=encode_upstream_embeddings_request(call.request, model=call.request.model),
            read_error=error_from_upstream,
        )
        return decode_upstream_embeddings_response(body)

    def _url(self, call: UpstreamCall | EmbeddingCall, path: str = "chat/completions") -> str:
        return f"{(call.provider.base_url or OPENAI_BASE_URL).rstrip('/')}/{path}"

    def _headers(self, call: UpstreamCall | EmbeddingCall) -> dict[str, str]:
        headers = {"content-type": "application/json", **self._secrets.headers(call)}
        key = self._secrets.api_key(call)
        if key is not None:
            headers.update(self._auth(key))
        return headers

    def _auth(self, key: str) -> dict[str, str]:
        return {"authorization": f"Bearer {key}"}


class AzureOpenAIUpstream(OpenAIUpstream):
    """Azure OpenAI: the same wire format at a deployment URL, keyed by ``api-key``.

    The target's model is the deployment name; ``api_version`` defaults to the latest GA
    data-plane version this was written against.
    """

    def _url(self, call: UpstreamCall | EmbeddingCall, path: str = "chat/completions") -> str:
        provider = call.provider
        base = (provider.base_url or "").rstrip("/")
        version = quote(provider.api_version or AZURE_API_VERSION, safe="")
        deployment = quote(call.request.model, safe="")
        return f"{base}/openai/deployments/{deployment}/{path}?api-version={version}"

    def _auth(self, key: str) -> dict[str, str]:
        return {"api-key": key}


def _max_tokens_field(call: UpstreamCall) -> Literal["max_tokens", "max_completion_tokens"]:
    """OpenAI deprecated max_tokens and its reasoning models refuse it; compatible servers
    (vLLM, Ollama, ...) know max_tokens best; Azure deployments of chat models refuse
    max_completion_tokens on some API versions, while its reasoning models need it."""
    kind = call.provider.kind
    if kind == "openai" or (kind == "azure_openai" and call.request.reasoning is not None):
        return "max_completion_tokens"
    return "max_tokens"


def _body(call: UpstreamCall, *, stream: bool) -> bytes:
    call.notes.extend(lossy_notes(call.request))
    return encode_upstream_request(
        call.request,
        model=call.request.model,
        stream=stream,
        max_tokens_field=_max_tokens_field(call),
    )
