"""Adapter for OpenAI Chat Completions and every OpenAI-compatible server.

Host, key and extra headers are config data (``ProviderConfig``), so a new compatible
host (vLLM, Ollama, Groq, DeepSeek, OpenRouter, ...) is a config entry, not code.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx

from gw.adapters.secrets import SecretResolver
from gw.adapters.transport_errors import map_transport_error
from gw.codecs.openai_chat import (
    UpstreamStreamDecoder,
    decode_upstream_response,
    encode_upstream_request,
    error_from_upstream,
)
from gw.config.snapshot import OPENAI_BASE_URL
from gw.ir import ChatResponse, StreamEvent
from gw.ports import UpstreamCall

MAX_ERROR_BODY_BYTES = 64 * 1024


class OpenAIUpstream:
    """Speaks ``POST {base_url}/chat/completions`` over the shared httpx client."""

    def __init__(self, client: httpx.AsyncClient, secrets: SecretResolver) -> None:
        self._client = client
        self._secrets = secrets

    async def complete(self, call: UpstreamCall) -> ChatResponse:
        request = self._build(call, stream=False)
        try:
            response = await self._client.send(request)
        except httpx.RequestError as error:
            raise map_transport_error(error, provider=call.provider.name) from None
        if response.status_code != 200:
            raise error_from_upstream(response.status_code, response.content, response.headers)
        return decode_upstream_response(response.content)

    async def stream(self, call: UpstreamCall) -> AsyncIterator[StreamEvent]:
        request = self._build(call, stream=True)
        try:
            response = await self._client.send(request, stream=True)
        except httpx.RequestError as error:
            raise map_transport_error(error, provider=call.provider.name) from None
        try:
            if response.status_code != 200:
                body = await _read_bounded(response)
                raise error_from_upstream(response.status_code, body, response.headers)
            decoder = UpstreamStreamDecoder()
            try:
                async for data in response.aiter_bytes():
                    for event in decoder.feed(data):
                        yield event
                    if decoder.done:
                        return
            except httpx.RequestError as error:
                raise map_transport_error(error, provider=call.provider.name) from None
            for event in decoder.close():
                yield event
        finally:
            await response.aclose()

    def _build(self, call: UpstreamCall, *, stream: bool) -> httpx.Request:
        provider = call.provider
        base_url = (provider.base_url or OPENAI_BASE_URL).rstrip("/")
        headers = {"content-type": "application/json", **provider.headers}
        if provider.api_key:
            key = self._secrets.resolve(provider.api_key, field=f"provider {provider.name} api_key")
            headers["authorization"] = f"Bearer {key}"
        timeout = httpx.Timeout(
            connect=call.timeouts.connect,
            read=call.timeouts.read,
            write=call.timeouts.read,
            pool=call.timeouts.connect,
        )
        body = encode_upstream_request(
            call.request,
            model=call.request.model,
            stream=stream,
            # OpenAI deprecated max_tokens, and its reasoning models refuse it; compatible
            # servers (vLLM, Ollama, ...) know max_tokens best.
            max_tokens_field="max_completion_tokens" if provider.kind == "openai" else "max_tokens",
        )
        return self._client.build_request(
            "POST",
            f"{base_url}/chat/completions",
            content=body,
            headers=headers,
            timeout=timeout,
        )


async def _read_bounded(response: httpx.Response) -> bytes:
    """An error body, cut at a size no honest error needs."""
    chunks: list[bytes] = []
    size = 0
    try:
        async for chunk in response.aiter_bytes():
            chunks.append(chunk)
            size += len(chunk)
            if size >= MAX_ERROR_BODY_BYTES:
                break
    except httpx.RequestError:
        pass  # the status alone still classifies the error
    return b"".join(chunks)[:MAX_ERROR_BODY_BYTES]
