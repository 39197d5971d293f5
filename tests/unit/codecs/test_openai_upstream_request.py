"""encode_upstream_request: the IR back to an OpenAI body, and client -> IR -> upstream round trips."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gw.codecs.openai_chat import decode_chat_request, encode_upstream_request
from gw.codecs.openai_chat.upstream_request import lossy_notes
from gw.errors import InvalidRequestError, NativeFeatureUnsupportedError
from gw.ir import (
    AssistantMessage,
    CacheMark,
    ChatRequest,
    ImagePart,
    NativeBlock,
    Reasoning,
    ResponseFormat,
    Sampling,
    SystemMessage,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolChoice,
    ToolDefinition,
    ToolMessage,
    UserMessage,
)

HI = (UserMessage(content=(TextPart(text="hi"),)),)


def encoded(request: ChatRequest, **kwargs: Any) -> dict[str, Any]:
    kwargs.setdefault("model", "gpt-4o-mini")
    kwargs.setdefault("stream", False)
    result: dict[str, Any] = json.loads(encode_upstream_request(request, **kwargs))
    return result


def test_minimal_body_invents_nothing() -> None:
    assert encoded(ChatRequest(model="route", messages=HI)) == {
        "model": "gpt-4o-mini",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": False,
    }


def test_streaming_always_asks_for_usage() -> None:
    body = encoded(ChatRequest(model="r", messages=HI, include_usage=False), stream=True)
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}


def test_max_tokens_field_is_chosen_by_the_caller() -> None:
    request = ChatRequest(model="r", messages=HI, max_tokens=50)
    assert encoded(request)["max_tokens"] == 50
    body = encoded(request, max_tokens_field="max_completion_tokens")
    assert body["max_completion_tokens"] == 50
    assert "max_tokens" not in body


def test_full_mapping() -> None:
    request = ChatRequest(
        model="r",
        messages=(
            SystemMessage(content=(TextPart(text="a"), TextPart(text="b")), name="s"),
            UserMessage(
                content=(
                    TextPart(text="look"),
                    ImagePart(url="https://x.test/i.png", detail="high"),
                    ImagePart(data="iVBORw0KGgo=", media_type=None),
                )
            ),
            AssistantMessage(tool_calls=(ToolCall(id="c1", name="f", arguments="{}"),)),
            ToolMessage(tool_call_id="c1", content=(TextPart(text="42"),)),
            AssistantMessage(content=(TextPart(text="done"),)),
        ),
        tools=(ToolDefinition(name="f", parameters={"type": "object"}, strict=True),),
        tool_choice=ToolChoice(mode="tool", name="f"),
        parallel_tool_calls=True,
        response_format=ResponseFormat(
            type="json_schema", name="out", json_schema={"type": "object"}, strict=True
        ),
        sampling=Sampling(temperature=0.5, top_p=0.9, top_k=40, seed=7, presence_penalty=0.1),
        stop=("x", "y"),
        user="u",
    )
    body = encoded(request)
    assert body["messages"] == [
        {
            "role": "system",
            "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
            "name": "s",
        },
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "look"},
                {
                    "type": "image_url",
                    "image_url": {"url": "https://x.test/i.png", "detail": "high"},
                },
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
            ],
        },
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "42"},
        {"role": "assistant", "content": "done"},
    ]
    assert body["tools"] == [
        {
            "type": "function",
            "function": {"name": "f", "parameters": {"type": "object"}, "strict": True},
        }
    ]
    assert body["tool_choice"] == {"type": "function", "function": {"name": "f"}}
    assert body["parallel_tool_calls"] is True
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "out", "schema": {"type": "object"}, "strict": True},
    }
    assert (body["temperature"], body["top_p"], body["seed"], body["presence_penalty"]) == (
        0.5,
        0.9,
        7,
        0.1,
    )
    assert "top_k" not in body
    assert body["stop"] == ["x", "y"]
    assert body["user"] == "u"


def test_extensions_merge_but_never_override_protected_keys() -> None:
    request = ChatRequest(
        model="r",
        messages=HI,
        max_tokens=10,
        extensions={
            "openai": {
                "logprobs": True,
                "model": "evil",
                "messages": [],
                "stream": True,
                "max_tokens": 99999,
                "max_completion_tokens": 99999,
                "stream_options": {"include_usage": False, "include_obfuscation": False},
            },
            "anthropic": {"thinking": {}},
        },
    )
    body = encoded(request, stream=True)
    assert body["model"] == "gpt-4o-mini"
    assert body["messages"] == [{"role": "user", "content": "hi"}]
    assert body["stream"] is True
    assert body["max_tokens"] == 10
    assert "max_completion_tokens" not in body
    assert body["logprobs"] is True
    assert body["stream_options"] == {"include_obfuscation": False, "include_usage": True}
    assert "thinking" not in body
    assert "stream_options" not in encoded(request, stream=False)


CLIENT_BODIES: list[dict[str, Any]] = [
    {"model": "m", "messages": [{"role": "user", "content": "hi"}]},
    {
        "model": "m",
        "messages": [
            {"role": "system", "content": "be nice", "name": "x"},
            {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "image_url", "image_url": {"url": "data:image/webp;base64,UklGR", "detail": "auto"}}]},
            {"role": "assistant", "content": "sure", "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{\"a\": 1}"}}]},
            {"role": "tool", "tool_call_id": "c", "content": "ok"},
        ],
        "tools": [{"type": "function", "function": {"name": "f", "description": "d", "parameters": {"type": "object"}}}],
        "tool_choice": "auto",
        "response_format": {"type": "json_schema", "json_schema": {"name": "n", "description": "d", "schema": {"type": "object"}, "strict": False}},
        "temperature": 1,
        "frequency_penalty": 0.5,
        "stop": ["a", "b"],
        "max_tokens": 77,
        "user": "u",
        "logit_bias": {"50256": -100},
        "reasoning_effort": "low",
    },
]  # fmt: skip


@pytest.mark.parametrize("client_body", CLIENT_BODIES)
def test_client_ir_upstream_round_trip(client_body: dict[str, Any]) -> None:
    first = decode_chat_request(json.dumps(client_body).encode())
    upstream = encode_upstream_request(first, model="m", stream=False)
    again = decode_chat_request(upstream)
    assert again == first


@pytest.mark.parametrize(
    ("reasoning", "effort"),
    [
        (Reasoning(effort="minimal"), "minimal"),
        (Reasoning(budget_tokens=1024), "low"),
        (Reasoning(budget_tokens=2048), "low"),
        (Reasoning(budget_tokens=8000), "medium"),
        (Reasoning(budget_tokens=32000), "high"),
        (Reasoning(budget_tokens=0), None),  # thinking off: only reasoning models take none
        (Reasoning(adaptive=True), "medium"),
        (Reasoning(summary="auto"), None),  # a summary alone asks for no effort
    ],
)
def test_reasoning_is_sent_as_reasoning_effort(reasoning: Reasoning, effort: str | None) -> None:
    request = ChatRequest(
        model="m", messages=(UserMessage(content=(TextPart(text="hi"),)),), reasoning=reasoning
    )
    body = json.loads(encode_upstream_request(request, model="m", stream=False))
    assert body.get("reasoning_effort") == effort
    summary_note = "reasoning.summary: not sent (Chat Completions returns no reasoning)"
    assert (summary_note in lossy_notes(request)) is (reasoning.summary is not None)


def test_reasoning_effort_from_a_client_becomes_ir_reasoning() -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    request = decode_chat_request(json.dumps({**body, "reasoning_effort": "high"}).encode())
    assert request.reasoning == Reasoning(effort="high")
    assert "openai" not in request.extensions
    with pytest.raises(InvalidRequestError) as caught:
        decode_chat_request(json.dumps({**body, "reasoning_effort": "max"}).encode())
    assert caught.value.param == "reasoning_effort"


def test_earlier_reasoning_is_left_out_and_image_tool_results_are_refused() -> None:
    thought = AssistantMessage(
        content=(ThinkingPart(text="hmm", signature="s"), TextPart(text="a"))
    )
    user = UserMessage(content=(TextPart(text="hi"),))
    request = ChatRequest(model="m", messages=(user, thought))
    body = json.loads(encode_upstream_request(request, model="m", stream=False))
    assert body["messages"][1] == {"role": "assistant", "content": "a"}

    image_result = ToolMessage(tool_call_id="c", content=(ImagePart(url="https://x/y.png"),))
    with pytest.raises(NativeFeatureUnsupportedError):
        encode_upstream_request(
            ChatRequest(model="m", messages=(user, image_result)), model="m", stream=False
        )


def test_lossy_notes_name_what_the_format_cannot_carry() -> None:
    plain = ChatRequest(model="m", messages=HI)
    assert lossy_notes(plain) == []
    thought = AssistantMessage(content=(ThinkingPart(text="hmm", signature="s"),))
    request = ChatRequest(model="m", messages=(*HI, thought, *HI), sampling=Sampling(top_k=5))
    assert lossy_notes(request) == [
        "sampling.top_k: not sent (the OpenAI format has no top_k)",
        "earlier turns' thinking blocks: not sent (the OpenAI format has none)",
    ]


def test_cache_marks_are_left_out_with_a_note() -> None:
    marked = UserMessage(content=(TextPart(text="long prompt", cache=CacheMark(ttl="1h")),))
    request = ChatRequest(model="m", messages=(marked,))
    assert encoded(request)["messages"] == [{"role": "user", "content": "long prompt"}]
    assert lossy_notes(request) == [
        "cache_control marks: not sent (the OpenAI format has none; the provider caches long "
        "prompt prefixes by itself, if at all)"
    ]
    tool = ToolDefinition(name="f", cache=CacheMark())
    assert lossy_notes(ChatRequest(model="m", messages=HI, tools=(tool,)))


def test_an_anthropic_answers_cited_text_goes_as_its_text() -> None:
    cited = {
        "type": "text",
        "text": "Team A won.",
        "citations": [{"type": "web_search_result_location"}],
    }
    turn = AssistantMessage(
        content=(TextPart(text="Team A won.", native=NativeBlock(format="anthropic", data=cited)),)
    )
    request = ChatRequest(model="m", messages=(UserMessage(content=(TextPart(text="who?"),)), turn))
    body = json.loads(encode_upstream_request(request, model="m", stream=False))
    assert body["messages"][1] == {"role": "assistant", "content": "Team A won."}
