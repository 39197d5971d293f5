"""What the fake Responses upstream answers, sans I/O: the ``response`` object and the
numbered stream events of one answer, shaped as api.openai.com sends them (checked against
the openai SDK's own types in test_fake_responses_upstream.py).

Output items, in this order, as the behavior asks: a ``reasoning`` item (summary parts,
and ``encrypted_content`` when the request's ``include`` asks for it), a
``web_search_call``, a ``message`` (text, or a refusal), a ``function_call``.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from .scripted import Faults, split_text, word_count

DEFAULT_TEXT = "Hello from fake Responses"
DEFAULT_MODEL = "gpt-5-mini"
ENCRYPTED_INCLUDE = "reasoning.encrypted_content"

Event = dict[str, Any]


@dataclass(frozen=True)
class Behavior(Faults):
    """How to answer one request. The defaults are a normal answer of DEFAULT_TEXT."""

    status: int = 200
    error_body: dict[str, Any] | None = None  # status != 200; default: OpenAI's for status
    text: str | None = None  # default: DEFAULT_TEXT, or no message beside a tool call
    chunks: int | None = None  # deltas per text, arguments or summary part; default: per word
    refusal: bool = False  # the text as a refusal part
    tool_call: tuple[str, str] | None = None  # (name, arguments JSON): a function_call item
    reasoning: tuple[str, ...] = ()  # summary parts of a reasoning item, first
    web_search: str | None = None  # a web_search_call item searching for this query
    usage: tuple[int, int] | None = None  # (input, output); default: word counts
    cached_tokens: int = 0
    # How the response ends: completed, incomplete (with incomplete_reason), or failed
    # (a stream: right after response.in_progress; a body: status failed, HTTP 200).
    ending: str = "completed"
    incomplete_reason: str = "max_output_tokens"
    failure_code: str = "server_error"
    # Stream: after N deltas send an `error` event (flat, as documented, or nested as
    # also seen on the wire) and end the body.
    error_after_chunks: int | None = None
    error_code: str = "server_error"
    nested_error: bool = False


def encrypted_for(text: str) -> str:
    """A stable stand-in for OpenAI's opaque encrypted reasoning."""
    return "gAAAAABfake" + hashlib.sha256(text.encode()).hexdigest()


def input_words(body: dict[str, Any]) -> int:
    """The fake's stand-in for input tokens: words of instructions and input text."""
    count = word_count(str(body.get("instructions") or ""))
    items = body.get("input")
    if isinstance(items, str):
        return count + word_count(items)
    for item in items or ():
        content = item.get("content") if isinstance(item, dict) else None
        if isinstance(content, str):
            count += word_count(content)
        for part in content if isinstance(content, list) else ():
            if isinstance(part, dict):
                count += word_count(str(part.get("text") or ""))
        if isinstance(item, dict) and isinstance(item.get("output"), str):
            count += word_count(item["output"])
    return count


class _Item:
    """One output item: its final form and the events that stream it."""

    def __init__(self, final: dict[str, Any], added: dict[str, Any]) -> None:
        self.final = final
        self.added = added


class Answer:
    """One successful answer to ``body``, as a ``response`` object or as stream events."""

    def __init__(self, behavior: Behavior, body: dict[str, Any], serial: int) -> None:
        self.behavior = behavior
        self.body = body
        self.id = f"resp_fake{serial:040x}"
        self.serial = serial
        self.model = str(body.get("model") or DEFAULT_MODEL)
        self.created_at = int(time.time())
        tool = behavior.tool_call
        default = DEFAULT_TEXT if tool is None else None
        self.text = default if behavior.text is None else behavior.text
        self.call_id = f"call_fake{serial}"
        include = body.get("include") or ()
        self.encrypted = ENCRYPTED_INCLUDE in include
        self.sequence = 0
        self.deltas = 0  # content deltas sent so far (for the faults that count them)

    # ---- the response object -----------------------------------------------------------

    def usage(self) -> dict[str, Any]:
        produced = word_count(self.text or "") + word_count(" ".join(self.behavior.reasoning))
        if self.behavior.tool_call is not None:
            produced += word_count(" ".join(self.behavior.tool_call))
        given, produced = self.behavior.usage or (input_words(self.body), produced)
        reasoning = min(produced, word_count(" ".join(self.behavior.reasoning)))
        return {
            "input_tokens": given,
            "input_tokens_details": {
                "cached_tokens": self.behavior.cached_tokens,
                "cache_write_tokens": 0,
            },
            "output_tokens": produced,
            "output_tokens_details": {"reasoning_tokens": reasoning},
            "total_tokens": given + produced,
        }

    def response(self, status: str, output: list[dict[str, Any]]) -> dict[str, Any]:
        """The ``response`` object with ``status``, echoing the request as OpenAI does."""
        body = self.body
        text = dict(body.get("text") or {})
        text.setdefault("format", {"type": "text"})
        reasoning = body.get("reasoning") or {}
        ended = status in ("completed", "incomplete", "failed")
        failed = status == "failed"
        return {
            "id": self.id,
            "object": "response",
            "created_at": self.created_at,
            "status": status,
            "background": False,
            "completed_at": self.created_at + 1 if status == "completed" else None,
            "error": (
                {"code": self.behavior.failure_code, "message": "The model failed. Sorry!"}
                if failed
                else None
            ),
            "incomplete_details": (
                {"reason": self.behavior.incomplete_reason} if status == "incomplete" else None
            ),
            "instructions": body.get("instructions"),
            "max_output_tokens": body.get("max_output_tokens"),
            "max_tool_calls": body.get("max_tool_calls"),
            "model": self.model,
            "output": output,
            "parallel_tool_calls": body.get("parallel_tool_calls", True),
            "previous_response_id": body.get("previous_response_id"),
            "prompt_cache_key": body.get("prompt_cache_key"),
            "reasoning": {"effort": reasoning.get("effort"), "summary": reasoning.get("summary")},
            "safety_identifier": body.get("safety_identifier"),
            "service_tier": "default",
            "store": body.get("store", True),
            "temperature": body.get("temperature", 1.0),
            "text": text,
            "tool_choice": body.get("tool_choice", "auto"),
            "tools": list(body.get("tools") or ()),
            "top_logprobs": 0,
            "top_p": body.get("top_p", 1.0),
            "truncation": body.get("truncation", "disabled"),
            "usage": self.usage() if ended and not failed else None,
            "user": body.get("user"),
            "metadata": body.get("metadata") or {},
        }

    def items(self) -> list[_Item]:
        behavior = self.behavior
        items: list[_Item] = []
        if behavior.reasoning:
            items.append(self._reasoning())
        if behavior.web_search is not None:
            items.append(self._web_search(behavior.web_search))
        if self.text is not None:
            items.append(self._message(self.text))
        if behavior.tool_call is not None:
            items.append(self._function_call(*behavior.tool_call))
        return items

    def whole(self) -> dict[str, Any]:
        """The non-streamed body."""
        if self.behavior.ending == "failed":
            return self.response("failed", [])
        return self.response(self.behavior.ending, [item.final for item in self.items()])

    def _item_id(self, prefix: str, index: int) -> str:
        return f"{prefix}_fake{self.serial:032x}{index}"

    def _reasoning(self) -> _Item:
        item_id = self._item_id("rs", 0)
        summary = [{"type": "summary_text", "text": part} for part in self.behavior.reasoning]
        final: dict[str, Any] = {"id": item_id, "type": "reasoning", "summary": summary}
        if self.encrypted:
            final["encrypted_content"] = encrypted_for(" ".join(self.behavior.reasoning))
        return _Item(final, {"id": item_id, "type": "reasoning", "summary": []})

    def _web_search(self, query: str) -> _Item:
        item_id = self._item_id("ws", 1)
        action = {"type": "search", "query": query}
        final = {"id": item_id, "type": "web_search_call", "status": "completed", "action": action}
        return _Item(final, {**final, "status": "in_progress"})

    def _message(self, text: str) -> _Item:
        item_id = self._item_id("msg", 2)
        part = (
            {"type": "refusal", "refusal": text}
            if self.behavior.refusal
            else {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
        )
        final = {
            "id": item_id,
            "type": "message",
            "status": "completed",
            "role": "assistant",
            "content": [part],
        }
        return _Item(final, {**final, "status": "in_progress", "content": []})

    def _function_call(self, name: str, arguments: str) -> _Item:
        item_id = self._item_id("fc", 3)
        final = {
            "id": item_id,
            "type": "function_call",
            "status": "completed",
            "arguments": arguments,
            "call_id": self.call_id,
            "name": name,
        }
        return _Item(final, {**final, "status": "in_progress", "arguments": ""})

    # ---- the stream --------------------------------------------------------------------

    def event(self, kind: str, **fields: Any) -> Event:
        """One event with the next sequence number."""
        event = {"type": kind, "sequence_number": self.sequence, **fields}
        self.sequence += 1
        return event

    def events(self) -> Iterator[Event]:
        """Every event of the stream, in order (the faults are the server's to apply)."""
        yield self.event("response.created", response=self.response("in_progress", []))
        yield self.event("response.in_progress", response=self.response("in_progress", []))
        if self.behavior.ending == "failed":
            yield self.event("response.failed", response=self.response("failed", []))
            return
        done: list[dict[str, Any]] = []
        for index, item in enumerate(self.items()):
            yield self.event("response.output_item.added", output_index=index, item=item.added)
            yield from self._item_events(index, item.final)
            yield self.event("response.output_item.done", output_index=index, item=item.final)
            done.append(item.final)
        ending = self.behavior.ending
        yield self.event(f"response.{ending}", response=self.response(ending, done))

    def _pieces(self, text: str) -> list[str]:
        return split_text(text, self.behavior.chunks)

    def _item_events(self, index: int, item: dict[str, Any]) -> Iterator[Event]:
        at = {"item_id": item["id"], "output_index": index}
        kind = item["type"]
        if kind == "reasoning":
            for number, part in enumerate(item["summary"]):
                empty = {"type": "summary_text", "text": ""}
                yield self.event(
                    "response.reasoning_summary_part.added", **at, summary_index=number, part=empty
                )
                for piece in self._pieces(part["text"]):
                    yield self.event(
                        "response.reasoning_summary_text.delta",
                        **at,
                        summary_index=number,
                        delta=piece,
                    )
                yield self.event(
                    "response.reasoning_summary_text.done",
                    **at,
                    summary_index=number,
                    text=part["text"],
                )
                yield self.event(
                    "response.reasoning_summary_part.done", **at, summary_index=number, part=part
                )
        elif kind == "web_search_call":
            for phase in ("in_progress", "searching", "completed"):
                yield self.event(f"response.web_search_call.{phase}", **at)
        elif kind == "message":
            yield from self._message_events(at, item["content"][0])
        elif kind == "function_call":
            for piece in self._pieces(item["arguments"]):
                yield self.event("response.function_call_arguments.delta", **at, delta=piece)
            yield self.event(
                "response.function_call_arguments.done", **at, arguments=item["arguments"]
            )

    def _message_events(self, at: dict[str, Any], part: dict[str, Any]) -> Iterator[Event]:
        at = {**at, "content_index": 0}
        if part["type"] == "refusal":
            empty: dict[str, Any] = {"type": "refusal", "refusal": ""}
            yield self.event("response.content_part.added", **at, part=empty)
            for piece in self._pieces(part["refusal"]):
                yield self.event("response.refusal.delta", **at, delta=piece)
            yield self.event("response.refusal.done", **at, refusal=part["refusal"])
        else:
            empty = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
            yield self.event("response.content_part.added", **at, part=empty)
            for piece in self._pieces(part["text"]):
                yield self.event("response.output_text.delta", **at, delta=piece, logprobs=[])
            yield self.event("response.output_text.done", **at, text=part["text"], logprobs=[])
        yield self.event("response.content_part.done", **at, part=part)

    def error_event(self, sequence_number: int) -> Event:
        """The ``error`` event the behavior sends mid-stream, in the place (and with the
        number) of the event it replaces."""
        code = self.behavior.error_code
        message = "An error occurred while processing your request."
        at = {"type": "error", "sequence_number": sequence_number}
        if self.behavior.nested_error:
            return {**at, "error": {"type": code, "code": code, "message": message, "param": None}}
        return {**at, "code": code, "message": message, "param": None}


DELTA_EVENTS = frozenset(
    {
        "response.output_text.delta",
        "response.refusal.delta",
        "response.function_call_arguments.delta",
        "response.reasoning_summary_text.delta",
    }
)
