"""Anthropic messages clients (``POST /v1/messages``): the fields the table lists."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from conformance import concepts as c
from conformance import conversation as talk
from conformance import markers as m
from conformance.case import Case, Client
from gw.codecs.anthropic_messages.client_request import decode_messages_request
from gw.ir import ChatRequest

HI: dict[str, Any] = {"role": "user", "content": "hi"}
TOOL = {"name": m.TOOL, "description": "Weather", "input_schema": m.PARAMETERS}
WEB_SEARCH = {"type": "web_search_20250305", "name": "web_search", "max_uses": 3}
CALLED = {
    "role": "assistant",
    "content": [{"type": "tool_use", "id": m.CALL_ID, "name": m.TOOL, "input": {"city": "Paris"}}],
}
PNG = {"type": "base64", "media_type": "image/png", "data": m.IMAGE_DATA}
ADAPTIVE = {"type": "adaptive"}


def _decode(body: bytes, headers: Mapping[str, str], stream: bool) -> ChatRequest:
    beta = headers.get("anthropic-beta")
    return decode_messages_request(body, () if beta is None else (beta,))


def _say(*blocks: dict[str, Any]) -> dict[str, Any]:
    """A body whose only message is a user turn of ``blocks``."""
    return {"messages": [{"role": "user", "content": list(blocks)}]}


def _answered(*content: dict[str, Any], **result: Any) -> dict[str, Any]:
    """A tool call, then its result (``content`` blocks, or text) with ``result``'s keys."""
    block = {"type": "tool_result", "tool_use_id": m.CALL_ID, **result}
    block["content"] = list(content) if content else m.RESULT_TEXT
    return {"tools": [TOOL], "messages": [HI, CALLED, {"role": "user", "content": [block]}]}


def _earlier(*blocks: dict[str, Any]) -> dict[str, Any]:
    """A conversation whose assistant turn held ``blocks`` before its answer."""
    turn = {"role": "assistant", "content": [*blocks, {"type": "text", "text": "ok"}]}
    return {"messages": [HI, turn, {"role": "user", "content": "and now?"}]}


def _tools(**body: Any) -> dict[str, Any]:
    return {"tools": [TOOL], **body}


SERVER_TOOL_USE = {
    "type": "server_tool_use",
    "id": "srvtoolu_7f3",
    "name": "web_search",
    "input": {"query": "weather"},
}
SEARCH_RESULT = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_7f3", "content": []}

CASES = (
    Case("`system` (string)", {"system": m.SYSTEM_TEXT}, talk.SYSTEM),
    Case(
        "`system[].cache_control`",
        {
            "system": [
                {"type": "text", "text": m.SYSTEM_TEXT, "cache_control": {"type": "ephemeral"}}
            ]
        },
        c.CACHE_MARK,
    ),
    Case(
        "`content[]: text`",
        _say({"type": "text", "text": m.USER_TEXT}),
        talk.said(m.USER_TEXT, role="user"),
    ),
    Case(
        "`content[]: text` (assistant turn)",
        {"messages": [HI, {"role": "assistant", "content": m.ASSISTANT_TEXT}, HI]},
        talk.said(m.ASSISTANT_TEXT, role="assistant"),
    ),
    Case(
        "`content[].cache_control`",
        _say(
            {
                "type": "text",
                "text": "long prompt",
                "cache_control": {"type": "ephemeral", "ttl": "1h"},
            }
        ),
        c.CACHE_MARK,
    ),
    Case("`content[]: image` (base64)", _say({"type": "image", "source": PNG}), talk.IMAGE_INLINE),
    Case(
        "`content[]: image` (url)",
        _say({"type": "image", "source": {"type": "url", "url": m.IMAGE_URL}}),
        talk.IMAGE_BY_URL,
    ),
    Case(
        "`content[]: document` (base64 PDF)",
        _say(
            {
                "type": "document",
                "source": {"type": "base64", "media_type": "application/pdf", "data": m.PDF_DATA},
            }
        ),
        talk.FILE_INLINE,
    ),
    Case(
        "`content[]: document` (url)",
        _say({"type": "document", "source": {"type": "url", "url": m.PDF_URL}}),
        talk.FILE_BY_URL,
    ),
    Case("`content[]: tool_use`", _answered(), talk.TOOL_CALL),
    Case("`content[]: tool_result`", _answered(), talk.TOOL_RESULT),
    Case("`tool_result.is_error`", _answered(is_error=True), talk.TOOL_RESULT_ERROR),
    Case(
        "`tool_result` with an image",
        _answered({"type": "image", "source": PNG}),
        talk.TOOL_RESULT_IMAGE,
    ),
    Case(
        "`content[]: thinking` (signed, earlier turn)",
        _earlier({"type": "thinking", "thinking": "hmm", "signature": m.SIGNATURE}),
        talk.THINKING_SIGNED,
    ),
    Case(
        "`content[]: redacted_thinking`",
        _earlier({"type": "redacted_thinking", "data": m.REDACTED}),
        talk.THINKING_REDACTED,
    ),
    Case(
        "`content[]: server_tool_use`, `web_search_tool_result`",
        _earlier(SERVER_TOOL_USE, SEARCH_RESULT),
        talk.native_block("anthropic", "server_tool_use"),
    ),
    Case(
        "`thinking: enabled` (budget_tokens)",
        {"max_tokens": 4096, "thinking": {"type": "enabled", "budget_tokens": 2048}},
        c.REASONING,
    ),
    Case("`thinking: adaptive`", {"thinking": ADAPTIVE}, c.REASONING),
    Case("`thinking: disabled`", {"thinking": {"type": "disabled"}}, c.REASONING_OFF),
    Case(
        "`thinking.display`",
        {"thinking": {**ADAPTIVE, "display": "omitted"}},
        c.passthrough("anthropic", "thinking.display"),
    ),
    Case(
        "`output_config.effort`",
        {"thinking": ADAPTIVE, "output_config": {"effort": "high"}},
        c.EFFORT_HIGH,
    ),
    Case(
        "`output_config.format`",
        {"output_config": {"format": {"type": "json_schema", "schema": m.SCHEMA}}},
        c.JSON_SCHEMA,
    ),
    Case("`tools[]` (custom)", _tools(), c.FUNCTION_TOOL),
    Case("`tools[].strict`", {"tools": [{**TOOL, "strict": True}]}, c.TOOL_STRICT),
    Case("`tools[].defer_loading`", {"tools": [{**TOOL, "defer_loading": True}]}, c.DEFER_LOADING),
    Case(
        "`tools[].cache_control`",
        {"tools": [{**TOOL, "cache_control": {"type": "ephemeral"}}]},
        c.TOOL_CACHE_MARK,
    ),
    Case(
        "`tools[]: web_search_20250305` (alone)",
        {"tools": [WEB_SEARCH]},
        c.native_tool("anthropic", "web_search_20250305"),
    ),
    Case(
        "`tools[]: web_search_20250305` (beside a custom tool)",
        {"tools": [TOOL, WEB_SEARCH]},
        c.native_tool("anthropic", "web_search_20250305"),
    ),
    Case("`tool_choice: auto`", _tools(tool_choice={"type": "auto"}), c.CHOICE_AUTO),
    Case("`tool_choice: any`", _tools(tool_choice={"type": "any"}), c.CHOICE_REQUIRED),
    Case(
        "`tool_choice: tool`", _tools(tool_choice={"type": "tool", "name": m.TOOL}), c.CHOICE_NAMED
    ),
    Case("`tool_choice: none`", _tools(tool_choice={"type": "none"}), c.CHOICE_NONE),
    Case(
        "`tool_choice.disable_parallel_tool_use`",
        _tools(tool_choice={"type": "auto", "disable_parallel_tool_use": True}),
        c.NO_PARALLEL_CALLS,
    ),
    Case("`stop_sequences`", {"stop_sequences": [m.STOP]}, c.STOP_SEQUENCES),
    Case("`temperature`", {"temperature": 0.37}, c.TEMPERATURE),
    Case("`top_p`", {"top_p": 0.73}, c.TOP_P),
    Case("`top_k`", {"top_k": 7}, c.TOP_K),
    Case("`max_tokens`", {"max_tokens": c.MAX_TOKENS_VALUE}, c.MAX_TOKENS),
    Case("`metadata.user_id`", {"metadata": {"user_id": m.USER_ID}}, c.USER),
    Case(
        "`cache_control` (top level)",
        {"cache_control": {"type": "ephemeral"}},
        c.passthrough("anthropic", "cache_control"),
    ),
    Case(
        "`service_tier`",
        {"service_tier": "standard_only"},
        c.passthrough("anthropic", "service_tier"),
    ),
    Case(
        "`context_management`",
        {"context_management": {"edits": [{"type": "clear_tool_uses_20250919"}]}},
        c.passthrough("anthropic", "context_management"),
    ),
    Case(
        "`anthropic-beta` (header)",
        {},
        c.beta("context-1m-2025-08-07"),
        headers={"anthropic-beta": "context-1m-2025-08-07"},
    ),
    Case("`stream: true`", {"stream": True}, c.STREAM),
)

CLIENT = Client(
    format="anthropic",
    title="Anthropic messages clients (`POST /v1/messages`)",
    base={"model": "m", "max_tokens": 1024, "messages": [HI]},
    decode=_decode,
    cases=CASES,
)
