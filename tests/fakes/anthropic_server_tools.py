"""What the fake Anthropic upstream knows of server tools, thinking and structured outputs.

- ``web_search_content``: the blocks of a web search answer as Anthropic's API sends them
  (``server_tool_use``, ``web_search_tool_result`` with ``web_search_result`` items and
  their ``encrypted_content``, then ``text`` blocks, the cited ones with
  ``web_search_result_location`` citations), for ``Behavior(content=...)``.
- ``stream_pieces``: how one content block streams: the ``content_block_start`` body and
  its deltas. Text starts empty and gets ``citations_delta`` then ``text_delta`` s; a
  ``tool_use``, ``server_tool_use`` or ``mcp_tool_use`` starts with ``input: {}`` and gets
  ``input_json_delta`` fragments; a thinking block gets ``thinking_delta`` s and its
  ``signature_delta``; every other block (tool results, ``redacted_thinking``) arrives
  whole in its start.
- ``request_problem``: Anthropic's 400 for a malformed ``thinking`` (its four types,
  ``budget_tokens`` >= 1024 and below ``max_tokens``, ``display``) or ``output_config``
  (``effort``, ``format`` with a JSON schema), and for a server tool without its name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

SEARCH_ID = "srvtoolu_01WYG3ziw53XMcoyKL4XcZmE"
THINKING_TYPES = ("enabled", "adaptive", "disabled", "between_tools")
EFFORTS = ("low", "medium", "high", "xhigh", "max")
CALLS = ("tool_use", "server_tool_use", "mcp_tool_use")
# Server tool type prefix -> the name Anthropic requires for it.
SERVER_TOOL_NAMES = {
    "web_search_": "web_search",
    "web_fetch_": "web_fetch",
    "code_execution_": "code_execution",
}


def web_search_content(
    query: str, results: list[tuple[str, str]], answer: list[tuple[str, int | None]]
) -> tuple[dict[str, Any], ...]:
    """A web search turn: ``results`` are (url, title); each ``answer`` piece is (text,
    index of the result it cites, or None)."""
    found = [
        {
            "type": "web_search_result",
            "url": url,
            "title": title,
            "encrypted_content": f"EqgfCioIARgBIiQ{index}3YTAwMjY1Mi1mZjgzLTRm",
            "page_age": "April 30, 2025",
        }
        for index, (url, title) in enumerate(results)
    ]
    blocks: list[dict[str, Any]] = [
        {"type": "text", "text": "I'll search for that."},
        {
            "type": "server_tool_use",
            "id": SEARCH_ID,
            "name": "web_search",
            "input": {"query": query},
        },
        {"type": "web_search_tool_result", "tool_use_id": SEARCH_ID, "content": found},
    ]
    for text, cited in answer:
        block: dict[str, Any] = {"type": "text", "text": text}
        if cited is not None:
            url, title = results[cited]
            block["citations"] = [
                {
                    "type": "web_search_result_location",
                    "url": url,
                    "title": title,
                    "encrypted_index": f"EoMBCkYIARgCKkC{cited}",
                    "cited_text": text[:150],
                }
            ]
        blocks.append(block)
    return tuple(blocks)


def stream_pieces(
    block: dict[str, Any], split: Callable[[str, bool], list[str]]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(the ``content_block`` of ``content_block_start``, the deltas) for ``block``;
    ``split(text, is_tool_input)`` cuts text into delta pieces."""
    kind = block["type"]
    if kind == "text":
        citations = [
            {"type": "citations_delta", "citation": citation}
            for citation in block.get("citations") or ()
        ]
        texts = [{"type": "text_delta", "text": piece} for piece in split(block["text"], False)]
        return {"type": "text", "text": ""}, citations + texts
    if kind == "thinking":
        pieces: list[dict[str, Any]] = [
            {"type": "thinking_delta", "thinking": piece}
            for piece in split(block["thinking"], False)
        ]
        pieces.append({"type": "signature_delta", "signature": block["signature"]})
        return {"type": "thinking", "thinking": "", "signature": ""}, pieces
    if kind in CALLS:
        tool_json = msgspec.json.encode(block["input"]).decode()
        fragments = [{"type": "input_json_delta", "partial_json": ""}] + [
            {"type": "input_json_delta", "partial_json": piece} for piece in split(tool_json, True)
        ]
        return {**block, "input": {}}, fragments
    return block, []


def server_tool_uses(blocks: list[dict[str, Any]]) -> dict[str, int] | None:
    """``usage.server_tool_use`` for an answer's blocks; None when it used none."""
    names = [b.get("name") for b in blocks if b.get("type") == "server_tool_use"]
    if not names:
        return None
    return {
        "web_search_requests": names.count("web_search"),
        "web_fetch_requests": names.count("web_fetch"),
    }


def request_problem(body: dict[str, Any]) -> str | None:
    """Anthropic's 400 message for what this module checks; None when it is fine."""
    return _thinking(body) or _output_config(body.get("output_config")) or _tools(body)


def _thinking(body: dict[str, Any]) -> str | None:
    thinking = body.get("thinking")
    if thinking is None:
        return None
    if not isinstance(thinking, dict) or thinking.get("type") not in THINKING_TYPES:
        return "thinking.type: Input should be 'enabled', 'adaptive', 'disabled' or 'between_tools'"
    allowed = {"type", "display"} | ({"budget_tokens"} if thinking["type"] == "enabled" else set())
    if set(thinking) - allowed:
        return "thinking: Extra inputs are not permitted"
    if thinking.get("display", "summarized") not in ("summarized", "omitted"):
        return "thinking.display: Input should be 'summarized' or 'omitted'"
    return _budget(thinking, body) if thinking["type"] == "enabled" else None


def _budget(thinking: dict[str, Any], body: dict[str, Any]) -> str | None:
    budget = thinking.get("budget_tokens")
    if not isinstance(budget, int) or budget < 1024:
        return "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
    if budget >= body.get("max_tokens", 0):
        return "`max_tokens` must be greater than `thinking.budget_tokens`"
    return None


def _output_config(config: Any) -> str | None:
    if config is None:
        return None
    if not isinstance(config, dict) or set(config) - {"effort", "format"}:
        return "output_config: Extra inputs are not permitted"
    if config.get("effort") is not None and config["effort"] not in EFFORTS:
        return "output_config.effort: Input should be 'low', 'medium', 'high', 'xhigh' or 'max'"
    fmt = config.get("format")
    if fmt is not None and (
        not isinstance(fmt, dict)
        or fmt.get("type") != "json_schema"
        or not isinstance(fmt.get("schema"), dict)
        or set(fmt) - {"type", "schema"}
    ):
        return "output_config.format: Input should be {'type': 'json_schema', 'schema': {...}}"
    return None


def _tools(body: dict[str, Any]) -> str | None:
    for index, tool in enumerate(body.get("tools") or ()):
        kind = tool.get("type") if isinstance(tool, dict) else None
        if kind in (None, "custom"):
            if not isinstance(tool, dict) or "input_schema" not in tool:
                return f"tools.{index}.custom.input_schema: Field required"
            continue
        for prefix, name in SERVER_TOOL_NAMES.items():
            if str(kind).startswith(prefix) and tool.get("name") != name:
                return f"tools.{index}.{kind}.name: Input should be '{name}'"
    return None
