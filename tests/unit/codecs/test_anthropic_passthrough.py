"""An Anthropic client's request through the IR to an Anthropic upstream loses nothing:
what Claude Code sends (adaptive thinking, its display, effort, structured outputs, server
tools, the blocks of earlier turns) reaches Anthropic as it was sent."""

from __future__ import annotations

import json
from typing import Any

from gw.codecs.anthropic_messages.client_request import decode_messages_request
from gw.codecs.anthropic_messages.upstream_request import encode_upstream_request

SCHEMA: Any = {"type": "object", "properties": {"city": {"type": "string"}}}
SEARCH: Any = {"type": "web_search_20250305", "name": "web_search", "max_uses": 5}
EDIT: Any = {
    "name": "edit",
    "description": "Edit a file",
    "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
}


def through(client_body: dict[str, Any]) -> dict[str, Any]:
    """The body an Anthropic upstream gets for ``client_body``."""
    request = decode_messages_request(json.dumps(client_body).encode())
    sent = encode_upstream_request(
        request, model=client_body["model"], stream=False, default_max_tokens=4096
    )
    result: dict[str, Any] = json.loads(sent)
    return result


def ask(**fields: Any) -> dict[str, Any]:
    return {
        "model": "claude-opus-4-6",
        "max_tokens": 32000,
        "messages": [{"role": "user", "content": "hi"}],
        **fields,
    }


def test_claude_code_s_first_request_reaches_anthropic_as_sent() -> None:
    body = ask(
        thinking={"type": "adaptive", "display": "omitted"},
        output_config={"effort": "high", "format": {"type": "json_schema", "schema": SCHEMA}},
        tools=[EDIT, SEARCH],
        context_management={"edits": [{"type": "clear_thinking_20251015"}]},
    )
    sent = through(body)
    for key in ("thinking", "output_config", "tools", "context_management", "max_tokens"):
        assert sent[key] == body[key], key


def test_disabled_and_between_tools_thinking_reach_anthropic_as_sent() -> None:
    for thinking in ({"type": "disabled"}, {"type": "between_tools"}):
        assert through(ask(thinking=thinking))["thinking"] == thinking


def test_earlier_turns_blocks_go_back_byte_for_byte() -> None:
    """Signed and redacted thinking, a web search and its cited answer: Anthropic checks
    the signatures and needs the encrypted parts back unchanged."""
    turn = [
        {"type": "thinking", "thinking": "Search it.", "signature": "EqQBCkYIARgCKkB="},
        {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFvrCAp="},
        {"type": "text", "text": "Searching."},
        {
            "type": "server_tool_use",
            "id": "srvtoolu_01",
            "name": "web_search",
            "input": {"query": "capital of France"},
        },
        {
            "type": "web_search_tool_result",
            "tool_use_id": "srvtoolu_01",
            "content": [
                {
                    "type": "web_search_result",
                    "url": "https://example.com/paris",
                    "title": "Paris",
                    "encrypted_content": "EqgfCioIARgBIiQ3YTAwMjY1Mi1=",
                    "page_age": None,
                }
            ],
        },
        {
            "type": "text",
            "text": "Paris.",
            "citations": [
                {
                    "type": "web_search_result_location",
                    "url": "https://example.com/paris",
                    "title": "Paris",
                    "encrypted_index": "EoMBCkYIARgCKkC=",
                    "cited_text": "Paris is the capital of France.",
                }
            ],
        },
        {"type": "tool_use", "id": "toolu_01", "name": "edit", "input": {"path": "a.md"}},
    ]
    results = [{"type": "tool_result", "tool_use_id": "toolu_01", "content": "done"}]
    messages = [
        {"role": "user", "content": "Capital of France? Write it to a.md."},
        {"role": "assistant", "content": turn},
        {"role": "user", "content": results},
    ]
    sent = through(ask(messages=messages, tools=[EDIT, SEARCH]))
    assert sent["messages"] == messages
    assert json.dumps(sent["messages"][1]["content"]) == json.dumps(turn)
