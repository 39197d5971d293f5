"""A cached answer and a stream, both ways: a stream's events gathered into the answer the
cache keeps (``StreamCollector``), and a kept answer told again as a stream
(``answer_events``, ``ReplayTail``) in the pieces an upstream would send: the client's
format then frames them as it frames any stream.
"""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator

from gw.ir import (
    ChatResponse,
    Finish,
    NativeBlock,
    NativeEvent,
    StreamEvent,
    StreamStart,
    TextDelta,
    TextPart,
    ThinkingDelta,
    ThinkingPart,
    ToolCall,
    ToolCallDelta,
    Usage,
    UsageEvent,
)
from gw.ir.cut_calls import drop_cut_calls
from gw.routing.decision import TargetRef

Deliver = Callable[[list[StreamEvent]], bool]
_PIECE = re.compile(r"\s*\S+(?:\s+\S+){0,2}")  # about three words a piece, as models stream
_ARGUMENT_PIECE = 32  # characters of a tool call's arguments a piece


def _pieces(text: str) -> Iterator[str]:
    taken = 0
    for match in _PIECE.finditer(text):
        taken = match.end()
        yield match.group()
    if taken < len(text):  # trailing whitespace
        yield text[taken:]


def answer_events(response: ChatResponse) -> list[StreamEvent]:
    """``response`` as the events of a stream, in the order its blocks came."""
    events: list[StreamEvent] = [StreamStart(id=response.id, model=response.model)]
    blocks = response.blocks or _grouped_blocks(response)
    calls = 0
    for block in blocks:
        if isinstance(block, TextPart):
            events.extend(TextDelta(text=piece) for piece in _pieces(block.text))
        elif isinstance(block, ThinkingPart):
            events.append(
                ThinkingDelta(text=block.text, signature=block.signature, redacted=block.redacted)
            )
        elif isinstance(block, ToolCall):
            events.extend(_call_events(calls, block))
            calls += 1
        elif isinstance(block, NativeBlock):
            events.append(NativeEvent(block=block))
    if response.refusal:
        events.extend(TextDelta(text=piece, refusal=True) for piece in _pieces(response.refusal))
    if response.usage is not None:
        events.append(UsageEvent(usage=response.usage))
    events.append(Finish(reason=response.finish_reason, stop_sequence=response.stop_sequence))
    return events


def _grouped_blocks(response: ChatResponse) -> list[TextPart | ThinkingPart | ToolCall]:
    """The grouped answer in stream order. A signature with no thought text (Gemini's
    ``thoughtSignature``) belongs to the function call it came with, so it goes just
    before the first call, as the whole answer's encoder places it."""
    loose = [part for part in response.thinking if not part.text and response.tool_calls]
    blocks: list[TextPart | ThinkingPart | ToolCall] = [
        part for part in response.thinking if part not in loose
    ]
    if response.text:
        blocks.append(TextPart(text=response.text))
    blocks.extend(loose)
    blocks.extend(response.tool_calls)
    return blocks


def _call_events(index: int, call: ToolCall) -> Iterator[ToolCallDelta]:
    arguments = call.arguments
    yield ToolCallDelta(
        index=index, id=call.id, name=call.name, arguments=arguments[:_ARGUMENT_PIECE]
    )
    for start in range(_ARGUMENT_PIECE, len(arguments), _ARGUMENT_PIECE):
        yield ToolCallDelta(index=index, arguments=arguments[start : start + _ARGUMENT_PIECE])


class StreamCollector:
    """The answer a stream carried, gathered as it passes (text, refusal, tool calls,
    usage, the finish). A stream with thinking or provider blocks is not gathered
    (``complete`` is then None): their order and signatures are not kept here."""

    __slots__ = (
        "_calls",
        "_finish",
        "_id",
        "_model",
        "_refusal",
        "_stop",
        "_text",
        "_usage",
        "keepable",
    )

    def __init__(self) -> None:
        self._id = ""
        self._model = ""
        self._text: list[str] = []
        self._refusal: list[str] = []
        self._calls: dict[int, list[str]] = {}  # index -> [id, name, arguments...]
        self._usage: Usage | None = None
        self._finish: Finish | None = None
        self.keepable = True

    def take(self, event: StreamEvent) -> None:
        if isinstance(event, TextDelta):
            (self._refusal if event.refusal else self._text).append(event.text)
        elif isinstance(event, ToolCallDelta):
            call = self._calls.setdefault(event.index, ["", ""])
            if event.id:
                call[0] = event.id
            if event.name:
                call[1] = event.name
            call.append(event.arguments)
        elif isinstance(event, UsageEvent):
            self._usage = event.usage
        elif isinstance(event, Finish):
            self._finish = event
        elif isinstance(event, StreamStart):
            self._id, self._model = event.id, event.model
        elif isinstance(event, (ThinkingDelta, NativeEvent)):
            self.keepable = False

    def complete(self) -> ChatResponse | None:
        """The whole answer, once the stream finished; None if it did not, or cannot be kept."""
        if self._finish is None or not self.keepable:
            return None
        calls = tuple(
            ToolCall(id=parts[0], name=parts[1], arguments="".join(parts[2:]))
            for _, parts in sorted(self._calls.items())
        )
        whole, _ = drop_cut_calls(  # as the whole answer would be kept: no call cut short
            ChatResponse(
                id=self._id,
                model=self._model,
                text="".join(self._text) or None,
                refusal="".join(self._refusal) or None,
                tool_calls=calls,
                finish_reason=self._finish.reason,
                stop_sequence=self._finish.stop_sequence,
                usage=self._usage,
            )
        )
        return whole


class ReplayTail:
    """A cached answer as a committed stream (``stream_session.CommittedStream``): its
    events all ready, pulled or pushed; ``on_end`` runs once, when they have been sent."""

    def __init__(self, events: list[StreamEvent], target: TargetRef, model: str) -> None:
        self._events = events
        self.target = target
        self.reported_model = model
        self.began = False

    async def abandon(self) -> None:
        """Nothing to close: no upstream request is open."""

    async def events(
        self, on_end: Callable[[], object] | None = None
    ) -> AsyncGenerator[StreamEvent, None]:
        self.began = True
        try:
            for event in self._events:
                yield event
        finally:
            if on_end is not None:
                on_end()

    async def relay(
        self,
        deliver: Deliver,
        flush: Callable[[], Awaitable[None]],
        on_end: Callable[[], object] | None = None,
    ) -> None:
        self.began = True
        try:
            if not deliver(self._events):
                await flush()
        finally:
            if on_end is not None:
                on_end()
