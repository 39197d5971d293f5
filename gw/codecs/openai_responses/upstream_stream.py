"""A Responses upstream's SSE stream -> IR stream events, incrementally.

The stream is ``response.created``, ``response.in_progress``, then per output item
``response.output_item.added``, its parts and deltas and ``response.output_item.done``,
then ``response.completed`` (or ``response.incomplete``, or ``response.failed``); every
event names itself in its JSON ``type`` (equal to the SSE event name), so only the data
is read. Event types newer than this codec are skipped.

Mapping (as upstream_response.py reads whole answers): ``response.created`` ->
``StreamStart``; ``output_text.delta`` -> ``TextDelta``, ``refusal.delta`` ->
``TextDelta(refusal=True)``; a ``function_call`` item's ``output_item.added`` ->
``ToolCallDelta`` with the call's own 0-based index, its ``call_id`` and name, and its
``function_call_arguments.delta`` s the fragments; ``reasoning_summary_text.delta`` (and
``reasoning_text.delta``) -> ``ThinkingDelta``, a blank line between summary parts; a
reasoning item's ``output_item.added`` -> a ``NativeEvent`` of the item with status
``in_progress`` (opening it, sent with its first summary delta: nothing is committed to
the client before there is something to show), its ``output_item.done`` -> a
``NativeEvent`` holding the whole item (id, ``encrypted_content``), which closes the
reasoning its deltas built; the ``done`` of any item the IR does not model -> a
``NativeEvent``. ``response.completed`` / ``response.incomplete`` -> ``UsageEvent`` +
``Finish``; ``response.failed`` and ``error`` events -> the mapped gw error.

A message or call whose deltas never came (a server that sends only the ``done``) is
taken from its ``output_item.done``.
"""

from __future__ import annotations

from typing import Any

import msgspec

from gw.codecs.openai_responses.upstream_errors import (
    error_from_response_error,
    error_from_stream_event,
)
from gw.codecs.openai_responses.upstream_response import (
    FORMAT,
    IncompleteIn,
    UsageIn,
    finish_reason,
    malformed,
    read_item,
    tool_call,
)
from gw.codecs.sse_decoder import SSEStreamDataDecoder
from gw.errors import UpstreamError
from gw.ir import (
    Finish,
    NativeBlock,
    NativeEvent,
    StreamEvent,
    StreamStart,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    UsageEvent,
)

_NO_RAW = msgspec.Raw()


class _Event(msgspec.Struct, gc=False):
    type: str
    delta: str | None = None
    item_id: str | None = None
    summary_index: int | None = None
    # Decoded only for the events that need them: the deltas, most of a stream, do not.
    item: msgspec.Raw = _NO_RAW
    response: msgspec.Raw = _NO_RAW


class _Head(msgspec.Struct):
    id: str = ""
    model: str = ""
    created_at: float = 0


class _End(msgspec.Struct):
    status: str | None = None
    usage: UsageIn | None = None
    error: object | None = None
    incomplete_details: IncompleteIn | None = None


_EVENT = msgspec.json.Decoder(_Event)
_HEAD = msgspec.json.Decoder(_Head)
_END = msgspec.json.Decoder(_End)
_ITEM = msgspec.json.Decoder(dict[str, Any])
_THINKING_DELTAS = frozenset(
    {"response.reasoning_summary_text.delta", "response.reasoning_text.delta"}
)


class UpstreamStreamDecoder(SSEStreamDataDecoder):
    """Feed the raw response body as it arrives; call ``close()`` at EOF.

    ``feed`` raises the mapped ``GatewayError`` for ``response.failed`` or an ``error``
    event, and ``UpstreamError`` for an event that is not the Responses API's. Events
    decoded in the same ``feed`` call before the failure are returned first; the error is
    raised by the next ``feed`` or ``close``. ``done`` turns true at the response's end.
    """

    def __init__(self) -> None:
        super().__init__()
        self._started = False
        self._tools: dict[str, int] = {}  # function_call item id -> IR tool call index
        self._with_arguments: set[int] = set()  # calls whose argument fragments came
        self._with_text: set[str] = set()  # message items whose deltas came
        self._summary: tuple[str | None, int] = (None, 0)  # last thinking item, part
        # Reasoning items added but not yet shown: each opens with its first summary delta,
        # so a reasoning model's stream commits no byte (and may still fall back) until
        # there is something to show.
        self._opening: dict[str, dict[str, Any]] = {}

    def _check_end(self) -> None:
        if not self.done:
            raise UpstreamError("upstream stream ended before response.completed", blame="upstream")

    def _take_data(self, data: bytes, events: list[StreamEvent]) -> None:
        try:
            event = _EVENT.decode(data)
        except msgspec.ValidationError as exc:
            raise malformed(str(exc)) from None
        except msgspec.DecodeError:
            raise malformed("a stream event is not JSON") from None
        kind = event.type
        if kind == "response.output_text.delta":  # most of a stream: read here, inline
            if event.delta:
                self._require_start(kind)
                self._with_text.add(event.item_id or "")
                events.append(TextDelta(text=event.delta))
        elif kind == "response.function_call_arguments.delta":
            self._arguments(event, events)
        elif kind in _THINKING_DELTAS:
            self._thinking(event, events)
        elif kind == "error":
            raise error_from_stream_event(data)
        else:
            self._take_rarer(event, events)

    def _take_rarer(self, event: _Event, events: list[StreamEvent]) -> None:
        """The events that come once per item or per response (and refusal text)."""
        match event.type:
            case "response.output_item.added":
                self._item_added(event, events)
            case "response.output_item.done":
                self._item_done(event, events)
            case "response.refusal.delta" if event.delta:
                self._require_start(event.type)
                self._with_text.add(event.item_id or "")
                events.append(TextDelta(text=event.delta, refusal=True))
            case "response.created":
                self._start(event, events)
            case "response.completed" | "response.incomplete":
                self._end(event, events)
            case "response.failed":
                raise error_from_response_error(_end_of(event).error)

    def _require_start(self, kind: str) -> None:
        if not self._started:
            raise malformed(f"{kind} before response.created")

    def _start(self, event: _Event, events: list[StreamEvent]) -> None:
        if self._started:
            raise malformed("a second response.created")
        try:
            head = _HEAD.decode(event.response) if event.response else _Head()
        except (msgspec.DecodeError, msgspec.ValidationError):
            raise malformed("response.created without a response object") from None
        self._started = True
        events.append(StreamStart(id=head.id, model=head.model, created=int(head.created_at)))

    def _arguments(self, event: _Event, events: list[StreamEvent]) -> None:
        index = self._tools.get(event.item_id or "")
        if index is None:
            raise malformed("function_call_arguments.delta for a call that was not added")
        if event.delta:
            self._with_arguments.add(index)
            events.append(ToolCallDelta(index=index, arguments=event.delta))

    def _thinking(self, event: _Event, events: list[StreamEvent]) -> None:
        self._require_start(event.type)
        if not event.delta:
            return
        where = (event.item_id, event.summary_index or 0)
        last_item, last_part = self._summary
        if where[0] == last_item and where[1] != last_part:
            events.append(ThinkingDelta(text="\n\n"))  # as the whole answer joins parts
        self._summary = where
        opening = self._opening.pop(event.item_id or "", None)
        if opening is not None:
            events.append(NativeEvent(block=NativeBlock(format=FORMAT, data=opening)))
        events.append(ThinkingDelta(text=event.delta))

    def _item_added(self, event: _Event, events: list[StreamEvent]) -> None:
        self._require_start(event.type)
        data = _item_of(event)
        if data.get("type") == "function_call":
            self._add_call(data, events)
        elif data.get("type") == "reasoning":
            # Opens the reasoning its summary deltas fill, under the upstream's own id
            # (a Responses client checks that an item keeps its id until done).
            self._opening[str(data.get("id") or "")] = {**data, "status": "in_progress"}

    def _add_call(self, data: dict[str, Any], events: list[StreamEvent]) -> int:
        call = tool_call(read_item(data, "output_item"), "output_item")
        index = self._tools[str(data.get("id") or call.id)] = len(self._tools)
        events.append(ToolCallDelta(index=index, id=call.id, name=call.name))
        return index

    def _item_done(self, event: _Event, events: list[StreamEvent]) -> None:
        self._require_start(event.type)
        data = _item_of(event)
        kind = data.get("type")
        if kind == "message":
            if not {str(data.get("id") or ""), ""} & self._with_text:
                self._whole_message(data, events)
        elif kind == "function_call":
            index = self._tools.get(str(data.get("id") or data.get("call_id") or ""))
            if index is None:  # never added: the whole call now
                index = self._add_call(data, events)
            if index not in self._with_arguments:
                arguments = read_item(data, "output_item").arguments or "{}"
                self._with_arguments.add(index)
                events.append(ToolCallDelta(index=index, arguments=arguments))
        else:
            self._opening.pop(str(data.get("id") or ""), None)  # shown whole, if at all
            events.append(NativeEvent(block=NativeBlock(format=FORMAT, data=data)))

    @staticmethod
    def _whole_message(data: dict[str, Any], events: list[StreamEvent]) -> None:
        for part in read_item(data, "output_item").content or ():
            if part.type == "output_text" and part.text:
                events.append(TextDelta(text=part.text))
            elif part.type == "refusal" and part.refusal:
                events.append(TextDelta(text=part.refusal, refusal=True))

    def _end(self, event: _Event, events: list[StreamEvent]) -> None:
        self._require_start(event.type)
        end = _end_of(event)
        if end.usage is not None:
            events.append(UsageEvent(usage=end.usage.to_ir()))
        status = "incomplete" if event.type == "response.incomplete" else "completed"
        reason = finish_reason(status, end.incomplete_details, called=bool(self._tools))
        events.append(Finish(reason=reason))
        self.done = True


def _item_of(event: _Event) -> dict[str, Any]:
    try:
        return _ITEM.decode(event.item)
    except (msgspec.DecodeError, msgspec.ValidationError):
        raise malformed(f"{event.type} without an item object") from None


def _end_of(event: _Event) -> _End:
    try:
        return _END.decode(event.response) if event.response else _End()
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise malformed(f"{event.type}: {exc}") from None
