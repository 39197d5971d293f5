"""IR stream events as the Responses API's numbered SSE events, for one client stream.

The sequence is the one api.openai.com sends and the OpenAI SDKs, the Agents SDK and
Codex consume: ``response.created`` and ``response.in_progress``; per output item
``response.output_item.added``, its parts and deltas (``content_part.added``,
``output_text.delta``, ``refusal.delta``, ``reasoning_summary_part.added``,
``reasoning_summary_text.delta``, ``function_call_arguments.delta``), their ``.done``
events and ``response.output_item.done``; then, once the upstream is done (its usage
may follow the finish), ``response.completed`` (or ``response.incomplete``) with the whole
response. Every event has a ``sequence_number`` from 0. A failure after the first byte
ends the stream with ``error`` and ``response.failed``, never a second answer
(invariant 3).

Nothing is written before the upstream produced output (``StreamStart`` writes nothing),
so the engine may still fall back until then. A message or reasoning item closes when
another kind of output starts; function calls stay open until the answer ends, since an
upstream may interleave their fragments. A reasoning item that arrives whole from a
Responses upstream opens as it did upstream (a ``NativeEvent`` of the item with status
``in_progress``: its own id throughout) and closes with the whole item (id,
``encrypted_content``), which ``output_item.done`` carries, so a client can send it back.
"""

from __future__ import annotations

from typing import Any

import msgspec

from gw.codecs.openai_responses.client_response import (
    FORMAT,
    ending,
    function_call_item,
    item_id,
    message_item,
    reasoning_item,
    refusal_part,
    response_object,
    text_part,
)
from gw.codecs.openai_responses.namespaces import declared
from gw.ir import (
    ChatRequest,
    ErrorEvent,
    Finish,
    FinishReason,
    NativeEvent,
    StreamEvent,
    StreamStart,
    TextDelta,
    ThinkingDelta,
    ToolCall,
    ToolCallDelta,
    Usage,
    UsageEvent,
)

JSONObject = dict[str, Any]
_ENCODER = msgspec.json.Encoder()
_RATE_LIMITS = frozenset({"rate_limited", "concurrency_limited"})


class _Open:
    """The message or reasoning item being written: its position, id and parts' text."""

    def __init__(self, kind: str, index: int, item: str) -> None:
        self.kind = kind  # "message" or "reasoning"
        self.index = index
        self.item = item
        self.parts: list[list[str]] = []  # per content part: [type, text]


class _Call:
    def __init__(self, index: int, item: str, call_id: str, name: str) -> None:
        self.index = index
        self.item = item
        self.call_id = call_id
        self.name = name
        self.arguments: list[str] = []


class ResponsesStreamEncoder:
    """Stateful encoder for one client stream; ``encode`` each event, then ``done()``."""

    def __init__(
        self, *, request: ChatRequest, response_id: str, model: str, created_at: int
    ) -> None:
        self._request = request
        self._namespaces = declared(request)
        self._response_id = response_id
        self._model = model
        self._created_at = created_at
        self._sequence = 0
        self._started = False
        self._ended = False
        self._output: list[JSONObject | None] = []  # finished items; None while open
        self._open: _Open | None = None
        self._calls: dict[int, _Call] = {}  # by the IR's tool call index
        self._usage: Usage | None = None
        self._reason: FinishReason = "stop"

    def encode(self, event: StreamEvent) -> bytes:
        match event:
            case UsageEvent(usage=usage):
                self._usage = usage
                return b""
            case StreamStart() | ThinkingDelta(text=""):
                return b""
            case NativeEvent(block=block) if block.format != FORMAT:
                return b""  # another format's block: Responses has no place for it
        # The response's opening events go first, once: their sequence numbers come first.
        start = self._start()
        match event:
            case TextDelta(text=text, refusal=refusal):
                frames = self._text(text, "refusal" if refusal else "output_text")
            case ThinkingDelta(text=text):
                frames = self._thinking(text)
            case ToolCallDelta():
                frames = self._tool_call(event)
            case NativeEvent(block=block):
                frames = self._native(block.data)
            case Finish(reason=reason):
                frames = self._finish(reason)
            case ErrorEvent(code=code, message=message):
                frames = self._fail(code, message)
            case _:
                frames = b""
        return start + frames

    def done(self) -> bytes:
        """The closing event, ``response.completed`` or ``response.incomplete``: written
        last, since usage may follow the finish (OpenAI chat upstreams send it after)."""
        if self._ended:
            return b""
        return self._start() + self._close_open() + self._close_calls() + self._end()

    # -- items -----------------------------------------------------------------------

    def _text(self, text: str, part_type: str) -> bytes:
        frames = self._open_item("message")
        current = self._open
        assert current is not None  # noqa: S101 -- _open_item just set it
        if not current.parts or current.parts[-1][0] != part_type:
            current.parts.append([part_type, ""])
            empty = text_part("") if part_type == "output_text" else refusal_part("")
            frames += self._event(
                "response.content_part.added",
                item_id=current.item,
                output_index=current.index,
                content_index=len(current.parts) - 1,
                part=empty,
            )
        current.parts[-1][1] += text
        delta: JSONObject = {
            "item_id": current.item,
            "output_index": current.index,
            "content_index": len(current.parts) - 1,
            "delta": text,
        }
        if part_type == "output_text":
            return frames + self._event("response.output_text.delta", **delta, logprobs=[])
        return frames + self._event("response.refusal.delta", **delta)

    def _thinking(self, text: str) -> bytes:
        frames = self._open_item("reasoning")
        current = self._open
        assert current is not None  # noqa: S101 -- _open_item just set it
        if not current.parts:
            current.parts.append(["summary_text", ""])
            frames += self._event(
                "response.reasoning_summary_part.added",
                item_id=current.item,
                output_index=current.index,
                summary_index=0,
                part={"type": "summary_text", "text": ""},
            )
        current.parts[0][1] += text
        return frames + self._event(
            "response.reasoning_summary_text.delta",
            item_id=current.item,
            output_index=current.index,
            summary_index=0,
            delta=text,
        )

    def _tool_call(self, event: ToolCallDelta) -> bytes:
        frames = self._close_open()
        call = self._calls.get(event.index)
        if call is None:
            index = len(self._output)
            call = _Call(
                index, item_id("fc", self._response_id, index), event.id or "", event.name or ""
            )
            self._calls[event.index] = call
            self._output.append(None)
            added = function_call_item(
                call.item, self._tool(call), self._namespaces, status="in_progress"
            )
            frames += self._event("response.output_item.added", output_index=index, item=added)
        if not event.arguments:
            return frames
        call.arguments.append(event.arguments)
        return frames + self._event(
            "response.function_call_arguments.delta",
            item_id=call.item,
            output_index=call.index,
            delta=event.arguments,
        )

    def _native(self, data: JSONObject) -> bytes:
        current = self._open
        if data.get("type") == "reasoning":
            if data.get("status") == "in_progress":
                # A Responses upstream's reasoning item opening: its id is the one the
                # summary deltas and the closing item carry (the SDK checks they match).
                return self._open_item("reasoning", data)
            if current is not None and current.kind == "reasoning":
                # The whole item closing the reasoning its summary deltas built.
                self._open = None
                return self._close_reasoning(current, data)
        frames = self._close_open()
        index = len(self._output)
        self._output.append(data)
        frames += self._event("response.output_item.added", output_index=index, item=data)
        return frames + self._event("response.output_item.done", output_index=index, item=data)

    def _open_item(self, kind: str, native: JSONObject | None = None) -> bytes:
        """Open a message or reasoning item unless one is open; ``native``: the item as a
        Responses upstream opened it (its own id)."""
        if self._open is not None and self._open.kind == kind and native is None:
            return b""
        frames = self._close_open() + self._close_calls()
        index = len(self._output)
        if native is not None:
            self._open = _Open(
                kind, index, str(native.get("id") or item_id("rs", self._response_id, index))
            )
            item = native
        else:
            prefix = "msg" if kind == "message" else "rs"
            self._open = _Open(kind, index, item_id(prefix, self._response_id, index))
            item = (
                message_item(self._open.item, "", status="in_progress")
                if kind == "message"
                else reasoning_item(self._open.item, "")
            )
        self._output.append(None)
        return frames + self._event("response.output_item.added", output_index=index, item=item)

    def _close_open(self) -> bytes:
        current, self._open = self._open, None
        if current is None:
            return b""
        if current.kind == "reasoning":
            return self._close_reasoning(current, None)
        frames = b""
        content: list[JSONObject] = []
        for position, (part_type, text) in enumerate(current.parts):
            where = {
                "item_id": current.item,
                "output_index": current.index,
                "content_index": position,
            }
            if part_type == "output_text":
                part = text_part(text)
                frames += self._event("response.output_text.done", **where, text=text, logprobs=[])
            else:
                part = refusal_part(text)
                frames += self._event("response.refusal.done", **where, refusal=text)
            frames += self._event("response.content_part.done", **where, part=part)
            content.append(part)
        item = message_item(current.item, "")
        item["content"] = content
        return frames + self._finish_item(current.index, item)

    def _close_reasoning(self, current: _Open, native: JSONObject | None) -> bytes:
        frames = b""
        where = {"item_id": current.item, "output_index": current.index, "summary_index": 0}
        text = current.parts[0][1] if current.parts else ""
        if current.parts:
            part = {"type": "summary_text", "text": text}
            frames += self._event("response.reasoning_summary_text.done", **where, text=text)
            frames += self._event("response.reasoning_summary_part.done", **where, part=part)
        return frames + self._finish_item(
            current.index, native or reasoning_item(current.item, text)
        )

    def _close_calls(self) -> bytes:
        frames = b""
        for call in sorted(self._calls.values(), key=lambda call: call.index):
            arguments = "".join(call.arguments)
            frames += self._event(
                "response.function_call_arguments.done",
                item_id=call.item,
                output_index=call.index,
                name=call.name,
                arguments=arguments,
            )
            item = function_call_item(call.item, self._tool(call), self._namespaces)
            frames += self._finish_item(call.index, item)
        self._calls.clear()
        return frames

    def _finish_item(self, index: int, item: JSONObject) -> bytes:
        self._output[index] = item
        return self._event("response.output_item.done", output_index=index, item=item)

    @staticmethod
    def _tool(call: _Call) -> ToolCall:
        return ToolCall(id=call.call_id, name=call.name, arguments="".join(call.arguments))

    # -- the response ----------------------------------------------------------------

    def _start(self) -> bytes:
        if self._started:
            return b""
        self._started = True
        response = self._response("in_progress")
        return self._event("response.created", response=response) + self._event(
            "response.in_progress", response=response
        )

    def _finish(self, reason: FinishReason) -> bytes:
        """Every item ends here; the response itself ends in ``done()``."""
        self._reason = reason
        if ending(reason)[0] == "failed":
            return self._fail("upstream_error", "the upstream ended the answer with an error")
        return self._close_open() + self._close_calls()

    def _end(self) -> bytes:
        self._ended = True
        status, incomplete = ending(self._reason)
        response = self._response(status, incomplete_reason=incomplete, usage=self._usage)
        kind = "response.completed" if status == "completed" else "response.incomplete"
        return self._event(kind, response=response)

    def _fail(self, code: str, message: str) -> bytes:
        self._ended = True
        self._open = None
        self._calls.clear()
        error = self._event("error", code=code, message=message, param=None)
        # response.error.code is one of OpenAI's own codes; gw's is in the error event.
        kind = "rate_limit_exceeded" if code in _RATE_LIMITS else "server_error"
        response = self._response(
            "failed", usage=self._usage, error={"code": kind, "message": message}
        )
        return error + self._event("response.failed", response=response)

    def _response(
        self,
        status: str,
        *,
        incomplete_reason: str | None = None,
        usage: Usage | None = None,
        error: JSONObject | None = None,
    ) -> JSONObject:
        return response_object(
            self._request,
            response_id=self._response_id,
            created_at=self._created_at,
            model=self._model,
            status=status,
            output=[item for item in self._output if item is not None],
            usage=usage,
            incomplete_reason=incomplete_reason,
            error=error,
        )

    def _event(self, kind: str, **fields: Any) -> bytes:
        payload = {"type": kind, "sequence_number": self._sequence, **fields}
        self._sequence += 1
        return b"event: " + kind.encode() + b"\ndata: " + _ENCODER.encode(payload) + b"\n\n"
