"""A Responses upstream's ``response`` object -> IR ``ChatResponse``.

Output items, in order: a ``message``'s ``output_text`` parts are the text (and one
``TextPart`` per message in ``blocks``), its ``refusal`` parts the refusal; a
``function_call`` is a ``ToolCall`` whose id is the item's ``call_id``; a ``reasoning``
item is a ``ThinkingPart`` of its summary (or, from servers that send it, its reasoning
text), in ``thinking`` and in ``blocks``, followed there by the item itself, verbatim, as
a ``NativeBlock`` that stands for that summary with a Responses client (which so gets its
id and ``encrypted_content`` back; clients of other formats show the summary); any other
item (``web_search_call``, ``file_search_call``, ...) is a ``NativeBlock``. When there is
any ``NativeBlock``, ``blocks`` lists every item in order.

``status``: ``completed`` -> finish ``stop`` (``tool_calls`` when a function was called);
``incomplete`` -> ``length`` (``content_filter`` when that was the reason); ``failed`` ->
the mapped error.
"""

from __future__ import annotations

from typing import Any

import msgspec

from gw.codecs.openai_responses.namespaces import flat_name
from gw.codecs.openai_responses.upstream_errors import error_from_response_error
from gw.errors import PersistentUpstreamError
from gw.ir import (
    ChatResponse,
    FinishReason,
    NativeBlock,
    NativeFormat,
    TextPart,
    ThinkingPart,
    ToolCall,
    Usage,
)

FORMAT: NativeFormat = "openai_responses"
Block = TextPart | ThinkingPart | NativeBlock | ToolCall


class _InputDetails(msgspec.Struct):
    cached_tokens: int | None = None
    cache_write_tokens: int | None = None


class _OutputDetails(msgspec.Struct):
    reasoning_tokens: int | None = None


class UsageIn(msgspec.Struct):
    input_tokens: int | None = None
    output_tokens: int | None = None
    input_tokens_details: _InputDetails | None = None
    output_tokens_details: _OutputDetails | None = None

    def to_ir(self) -> Usage:
        given = self.input_tokens_details or _InputDetails()
        produced = self.output_tokens_details or _OutputDetails()
        return Usage(
            input_tokens=self.input_tokens or 0,
            output_tokens=self.output_tokens or 0,
            cached_input_tokens=given.cached_tokens or 0,
            cache_write_tokens=given.cache_write_tokens or 0,
            reasoning_tokens=produced.reasoning_tokens or 0,
        )


class IncompleteIn(msgspec.Struct):
    reason: str | None = None


class _Part(msgspec.Struct):
    type: str = ""
    text: str | None = None
    refusal: str | None = None


class _Item(msgspec.Struct):
    """The fields gw reads of an output item; the item itself is kept as a dict."""

    type: str
    content: list[_Part] | None = None  # message: output_text / refusal; reasoning: text
    summary: list[_Part] | None = None  # reasoning
    call_id: str | None = None  # function_call
    name: str | None = None
    namespace: str | None = None  # a call to a function of a namespace tool
    arguments: str | None = None


class _ResponseIn(msgspec.Struct):
    id: str = ""
    model: str = ""
    created_at: float = 0
    status: str | None = None
    output: list[dict[str, Any]] = []
    usage: UsageIn | None = None
    error: object | None = None
    incomplete_details: IncompleteIn | None = None


_DECODER = msgspec.json.Decoder(_ResponseIn)


def malformed(reason: str) -> PersistentUpstreamError:
    """The error for an upstream body gw cannot read; ``reason`` must not quote the body."""
    return PersistentUpstreamError(
        f"upstream sent a malformed response: {reason}", blame="upstream"
    )


def finish_reason(
    status: str | None, incomplete: IncompleteIn | None, *, called: bool
) -> FinishReason:
    """The IR finish of a response that ended with ``status``."""
    if status == "incomplete":
        reason = incomplete.reason if incomplete is not None else None
        return "content_filter" if reason == "content_filter" else "length"
    return "tool_calls" if called else "stop"


def read_item(data: dict[str, Any], where: str) -> _Item:
    """The fields gw reads of a message, function_call or reasoning item (other items are
    never read: their shapes are many, and they pass verbatim)."""
    try:
        return msgspec.convert(data, _Item)
    except msgspec.ValidationError as exc:
        raise malformed(f"{where}: {exc}") from None


def thinking_text(item: _Item) -> str:
    """A reasoning item's text: its summary parts, else its reasoning text parts."""
    parts = item.summary or item.content or ()
    return "\n\n".join(part.text for part in parts if part.text)


def tool_call(item: _Item, where: str) -> ToolCall:
    if not item.call_id or not item.name:
        raise malformed(f"{where}: a function_call without call_id or name")
    name = item.name if item.namespace is None else flat_name(item.namespace, item.name)
    return ToolCall(id=item.call_id, name=name, arguments=item.arguments or "")


def decode_upstream_response(body: bytes) -> ChatResponse:
    """Parse a non-streamed answer; raise ``UpstreamError`` (or the mapped error)."""
    try:
        response = _DECODER.decode(body)
    except msgspec.ValidationError as exc:
        raise malformed(str(exc)) from None
    except msgspec.DecodeError:
        raise malformed("not JSON") from None
    if response.status == "failed" or (response.error is not None and not response.output):
        raise error_from_response_error(response.error)
    if response.status not in (None, "completed", "incomplete"):
        raise malformed(f"status {response.status} (the answer is not finished)")
    texts: list[str] = []
    refusals: list[str] = []
    thinking: list[ThinkingPart] = []
    calls: list[ToolCall] = []
    blocks: list[Block] = []
    for index, data in enumerate(response.output):
        where = f"output[{index}]"
        kind = data.get("type")
        if kind == "message":
            item = read_item(data, where)
            said = "".join(p.text or "" for p in item.content or () if p.type == "output_text")
            refusals.extend(p.refusal or "" for p in item.content or () if p.type == "refusal")
            if said:
                texts.append(said)
                blocks.append(TextPart(text=said))
        elif kind == "function_call":
            call = tool_call(read_item(data, where), where)
            calls.append(call)
            blocks.append(call)
        else:
            if kind == "reasoning" and (text := thinking_text(read_item(data, where))):
                # The summary, for clients of other formats, then the item itself, which
                # stands for it with a Responses client (as in a stream: the deltas, then
                # the whole item).
                thinking.append(ThinkingPart(text=text))
                blocks.append(thinking[-1])
            blocks.append(NativeBlock(format=FORMAT, data=data))
    native = any(isinstance(block, NativeBlock) for block in blocks)
    return ChatResponse(
        id=response.id,
        model=response.model,
        text="".join(texts) if texts else None,
        refusal="".join(refusals) if refusals else None,
        thinking=tuple(thinking),
        tool_calls=tuple(calls),
        blocks=tuple(blocks) if native else (),
        finish_reason=finish_reason(
            response.status, response.incomplete_details, called=bool(calls)
        ),
        usage=None if response.usage is None else response.usage.to_ir(),
        created=int(response.created_at),
    )
