"""The built-in ``mock`` provider: deterministic answers derived from the request, no network.

It behaves like a real provider where that matters for tests and demos: it reports usage,
streams token by token, calls tools, embeds (a unit vector from a hash of each input), and
can be slow or fail on purpose (``mock:`` options).
"""

from __future__ import annotations

import array
import asyncio
import hashlib
import math
import random
import time
from collections.abc import AsyncIterator

import msgspec

from gw.codecs.openai_chat import error_from_upstream
from gw.config.schema import MockOptions
from gw.config.units import Duration
from gw.errors import GatewayError, InvalidRequestError, error_for_code
from gw.ir import (
    ChatRequest,
    ChatResponse,
    EmbeddingInput,
    EmbeddingResponse,
    Finish,
    StreamEvent,
    StreamStart,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    ToolMessage,
    Usage,
    UsageEvent,
)
from gw.ports import EmbeddingCall, UpstreamCall
from gw.routing.estimate import estimate_embedding_tokens, estimate_input_tokens

VOCABULARY = (
    "gateway", "route", "token", "stream", "model", "policy", "latency", "answer",
    "request", "provider", "budget", "trace", "retry", "fallback", "snapshot", "cache",
)  # fmt: skip
DEFAULT_OPTIONS = MockOptions()
DEFAULT_EMBEDDING_DIMENSIONS = 8
MAX_EMBEDDING_DIMENSIONS = 4096  # above any real model's; keeps a demo from allocating wildly


class MockUpstream:
    """One per mock provider: its failure sequence is seeded once, so runs repeat."""

    def __init__(self, options: MockOptions | None) -> None:
        self._options = options or DEFAULT_OPTIONS
        self._random = random.Random(self._options.seed)

    async def complete(self, call: UpstreamCall) -> ChatResponse:
        await self._before_headers(call)
        await _sleep(self._options.first_token)
        answer = _answer_for(call.request, self._options.words)
        return ChatResponse(
            id=f"mock-{call.request_id}",
            model=call.request.model,
            text=answer.text,
            tool_calls=answer.tool_calls,
            finish_reason="tool_calls" if answer.tool_calls else "stop",
            usage=answer.usage,
            created=int(time.time()),
        )

    async def stream(self, call: UpstreamCall) -> AsyncIterator[StreamEvent]:
        await self._before_headers(call)
        answer = _answer_for(call.request, self._options.words)
        yield StreamStart(id=f"mock-{call.request_id}", model=call.request.model)
        await _sleep(self._options.first_token)
        for index, piece in enumerate(answer.pieces()):
            if index:
                await _sleep(self._options.chunk_delay)
            yield piece
        yield Finish(reason="tool_calls" if answer.tool_calls else "stop")
        yield UsageEvent(usage=answer.usage)

    async def embed(self, call: EmbeddingCall) -> EmbeddingResponse:
        await self._before_headers(call)
        request = call.request
        size = request.dimensions or DEFAULT_EMBEDDING_DIMENSIONS
        if size > MAX_EMBEDDING_DIMENSIONS:
            raise InvalidRequestError(
                f"the mock embeds at most {MAX_EMBEDDING_DIMENSIONS} dimensions",
                param="dimensions",
                blame="upstream",
            )
        return EmbeddingResponse(
            model=request.model,
            vectors=tuple(mock_embedding(item, size) for item in request.inputs),
            usage=Usage(input_tokens=estimate_embedding_tokens(request)),
        )

    async def _before_headers(self, call: UpstreamCall | EmbeddingCall) -> None:
        await _sleep(self._options.latency)
        failure = self._failure()
        if failure is not None:
            raise failure

    def _failure(self) -> GatewayError | None:
        options = self._options
        if options.failure_rate and self._random.random() >= options.failure_rate:
            return None
        if options.fail_code:
            return error_for_code(
                options.fail_code, f"mock failure ({options.fail_code})", blame="upstream"
            )
        if options.fail_status:
            return error_from_upstream(options.fail_status, b"", {})
        if options.failure_rate:
            return error_from_upstream(500, b"", {})
        return None


class MockAnswer(msgspec.Struct, frozen=True, kw_only=True):
    text: str | None
    tool_calls: tuple[ToolCall, ...]
    usage: Usage

    def pieces(self) -> list[StreamEvent]:
        if self.tool_calls:
            call = self.tool_calls[0]
            middle = len(call.arguments) // 2
            return [
                ToolCallDelta(
                    index=0, id=call.id, name=call.name, arguments=call.arguments[:middle]
                ),
                ToolCallDelta(index=0, arguments=call.arguments[middle:]),
            ]
        words = (self.text or "").split(" ")
        return [TextDelta(text=word if i == 0 else f" {word}") for i, word in enumerate(words)]


def _answer_for(request: ChatRequest, word_count: int) -> MockAnswer:
    """The same request always gets the same answer."""
    digest = hashlib.sha256(msgspec.json.encode(request.messages)).digest()
    input_tokens = estimate_input_tokens(request)
    if _wants_tool_call(request):
        wanted = request.tool_choice.name if request.tool_choice else None
        tool = next((t for t in request.tools if t.name == wanted), request.tools[0])
        arguments = msgspec.json.encode({"mock_argument": VOCABULARY[digest[0] % 16]}).decode()
        call = ToolCall(id=f"call_mock_{digest.hex()[:12]}", name=tool.name, arguments=arguments)
        return MockAnswer(
            text=None,
            tool_calls=(call,),
            usage=Usage(input_tokens=input_tokens, output_tokens=8),
        )
    words = [VOCABULARY[digest[i % len(digest)] % len(VOCABULARY)] for i in range(word_count)]
    text = "Mock answer: " + " ".join(words) + "."
    return MockAnswer(
        text=text,
        tool_calls=(),
        usage=Usage(input_tokens=input_tokens, output_tokens=len(text.split(" "))),
    )


def mock_embedding(item: EmbeddingInput, size: int) -> tuple[float, ...]:
    """A unit vector of ``size`` drawn from a hash of ``item``: the same input always gets
    the same vector, and a text never the vector of a token array. Each value is a float32,
    so the float and base64 encodings of an answer carry the very same numbers."""
    raw = hashlib.shake_256(msgspec.json.encode(item)).digest(2 * size)
    values = [int.from_bytes(raw[i : i + 2], "little") - 32767.5 for i in range(0, 2 * size, 2)]
    norm = math.sqrt(sum(value * value for value in values))
    return tuple(array.array("f", [value / norm for value in values]))


def _wants_tool_call(request: ChatRequest) -> bool:
    """Call a tool when tools are offered, unless told not to or just given a tool result."""
    if not request.tools or (request.tool_choice and request.tool_choice.mode == "none"):
        return False
    return not (request.messages and isinstance(request.messages[-1], ToolMessage))


async def _sleep(duration: Duration) -> None:
    if duration.seconds > 0:
        await asyncio.sleep(duration.seconds)
