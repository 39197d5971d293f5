"""An OpenAI-shaped upstream's SSE stream -> IR stream events, incrementally.

Tolerated quirks of OpenAI-compatible servers: chunks with ``"usage": null`` or usage on
every chunk (each becomes a ``UsageEvent``; the last one is the total), a usage-only chunk
with ``choices: []``, ``finish_reason: ""``, tool call fragments without ``index`` (then a
fragment with an ``id`` starts the next call), Azure's content-filter chunks with
``"object": ""`` (skipped), and a missing ``[DONE]`` after a finish reason.
"""

from __future__ import annotations

import msgspec

from gw.codecs.openai_chat.upstream_errors import error_from_payload
from gw.codecs.openai_chat.upstream_response import UsageIn, finish_reason, malformed
from gw.codecs.sse_decoder import SSEStreamDataDecoder
from gw.errors import UpstreamError
from gw.ir import Finish, StreamEvent, StreamStart, TextDelta, ToolCallDelta, UsageEvent


# gc=False on the chunk's Structs: a decoded chunk is a tree, never a reference cycle, so
# the collector need not track the several Structs made per streamed chunk.
class _FunctionDelta(msgspec.Struct, gc=False):
    name: str | None = None
    arguments: str | None = None


class _ToolCallDelta(msgspec.Struct, gc=False):
    index: int | None = None
    id: str | None = None
    function: _FunctionDelta | None = None


class _Delta(msgspec.Struct, gc=False):
    content: str | None = None
    refusal: str | None = None
    tool_calls: list[_ToolCallDelta] | None = None


class _ChunkChoice(msgspec.Struct, gc=False):
    index: int = 0
    delta: _Delta | None = None
    finish_reason: str | None = None


class _Chunk(msgspec.Struct, gc=False):
    id: str = ""
    kind: str | None = msgspec.field(default=None, name="object")
    model: str = ""
    created: int = 0
    choices: list[_ChunkChoice] | None = None
    usage: UsageIn | None = None
    error: object | None = None


_DECODER = msgspec.json.Decoder(_Chunk)

# What a chunk to skip decodes to: Azure's content-filter chunks have an empty "object".
_SKIPPED = _Chunk(kind="")


class UpstreamStreamDecoder(SSEStreamDataDecoder):
    """Feed the raw response body as it arrives; call ``close()`` at EOF.

    ``feed`` raises the mapped ``GatewayError`` for an error object in the stream and
    ``UpstreamError`` for a chunk that is not a chat completion chunk. Events decoded in
    the same ``feed`` call before the failure are returned first; the error is raised by
    the next ``feed`` or ``close``. ``done`` turns true at ``data: [DONE]``.
    """

    def __init__(self) -> None:
        super().__init__()
        self._started = False
        self._finished = False
        self._next_tool_index = 0
        self._last_tool_index = 0
        self._tool_index_by_id: dict[str, int] = {}
        self._tool_named: set[int] = set()

    def _check_end(self) -> None:
        if not self.done and not self._finished:
            raise UpstreamError("upstream stream ended early", blame="upstream")

    def _take_data(self, data: bytes, events: list[StreamEvent]) -> None:
        try:
            chunk = _DECODER.decode(data)  # [DONE] is not JSON, so a chunk needs no test for it
        except msgspec.DecodeError:
            chunk = self._take_undecodable(data)
        if chunk.error is not None:
            raise error_from_payload(chunk.error)
        if chunk.kind == "":  # Azure's content-filter chunk, or [DONE]
            return
        if not self._started:
            self._started = True
            events.append(StreamStart(id=chunk.id, model=chunk.model, created=chunk.created))
        for choice in chunk.choices or ():
            if choice.index == 0:  # read here, not in a method: this runs for every chunk
                delta = choice.delta
                if delta is not None:
                    if delta.content:
                        events.append(TextDelta(text=delta.content))
                    if delta.refusal or delta.tool_calls:
                        self._take_rarer(delta, events)
                if choice.finish_reason and not self._finished:
                    self._finished = True
                    called = self._next_tool_index > 0
                    events.append(Finish(reason=finish_reason(choice.finish_reason, called=called)))
        if chunk.usage is not None:
            events.append(UsageEvent(usage=chunk.usage.to_ir()))

    def _take_rarer(self, delta: _Delta, events: list[StreamEvent]) -> None:
        """A delta's refusal text and tool call fragments (most chunks carry neither)."""
        if delta.refusal:
            events.append(TextDelta(text=delta.refusal, refusal=True))
        for call in delta.tool_calls or ():
            events.append(self._tool_call(call))

    def _take_undecodable(self, data: bytes) -> _Chunk:
        """What the bytes decoder refused, read as SSE text (``_SKIPPED`` for ``[DONE]``).

        Rare: ``[DONE]``, a malformed chunk, or invalid UTF-8, which SSE text replaces.
        """
        text = data.decode("utf-8", "replace")
        if text.strip() == "[DONE]":
            self.done = True
            return _SKIPPED
        try:
            return _DECODER.decode(text)
        except msgspec.ValidationError as exc:
            raise malformed(str(exc)) from None
        except msgspec.DecodeError:
            raise malformed("a stream chunk is not JSON") from None

    def _tool_call(self, call: _ToolCallDelta) -> ToolCallDelta:
        index = self._tool_index(call)
        self._last_tool_index = index
        self._next_tool_index = max(self._next_tool_index, index + 1)
        # Some servers repeat id and name on every fragment; the IR carries each once.
        call_id = call.id if call.id is not None and call.id not in self._tool_index_by_id else None
        if call_id is not None:
            self._tool_index_by_id[call_id] = index
        function = call.function or _FunctionDelta()
        name = function.name if function.name and index not in self._tool_named else None
        if name is not None:
            self._tool_named.add(index)
        return ToolCallDelta(index=index, id=call_id, name=name, arguments=function.arguments or "")

    def _tool_index(self, call: _ToolCallDelta) -> int:
        if call.index is not None:
            return call.index
        if call.id is None:
            return self._last_tool_index
        known = self._tool_index_by_id.get(call.id)
        return self._next_tool_index if known is None else known
