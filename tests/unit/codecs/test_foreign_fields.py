"""A client format's own fields, left out by an upstream of another format, are noted."""

from __future__ import annotations

from gw.codecs.foreign_fields import foreign_field_notes
from gw.codecs.openai_chat.upstream_request import lossy_notes
from gw.ir import (
    AssistantMessage,
    ChatRequest,
    NativeBlock,
    TextPart,
    ToolDefinition,
    ToolMessage,
    UserMessage,
)

HI = UserMessage(content=(TextPart(text="hi"),))


def request(**fields: object) -> ChatRequest:
    return ChatRequest(model="m", messages=(HI,), **fields)  # type: ignore[arg-type]


def test_another_formats_fields_are_named_as_not_sent() -> None:
    asked = request(extensions={"openai": {"logit_bias": {"1": 5}, "modalities": ["text"]}})
    assert foreign_field_notes(asked, "anthropic") == [
        "logit_bias, modalities: not sent (openai fields; this upstream is anthropic)"
    ]
    assert foreign_field_notes(asked, "openai") == []  # its own: sent


def test_an_openai_upstream_notes_a_tool_errors_flag_and_anthropic_fields() -> None:
    failed = ToolMessage(tool_call_id="t1", content=(TextPart(text="boom"),), is_error=True)
    asked = ChatRequest(
        model="m", messages=(HI, failed), extensions={"anthropic": {"output_config": {}}}
    )
    assert lossy_notes(asked) == [
        "tool results' is_error: not sent (the OpenAI format has no such flag)",
        "output_config: not sent (anthropic fields; this upstream is openai)",
    ]


def test_anthropic_betas_are_noted_for_other_upstreams_only() -> None:
    asked = request(betas=("context-1m-2025-08-07", "interleaved-thinking-2025-05-14"))
    assert foreign_field_notes(asked, "gemini") == [
        "anthropic-beta context-1m-2025-08-07, interleaved-thinking-2025-05-14: not sent "
        "(Anthropic beta features; this upstream is gemini)"
    ]
    assert foreign_field_notes(asked, "anthropic") == []


def test_another_formats_blocks_and_tools_are_named_as_not_sent() -> None:
    reasoning = NativeBlock(format="openai_responses", data={"type": "reasoning", "id": "rs"})
    prompt_like = NativeBlock(format="openai_responses", data={"type": "a prompt's words"})
    turn = AssistantMessage(content=(reasoning, prompt_like, TextPart(text="ok")))
    search = NativeBlock(format="openai_responses", data={"type": "web_search"})
    asked = ChatRequest(model="m", messages=(HI, turn, HI), native_tools=(search,))
    assert foreign_field_notes(asked, "anthropic") == [
        "messages[1]: a block (openai_responses), reasoning not sent (another format's blocks; "
        "this upstream is anthropic)",
        "tools web_search: not sent (they run on another provider's side; this upstream is "
        "anthropic)",
    ]
    assert foreign_field_notes(asked, "openai_responses") == []


def test_deferred_tools_are_offered_up_front_by_other_formats() -> None:
    deferred = ToolDefinition(name="mcp__docs__search", defer_loading=True)
    asked = request(tools=(deferred, ToolDefinition(name="f")))
    assert foreign_field_notes(asked, "openai") == [
        "1 tools with defer_loading: offered up front (tool search is Anthropic's; this "
        "upstream is openai)"
    ]
    assert foreign_field_notes(asked, "anthropic") == []


def test_a_key_that_is_no_field_name_is_counted_not_quoted() -> None:
    asked = request(extensions={"openai": {"logit_bias": {}, "my secret plan is X": 1, "a b": 2}})
    assert foreign_field_notes(asked, "anthropic") == [
        "logit_bias, 2 other keys: not sent (openai fields; this upstream is anthropic)"
    ]
