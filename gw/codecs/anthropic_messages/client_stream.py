"""IR stream events as Anthropic Messages SSE frames, for one client stream.

Every frame is ``event: <type>\\ndata: <json>\\n\\n`` and the sequence is the one the API
sends, so the Anthropic SDK's raw events and its accumulating ``messages.stream()`` helper
work unchanged:

- ``StreamStart`` writes nothing: no byte is committed to the client before the upstream
  produced output, so the engine may still fall back. Empty deltas write nothing either.
- The first content event (or ``Finish``) writes ``message_start`` (empty content, null
  stop reason, usage with the ``input_tokens`` estimate and ``output_tokens`` 1, as the
  API does; the real figures from a ``UsageEvent`` seen before then) and a ``ping``.
- Each run of one kind is a content block with indexes from 0: ``TextDelta`` a ``text``
  block with ``text_delta``; ``ThinkingDelta`` a ``thinking`` block with ``thinking_delta``
  and ``signature_delta`` (a signature ends the block: more thinking starts a new one), or
  a ``redacted_thinking`` block holding the whole ``data``; each new ``ToolCallDelta``
  index a ``tool_use`` block (``input: {}``) fed by ``input_json_delta`` fragments. A block
  gets ``content_block_stop`` when another starts or the stream finishes. A tool call that
  starts while another's block is open (an upstream interleaving parallel calls) is held
  back, its fragments joined, and written as one block once the open one ends (at the
  finish, or when text or thinking starts): a closed block never gets more input, so the
  SDK's events see each call whole.
- ``NativeEvent`` of an Anthropic block (a server tool's call or result, passed through
  from an Anthropic upstream) is a block of its own, written as the API streams it: a
  ``content_block_start`` holding the block, then ``content_block_stop``; a call
  (``server_tool_use``, ``mcp_tool_use``) starts with ``input: {}`` and gets its input as
  one ``input_json_delta``, as clients that join those fragments expect. One holding a
  ``citations_delta`` goes into the open text block (one is opened if none is). Another
  format's native events write nothing.
- ``UsageEvent`` is remembered, whenever it comes (OpenAI-compatible upstreams send usage
  after the finish chunk). ``Finish`` closes the open block and remembers the stop reason.
- ``done()`` writes ``message_delta`` (stop reason, stop sequence, cumulative usage:
  ``output_tokens``, plus input and cache counts when known) and ``message_stop``.
- ``ErrorEvent`` writes one ``event: error`` frame; nothing follows it, ``done()`` included.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from gw.codecs.anthropic_messages.client_errors import encode_stream_error
from gw.codecs.anthropic_messages.client_response import (
    BlockOut,
    RedactedThinkingBlockOut,
    TextBlockOut,
    ThinkingBlockOut,
    ToolUseBlockOut,
    stop_reason,
    usage_out,
)
from gw.errors import ERRORS_BY_CODE
from gw.ir import (
    ErrorEvent,
    Finish,
    NativeBlock,
    NativeEvent,
    StreamEvent,
    StreamStart,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    Usage,
    UsageEvent,
)

BlockKind = Literal["text", "thinking", "redacted_thinking", "tool_use", "native"]


class _TextDelta(msgspec.Struct, tag_field="type", tag="text_delta"):
    text: str


class _ThinkingDelta(msgspec.Struct, tag_field="type", tag="thinking_delta"):
    thinking: str


class _SignatureDelta(msgspec.Struct, tag_field="type", tag="signature_delta"):
    signature: str


class _InputJsonDelta(msgspec.Struct, tag_field="type", tag="input_json_delta"):
    partial_json: str


_Delta = _TextDelta | _ThinkingDelta | _SignatureDelta | _InputJsonDelta


class _StreamUsage(msgspec.Struct, kw_only=True):
    # UNSET drops the key: message_delta carries input and cache counts only when known.
    input_tokens: int | msgspec.UnsetType = msgspec.UNSET
    cache_creation_input_tokens: int | msgspec.UnsetType = msgspec.UNSET
    cache_read_input_tokens: int | msgspec.UnsetType = msgspec.UNSET
    output_tokens: int


class _StartMessage(msgspec.Struct, kw_only=True):
    id: str
    type: Literal["message"] = "message"
    role: Literal["assistant"] = "assistant"
    model: str
    content: list[BlockOut] = []
    stop_reason: None = None
    stop_sequence: None = None
    usage: _StreamUsage


class _MessageStart(msgspec.Struct, tag_field="type", tag="message_start"):
    message: _StartMessage


class _BlockStart(msgspec.Struct, tag_field="type", tag="content_block_start"):
    index: int
    content_block: BlockOut


class _BlockDelta(msgspec.Struct, tag_field="type", tag="content_block_delta"):
    index: int
    delta: _Delta


class _NativeDelta(msgspec.Struct, tag_field="type", tag="content_block_delta"):
    """A delta gw does not model, as the upstream sent it (``citations_delta``)."""

    index: int
    delta: dict[str, Any]


class _BlockStop(msgspec.Struct, tag_field="type", tag="content_block_stop"):
    index: int


class _StopDelta(msgspec.Struct):
    stop_reason: str
    stop_sequence: str | None


class _MessageDelta(msgspec.Struct, tag_field="type", tag="message_delta"):
    delta: _StopDelta
    usage: _StreamUsage


_ENCODER = msgspec.json.Encoder()
PING_FRAME = b'event: ping\ndata: {"type":"ping"}\n\n'
MESSAGE_STOP_FRAME = b'event: message_stop\ndata: {"type":"message_stop"}\n\n'


def _frame(event: str, payload: msgspec.Struct) -> bytes:
    # msgspec escapes every line break inside strings, so one data: line always suffices.
    return b"event: " + event.encode() + b"\ndata: " + _ENCODER.encode(payload) + b"\n\n"


def _usage_fields(usage: Usage) -> _StreamUsage:
    out = usage_out(usage)
    return _StreamUsage(
        input_tokens=out.input_tokens,
        cache_creation_input_tokens=out.cache_creation_input_tokens,
        cache_read_input_tokens=out.cache_read_input_tokens,
        output_tokens=out.output_tokens,
    )


class MessagesStreamEncoder:
    """Stateful encoder for one client stream; ``encode`` each event, then ``done()``."""

    def __init__(self, *, message_id: str, model: str, input_tokens: int) -> None:
        self._id = message_id
        self._model = model
        self._input_estimate = input_tokens
        self._started = False
        self._finished = False  # an error frame or done() went out: nothing more
        self._index = -1  # the index of the last block started
        self._open: BlockKind | None = None
        self._signed = False  # the open thinking block already has its signature
        self._tool_blocks: dict[int, int] = {}  # IR tool call index -> block index
        self._open_tool: int | None = None  # the IR index of the open tool_use block
        self._held: dict[int, list[ToolCallDelta]] = {}  # calls waiting for their block
        self._usage: Usage | None = None
        self._stop: tuple[str, str | None] = ("end_turn", None)

    def encode(self, event: StreamEvent) -> bytes:
        """Zero or more complete ``event: ...\\ndata: {...}\\n\\n`` frames for ``event``."""
        if self._finished:
            return b""
        out = b""
        match event:
            case StreamStart():
                pass
            case TextDelta():
                out = self._release_held() + self._text(event)
            case ThinkingDelta():
                out = self._release_held() + self._thinking(event)
            case ToolCallDelta():
                out = self._tool_call(event)
            case NativeEvent(block=block) if block.format == "anthropic":
                out = self._release_held() + self._native(block)
            case UsageEvent(usage=usage):
                self._usage = usage
            case Finish(reason=reason, stop_sequence=sequence):
                self._stop = stop_reason(reason, sequence)
                out = self._start_message() + self._release_held() + self._close_block()
            case ErrorEvent(code=code, message=message):
                self._finished = True
                cls = ERRORS_BY_CODE.get(code)
                status = 500 if cls is None else cls.status
                out = encode_stream_error(code=code, status=status, message=message)
        return out

    def done(self) -> bytes:
        """The closing frames: ``message_delta`` then ``message_stop`` (none after an error)."""
        if self._finished:
            return b""
        out = self._start_message() + self._release_held() + self._close_block()
        self._finished = True
        usage = _StreamUsage(output_tokens=0) if self._usage is None else _usage_fields(self._usage)
        reason, sequence = self._stop
        delta = _MessageDelta(delta=_StopDelta(reason, sequence), usage=usage)
        return out + _frame("message_delta", delta) + MESSAGE_STOP_FRAME

    def _text(self, event: TextDelta) -> bytes:
        if not event.text:
            return b""
        out = self._start_message()
        if self._open != "text":
            out += self._start_block("text", TextBlockOut(text=""))
        return out + self._delta(_TextDelta(text=event.text))

    def _thinking(self, event: ThinkingDelta) -> bytes:
        if event.redacted is not None:
            block = RedactedThinkingBlockOut(data=event.redacted)
            return self._start_message() + self._start_block("redacted_thinking", block)
        if not event.text and event.signature is None:
            return b""
        out = self._start_message()
        if self._open != "thinking" or self._signed:
            out += self._start_block("thinking", ThinkingBlockOut(thinking="", signature=""))
        if event.text:
            out += self._delta(_ThinkingDelta(thinking=event.text))
        if event.signature is not None:
            self._signed = True
            out += self._delta(_SignatureDelta(signature=event.signature))
        return out

    def _native(self, block: NativeBlock) -> bytes:
        data = block.data
        kind = data.get("type")
        out = self._start_message()
        if kind == "citations_delta":
            if self._open != "text":
                out += self._start_block("text", TextBlockOut(text=""))
            return out + _frame("content_block_delta", _NativeDelta(self._index, data))
        tool_input = data.get("input")
        if isinstance(kind, str) and kind.endswith("tool_use") and isinstance(tool_input, dict):
            start = msgspec.Raw(_ENCODER.encode({**data, "input": {}}))
            out += self._start_block("native", start)
            delta = _InputJsonDelta(_ENCODER.encode(tool_input).decode())
            out += self._delta(delta)
        else:
            out += self._start_block("native", msgspec.Raw(_ENCODER.encode(data)))
        return out + self._close_block()

    def _tool_call(self, event: ToolCallDelta) -> bytes:
        if event.index in self._held or (
            self._open_tool is not None and event.index != self._open_tool
        ):  # another call's block is open: this one waits for it to end
            self._held.setdefault(event.index, []).append(event)
            return b""
        out = b""
        index = self._tool_blocks.get(event.index)
        if index is None:
            block = ToolUseBlockOut(
                # id and name come with a call's first fragment; the fallbacks only keep
                # the frame well-formed if an upstream left them out.
                id=event.id or f"toolu_{self._id}_{event.index}",
                name=event.name or "",
                input={},
            )
            out = self._start_message() + self._start_block("tool_use", block)
            index = self._tool_blocks[event.index] = self._index
            self._open_tool = event.index
        if event.arguments:
            out += _frame(
                "content_block_delta", _BlockDelta(index, _InputJsonDelta(event.arguments))
            )
        return out

    def _release_held(self) -> bytes:
        """The held-back tool calls, each as one whole block, in the order they began."""
        out = b""
        while self._held:
            index, fragments = next(iter(self._held.items()))
            del self._held[index]
            self._open_tool = None  # so this call's block opens
            first = next((f for f in fragments if f.id or f.name), fragments[0])
            whole = ToolCallDelta(
                index=index,
                id=first.id,
                name=first.name,
                arguments="".join(f.arguments for f in fragments),
            )
            out += self._tool_call(whole)
        return out

    def _start_message(self) -> bytes:
        if self._started:
            return b""
        self._started = True
        if self._usage is None:
            usage = _StreamUsage(input_tokens=self._input_estimate, output_tokens=1)
        else:
            usage = _usage_fields(self._usage)
        message = _StartMessage(id=self._id, model=self._model, usage=usage)
        return _frame("message_start", _MessageStart(message)) + PING_FRAME

    def _start_block(self, kind: BlockKind, block: BlockOut) -> bytes:
        out = self._close_block()
        self._open_tool = None
        self._index += 1
        self._open = kind
        self._signed = False
        return out + _frame("content_block_start", _BlockStart(self._index, block))

    def _close_block(self) -> bytes:
        if self._open is None:
            return b""
        self._open = None
        return _frame("content_block_stop", _BlockStop(self._index))

    def _delta(self, delta: _Delta) -> bytes:
        return _frame("content_block_delta", _BlockDelta(self._index, delta))
