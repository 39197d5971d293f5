"""A fake Anthropic Messages upstream on loopback, with scripted faults.

It speaks the real wire format (a JSON ``Message``; an SSE stream of named events
``message_start``, ``content_block_start``, ``ping``, ``content_block_delta``,
``content_block_stop``, ``message_delta``, ``message_stop`` over chunked transfer encoding;
error bodies ``{"type": "error", "error": {"type", "message"}, "request_id"}`` with
Anthropic's statuses and headers) from a background thread with its own event loop::

    with FakeAnthropic() as fake:
        fake.enqueue(Behavior(status=529), Behavior())
        client = anthropic.Anthropic(base_url=fake.base_url, api_key="sk-ant-test")
        ...
        assert fake.requests[0].headers["x-api-key"] == "sk-ant-test"

Each ``POST /v1/messages`` pops the next scripted ``Behavior``; when the script is empty,
``fake.default`` applies. Like Anthropic, a request without ``anthropic-version``, or whose
body lacks ``model``, ``messages`` or ``max_tokens``, whose ``thinking`` or
``output_config`` is malformed, or whose ``cache_control`` marks are malformed or more than
four, is refused with a 400 before any script is used. ``Behavior(content=...)`` answers
with any blocks, server tools' included (``anthropic_server_tools.web_search_content``),
streamed as Anthropic streams each kind. Tool input is sent compact in both forms (the JSON object of the answer,
the ``partial_json`` fragments of the stream), so the two join to the same text.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import msgspec

from .anthropic_server_tools import request_problem, server_tool_uses, stream_pieces
from .http_server import Responder
from .scripted import (
    Faults,
    ReceivedRequest,
    ScriptedFake,
    send_whole,
    split_text,
    start_stream,
    word_count,
)

DEFAULT_TEXT = "Hello from fake Claude"
DEFAULT_MODEL = "claude-sonnet-4-5"
MAX_CACHE_MARKS = 4  # Anthropic's limit on cache_control breakpoints in one request

_encode = msgspec.json.encode
_JSON = ("content-type", "application/json")
_SSE = ("content-type", "text/event-stream; charset=utf-8")
_MALFORMED_JSON = b'{"id": "msg_x", "type": "message", "content": ['
_MALFORMED_FRAME = b"event: content_block_delta\ndata: {not json}\n\n"

# status -> (error.type, message), as Anthropic words them.
ERRORS: dict[int, tuple[str, str]] = {
    400: ("invalid_request_error", "messages: at least one message is required"),
    401: ("authentication_error", "invalid x-api-key"),
    402: (
        "billing_error",
        "Your credit balance is too low to access the Anthropic API. Please go to Plans & "
        "Billing to upgrade or purchase credits.",
    ),
    403: (
        "permission_error",
        "Your API key does not have permission to use the specified resource.",
    ),
    404: ("not_found_error", "model: claude-unknown-model"),
    413: ("request_too_large", "Request exceeds the maximum allowed number of bytes."),
    429: (
        "rate_limit_error",
        "This request would exceed the rate limit for your organization of 50 requests per "
        "minute. For details, refer to: https://docs.claude.com/en/api/rate-limits.",
    ),
    500: ("api_error", "Internal server error"),
    504: ("timeout_error", "Request timeout"),
    529: ("overloaded_error", "Overloaded"),
}
PROMPT_TOO_LONG = "prompt is too long: 208310 tokens > 200000 maximum"


@dataclass(frozen=True)
class Behavior(Faults):
    """How to answer one request. The defaults are a normal, successful answer."""

    status: int = 200
    error_type: str | None = None  # status != 200: default from ERRORS
    error_message: str | None = None  # status != 200: default from ERRORS
    error_body: dict[str, Any] | None = None  # the whole body, verbatim
    # Stream: after N content deltas send `event: error` with this type and end the body.
    error_after_chunks: int | None = None
    stream_error_type: str = "overloaded_error"
    omit_message_stop: bool = False  # stream: end after message_delta
    text: str | None = None  # default: DEFAULT_TEXT, or no text block beside a tool call
    chunks: int | None = None  # number of text (or tool input) deltas; default: per word
    thinking: str | None = None  # a thinking block first, with a signature
    redacted_thinking: str | None = None  # a redacted_thinking block first (its data)
    tool_call: tuple[str, str] | None = None  # (name, input JSON) after any text
    # The content blocks verbatim, in this order, instead of the ones above (text, thinking
    # and tool_use blocks stream as their deltas, split into `chunks` pieces).
    content: tuple[dict[str, Any], ...] | None = None
    usage: tuple[int, int] | None = None  # (input, output); default: word counts
    cache: tuple[int, int] = (0, 0)  # (cache_read_input_tokens, cache_creation_input_tokens)
    stop_reason: str | None = None  # default: end_turn, or tool_use
    stop_sequence: str | None = None  # sets stop_reason "stop_sequence" unless given


def error_body(error_type: str, message: str, serial: int = 0) -> dict[str, Any]:
    return {
        "type": "error",
        "error": {"type": error_type, "message": message},
        "request_id": f"req_fake_{serial:024x}",
    }


def signature_for(thinking: str) -> str:
    """A stable stand-in for Anthropic's opaque thinking signature."""
    return "EqQBCkYIARgC" + hashlib.sha256(thinking.encode()).hexdigest()[:40]


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(
            str(block.get("text") or "") for block in content if isinstance(block, dict)
        )
    return ""


def _prompt_words(body: dict[str, Any]) -> int:
    count = word_count(_text_of(body.get("system")))
    for message in body.get("messages") or ():
        if isinstance(message, dict):
            count += word_count(_text_of(message.get("content")))
    return count


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return b"event: " + event.encode() + b"\ndata: " + _encode(data) + b"\n\n"


class _Answer:
    """One successful answer, rendered either as a JSON Message or as SSE events."""

    def __init__(self, behavior: Behavior, body: dict[str, Any], serial: int) -> None:
        self.behavior = behavior
        self.model = str(body.get("model") or DEFAULT_MODEL)
        self.id = f"msg_fake_{serial:020d}"
        tool = behavior.tool_call
        default_text = DEFAULT_TEXT if tool is None else None
        self.text = default_text if behavior.text is None else behavior.text
        self.tool_input: Any = None if tool is None else msgspec.json.decode(tool[1] or "{}")
        self.tool_json = "" if tool is None else _encode(self.tool_input).decode()
        self.tool_id = f"toolu_fake_{serial:020d}"
        self.text_pieces = [] if self.text is None else split_text(self.text, behavior.chunks)
        tool_chunks = behavior.chunks or max(1, -(-len(self.tool_json) // 8))
        self.tool_pieces = split_text(self.tool_json, tool_chunks) if tool else []
        output = word_count(self.text or "") + word_count(behavior.thinking or "")
        if tool is not None:
            output += word_count(f"{tool[0]} {self.tool_json}")
        self.input_tokens, self.output_tokens = behavior.usage or (_prompt_words(body), output)
        if behavior.stop_reason is not None:
            self.stop_reason = behavior.stop_reason
        elif behavior.stop_sequence is not None:
            self.stop_reason = "stop_sequence"
        else:
            self.stop_reason = "end_turn" if tool is None else "tool_use"

    def usage(self, output_tokens: int) -> dict[str, Any]:
        read, creation = self.behavior.cache
        usage = {
            "input_tokens": self.input_tokens,
            "cache_creation_input_tokens": creation,
            "cache_read_input_tokens": read,
            "output_tokens": output_tokens,
        }
        searches = server_tool_uses(self.blocks())
        return usage if searches is None else usage | {"server_tool_use": searches}

    def message(self, content: list[dict[str, Any]], *, final: bool) -> dict[str, Any]:
        usage = self.usage(self.output_tokens if final else 1)
        usage |= {"service_tier": "standard"}
        return {
            "id": self.id,
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": content,
            "stop_reason": self.stop_reason if final else None,
            "stop_sequence": self.behavior.stop_sequence if final else None,
            "usage": usage,
        }

    def blocks(self) -> list[dict[str, Any]]:
        """The complete content blocks, in order."""
        behavior, out = self.behavior, []
        if behavior.content is not None:
            return list(behavior.content)
        if behavior.redacted_thinking is not None:
            out.append({"type": "redacted_thinking", "data": behavior.redacted_thinking})
        if behavior.thinking is not None:
            signature = signature_for(behavior.thinking)
            out.append({"type": "thinking", "thinking": behavior.thinking, "signature": signature})
        if self.text is not None:
            out.append({"type": "text", "text": self.text})
        if behavior.tool_call is not None:
            name = behavior.tool_call[0]
            tool = {"type": "tool_use", "id": self.tool_id, "name": name, "input": self.tool_input}
            out.append(tool)
        return out

    def body(self) -> bytes:
        return _encode(self.message(self.blocks(), final=True))

    def events(self) -> list[tuple[bytes, bool]]:
        """Every SSE frame up to content_block_stop of the last block; the flag marks
        content deltas (the ones `drop_after_chunks` and friends count)."""
        frames: list[tuple[bytes, bool]] = []
        for index, block in enumerate(self.blocks()):
            start, pieces = stream_pieces(block, self._split)
            frames.append(
                (
                    _sse(
                        "content_block_start",
                        {"type": "content_block_start", "index": index, "content_block": start},
                    ),
                    False,
                )
            )
            if index == 0:
                frames.append((_sse("ping", {"type": "ping"}), False))
            for delta in pieces:
                data = {"type": "content_block_delta", "index": index, "delta": delta}
                frames.append((_sse("content_block_delta", data), True))
            frames.append(
                (_sse("content_block_stop", {"type": "content_block_stop", "index": index}), False)
            )
        return frames

    def _split(self, text: str, tool: bool) -> list[str]:
        """The deltas of one block: the scripted text or tool input's, else ``text`` split
        (thinking always per word)."""
        if self.behavior.content is None and text in (self.text, self.tool_json):
            return self.tool_pieces if tool else self.text_pieces
        return split_text(text, None if self.behavior.content is None else self.behavior.chunks)

    def message_start(self) -> bytes:
        return _sse(
            "message_start", {"type": "message_start", "message": self.message([], final=False)}
        )

    def message_delta(self) -> bytes:
        delta = {"stop_reason": self.stop_reason, "stop_sequence": self.behavior.stop_sequence}
        usage = self.usage(self.output_tokens)
        return _sse("message_delta", {"type": "message_delta", "delta": delta, "usage": usage})


class FakeAnthropic(ScriptedFake[Behavior, str]):
    """A fake Anthropic server on its own thread and event loop. See the module docstring."""

    base_path = ""  # what the Anthropic SDK (and gw's config) calls base_url: no /v1

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        super().__init__(host, port, default=Behavior(), parse_query=str)

    async def _answer(self, request: ReceivedRequest[str], responder: Responder) -> None:
        if request.method == "POST" and request.path == "/v1/messages":
            await self._messages(request, responder)
        else:
            message = f"Not Found: {request.method} {request.path}"
            await self._error(responder, 404, "not_found_error", message)

    @staticmethod
    async def _error(
        responder: Responder, status: int, kind: str, message: str, serial: int = 0
    ) -> None:
        await responder.send(status, [_JSON], _encode(error_body(kind, message, serial)))

    async def _messages(self, request: ReceivedRequest[str], responder: Responder) -> None:
        problem = _invalid(request)
        if problem is not None:
            await self._error(responder, 400, "invalid_request_error", problem)
            return
        taken = await self._next_behavior(responder)
        if taken is None:
            return
        behavior, serial = taken
        body = request.json
        headers = [
            ("request-id", f"req_fake_{serial:024x}"),
            ("anthropic-organization-id", "00000000-0000-4000-8000-000000000000"),
            *behavior.headers.items(),
        ]
        if behavior.status != 200:
            default_type, default_message = ERRORS.get(behavior.status, ERRORS[500])
            payload = behavior.error_body or error_body(
                behavior.error_type or default_type,
                behavior.error_message or default_message,
                serial,
            )
            await responder.send(behavior.status, [_JSON, *headers], _encode(payload))
        elif body.get("stream") is True:
            await _stream(_Answer(behavior, body, serial), responder, [_SSE, *headers])
        else:
            await _complete(_Answer(behavior, body, serial), responder, [_JSON, *headers])


def _invalid(request: ReceivedRequest[str]) -> str | None:
    """Anthropic's own 400s for what gw must always send; None when the request is fine."""
    body = request.json
    if "anthropic-version" not in request.headers:
        return "anthropic-version: header is required"
    if not isinstance(body, dict):
        return "There was an error parsing the body of your request."
    for key in ("model", "messages", "max_tokens"):
        if key not in body:
            return f"{key}: Field required"
    return request_problem(body) or _invalid_cache_marks(list(_cache_marks(body)))


def _invalid_cache_marks(marks: list[Any]) -> str | None:
    for mark in marks:
        if not isinstance(mark, dict) or mark.get("type") != "ephemeral":
            return "cache_control.type: Input should be 'ephemeral'"
        if set(mark) - {"type", "ttl"} or mark.get("ttl", "5m") not in ("5m", "1h"):
            return "cache_control: Extra inputs are not permitted, or ttl is not '5m' or '1h'"
    if len(marks) > MAX_CACHE_MARKS:
        return (
            f"A maximum of {MAX_CACHE_MARKS} blocks with cache_control may be provided. "
            f"Found {len(marks)}."
        )
    return None


def _cache_marks(body: dict[str, Any]) -> Iterator[Any]:
    """Every block-level ``cache_control`` of a request: tools, system, message blocks and
    the blocks inside tool results."""
    blocks: list[Any] = list(body.get("tools") or ())
    if isinstance(body.get("system"), list):
        blocks += body["system"]
    for message in body.get("messages") or ():
        if isinstance(message, dict) and isinstance(message.get("content"), list):
            blocks += message["content"]
    for block in blocks:
        if not isinstance(block, dict):
            continue
        if block.get("cache_control") is not None:
            yield block["cache_control"]
        if block.get("type") == "tool_result" and isinstance(block.get("content"), list):
            for inner in block["content"]:
                if isinstance(inner, dict) and inner.get("cache_control") is not None:
                    yield inner["cache_control"]


async def _complete(answer: _Answer, responder: Responder, headers: list[tuple[str, str]]) -> None:
    payload = _MALFORMED_JSON if answer.behavior.malformed else answer.body()
    await send_whole(answer.behavior, payload, responder, headers)


async def _stream(answer: _Answer, responder: Responder, headers: list[tuple[str, str]]) -> None:
    behavior = answer.behavior
    await start_stream(behavior, responder, headers)
    await responder.write(answer.message_start())
    if behavior.malformed:
        await responder.write(_MALFORMED_FRAME)
        await responder.end()
        return
    sent = 0
    for frame, is_delta in answer.events():
        if is_delta:
            if behavior.drop_after_chunks is not None and sent >= behavior.drop_after_chunks:
                responder.abort()
                return
            if behavior.error_after_chunks is not None and sent >= behavior.error_after_chunks:
                kind = behavior.stream_error_type
                _, message = next((e for e in ERRORS.values() if e[0] == kind), (kind, kind))
                await responder.write(_sse("error", error_body(kind, message)))
                await responder.end()
                return
            sent += 1
            if behavior.delay_between_chunks:
                await asyncio.sleep(behavior.delay_between_chunks)
        await responder.write(frame)
    if behavior.drop_after_chunks is not None:
        responder.abort()
        return
    await responder.write(answer.message_delta())
    if not behavior.omit_message_stop:
        await responder.write(_sse("message_stop", {"type": "message_stop"}))
    await responder.end()
