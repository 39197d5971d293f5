"""Stand-in for provider kinds this version of gw cannot call yet: fails loud, falls back."""

from __future__ import annotations

from collections.abc import AsyncIterator

from gw.errors import UpstreamError
from gw.ir import ChatResponse, EmbeddingResponse, StreamEvent
from gw.ports import EmbeddingCall, UpstreamCall


class UnsupportedUpstream:
    def __init__(self, kind: str) -> None:
        self._kind = kind

    def _error(self, call: UpstreamCall | EmbeddingCall) -> UpstreamError:
        return UpstreamError(
            f"provider {call.provider.name}: kind {self._kind} is not served by this version "
            "of gw yet (served: openai, openai_compatible, openai_responses, azure_openai, "
            "anthropic, gemini, mock)",
            blame="gateway",
        )

    async def complete(self, call: UpstreamCall) -> ChatResponse:
        raise self._error(call)

    async def stream(self, call: UpstreamCall) -> AsyncIterator[StreamEvent]:
        raise self._error(call)
        yield  # pragma: no cover - makes this an async generator like the others

    async def embed(self, call: EmbeddingCall) -> EmbeddingResponse:
        raise self._error(call)
