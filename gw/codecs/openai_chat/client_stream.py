"""IR stream events as OpenAI ``chat.completion.chunk`` SSE frames, for one client stream.

The frames match what api.openai.com sends, so the OpenAI SDK's stream parsing and its
accumulation helpers (``client.chat.completions.stream``) work unchanged:

- the assistant role goes out with the first delta (``{"role": "assistant", "content": ""}``
  before text; ``content: null`` beside the first tool call fragment). ``StreamStart``
  itself writes nothing, so no byte is committed to the client before the upstream
  produced output and the engine may still fall back;
- a tool call's first fragment carries ``id``, ``type`` and ``function.name``; later ones
  only ``index`` and ``function.arguments``;
- ``Finish`` is a chunk with an empty delta and the finish reason;
- with ``include_usage`` every chunk has ``"usage": null`` and ``done()`` adds a last chunk
  with ``choices: []`` and the usage (the last ``UsageEvent`` seen, whenever it came); with
  no ``UsageEvent`` that chunk is left out, as OpenAI does when a stream is cut short.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from gw.codecs.openai_chat.client_errors import ErrorBody, error_type
from gw.codecs.openai_chat.client_response import FINISH_REASONS, UsageOut, usage_out
from gw.errors import ERRORS_BY_CODE
from gw.ir import (
    ErrorEvent,
    Finish,
    NativeEvent,
    StreamEvent,
    StreamStart,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    Usage,
    UsageEvent,
)


class _DeltaFunction(msgspec.Struct, kw_only=True):
    name: str | msgspec.UnsetType = msgspec.UNSET
    arguments: str


class _DeltaToolCall(msgspec.Struct, kw_only=True):
    index: int
    id: str | msgspec.UnsetType = msgspec.UNSET
    type: Literal["function"] | msgspec.UnsetType = msgspec.UNSET
    function: _DeltaFunction


class _Delta(msgspec.Struct, kw_only=True):
    role: Literal["assistant"] | msgspec.UnsetType = msgspec.UNSET
    content: str | msgspec.UnsetType | None = msgspec.UNSET
    refusal: str | msgspec.UnsetType = msgspec.UNSET
    tool_calls: list[_DeltaToolCall] | msgspec.UnsetType = msgspec.UNSET


class _ChunkChoice(msgspec.Struct, kw_only=True):
    index: int = 0
    delta: _Delta
    logprobs: None = None
    finish_reason: str | None = None


class _Chunk(msgspec.Struct, kw_only=True):
    id: str
    object: Literal["chat.completion.chunk"] = "chat.completion.chunk"
    created: int
    model: str
    system_fingerprint: None = None
    choices: list[_ChunkChoice]
    # UNSET drops the key: OpenAI sends "usage" only when include_usage was asked for.
    usage: UsageOut | msgspec.UnsetType | None = msgspec.UNSET


class _ErrorFrame(msgspec.Struct):
    error: ErrorBody


_ENCODER = msgspec.json.Encoder()
_EMPTY = _Delta()
DONE_FRAME = b"data: [DONE]\n\n"


def _frame(payload: msgspec.Struct) -> bytes:
    # msgspec escapes every line break inside strings, so one data: line always suffices.
    return b"data: " + _ENCODER.encode(payload) + b"\n\n"


class ChatStreamEncoder:
    """Stateful encoder for one client stream; ``encode`` each event, then ``done()``."""

    def __init__(self, *, request_id: str, model: str, created: int, include_usage: bool) -> None:
        self._id = request_id
        self._model = model
        self._created = created
        self._include_usage = include_usage
        self._usage_field: msgspec.UnsetType | None = None if include_usage else msgspec.UNSET
        self._opened = False
        self._failed = False
        self._tool_indexes: set[int] = set()
        self._tool_ids: set[int] = set()
        self._tool_names: set[int] = set()
        self._usage: Usage | None = None
        self._text_frame: tuple[bytes, bytes] | None = None  # see _text

    def encode(self, event: StreamEvent) -> bytes:
        """Zero or more complete ``data: {...}\\n\\n`` frames for ``event``."""
        match event:
            case StreamStart() | ThinkingDelta() | NativeEvent():
                # Nothing to send: the role goes with the first delta, and Chat
                # Completions has no reasoning field (usage still counts it) and no
                # other format's blocks.
                return b""
            case TextDelta(text=text, refusal=refusal):
                return self._refusal(text) if refusal else self._open("") + self._text(text)
            case ToolCallDelta():
                return self._tool_call(event)
            case UsageEvent(usage=usage):
                self._usage = usage
                return b""
            case Finish(reason=reason):
                return self._open("") + self._chunk(_EMPTY, FINISH_REASONS[reason])
            case ErrorEvent(code=code, message=message):
                self._failed = True
                cls = ERRORS_BY_CODE.get(code)
                kind = error_type(code, 500 if cls is None else cls.status)
                return _frame(_ErrorFrame(ErrorBody(message=message, type=kind, code=code)))

    def done(self) -> bytes:
        """The closing frames: the usage chunk when asked for and known, then ``[DONE]``."""
        if self._include_usage and self._usage is not None and not self._failed:
            usage = _Chunk(
                id=self._id,
                created=self._created,
                model=self._model,
                choices=[],
                usage=usage_out(self._usage),
            )
            return _frame(usage) + DONE_FRAME
        return DONE_FRAME

    def _tool_call(self, event: ToolCallDelta) -> bytes:
        # The SDK concatenates every string it sees per index, so id and name go out once.
        index = event.index
        first = _first(self._tool_indexes, index, True)
        send_id = _first(self._tool_ids, index, event.id is not None)
        send_name = _first(self._tool_names, index, event.name is not None)
        call = _DeltaToolCall(
            index=index,
            id=event.id if send_id and event.id is not None else msgspec.UNSET,
            type="function" if first else msgspec.UNSET,
            function=_DeltaFunction(
                name=event.name if send_name and event.name is not None else msgspec.UNSET,
                arguments=event.arguments,
            ),
        )
        if self._opened:
            return self._chunk(_Delta(tool_calls=[call]))
        self._opened = True
        return self._chunk(_Delta(role="assistant", content=None, tool_calls=[call]))

    def _refusal(self, text: str) -> bytes:
        """Refusal text goes in its own field, as OpenAI streams it."""
        if self._opened:
            return self._chunk(_Delta(refusal=text))
        self._opened = True
        return self._chunk(_Delta(role="assistant", refusal=text))

    def _open(self, content: str) -> bytes:
        if self._opened:
            return b""
        self._opened = True
        return self._chunk(_Delta(role="assistant", content=content))

    def _chunk(self, delta: _Delta, finish_reason: str | None = None) -> bytes:
        return _frame(self._chunk_struct(delta, finish_reason))

    def _chunk_struct(self, delta: _Delta, finish_reason: str | None = None) -> _Chunk:
        choice = _ChunkChoice(delta=delta, finish_reason=finish_reason)
        return _Chunk(
            id=self._id,
            created=self._created,
            model=self._model,
            choices=[choice],
            usage=self._usage_field,
        )

    def _text(self, text: str) -> bytes:
        """``_chunk(_Delta(content=text))``, byte for byte, for a fraction of its cost: a
        stream is mostly text chunks that differ only in the text, so the bytes around it
        are encoded once per stream. (``"content":""`` occurs once in the template: the
        quotes of any string value are escaped.)"""
        if self._text_frame is None:
            template = _frame(self._chunk_struct(_Delta(content="")))
            head, _, tail = template.partition(b'"content":""')
            self._text_frame = (head + b'"content":', tail)
        head, tail = self._text_frame
        return head + _ENCODER.encode(text) + tail


def _first(seen: set[int], index: int, present: bool) -> bool:
    """True the first time ``index`` comes with the value ``present``; records it."""
    if not present or index in seen:
        return False
    seen.add(index)
    return True
