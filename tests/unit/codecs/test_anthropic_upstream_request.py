"""encode_upstream_request (Anthropic): field mapping, turn merging, refusals, round trips."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gw.codecs.anthropic_messages.upstream_messages import lossy_notes
from gw.codecs.anthropic_messages.upstream_request import (
    EFFORT_BUDGET_SHARE,
    MIN_THINKING_BUDGET,
    encode_upstream_request,
)
from gw.errors import InvalidRequestError, NativeFeatureUnsupportedError
from gw.ir import (
    AssistantMessage,
    CacheMark,
    ChatRequest,
    ContentPart,
    ImagePart,
    Message,
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
    assistant_from_blocks,
)

HI = (UserMessage(content=(TextPart(text="hi"),)),)
TOOL = ToolDefinition(name="f", parameters={"type": "object", "properties": {}})


def encoded(request: ChatRequest, **kwargs: Any) -> dict[str, Any]:
    kwargs.setdefault("model", "claude-x")
    kwargs.setdefault("stream", False)
    kwargs.setdefault("default_max_tokens", 4096)
    result: dict[str, Any] = json.loads(encode_upstream_request(request, **kwargs))
    return result


def messages_of(*messages: Message) -> list[dict[str, Any]]:
    body = encoded(ChatRequest(model="r", messages=messages))
    out: list[dict[str, Any]] = body["messages"]
    return out


def test_minimal_body() -> None:
    assert encoded(ChatRequest(model="route", messages=HI), stream=True) == {
        "model": "claude-x",
        "messages": [{"role": "user", "content": "hi"}],
        "max_tokens": 4096,
        "stream": True,
    }


@pytest.mark.parametrize(("max_tokens", "sent"), [(None, 999), (50, 50), (0, 0)])
def test_max_tokens_is_the_request_s_else_the_default(max_tokens: int | None, sent: int) -> None:
    request = ChatRequest(model="r", messages=HI, max_tokens=max_tokens)
    assert encoded(request, default_max_tokens=999)["max_tokens"] == sent


def test_system_messages_are_hoisted_in_order() -> None:
    body = encoded(
        ChatRequest(
            model="r",
            messages=(
                SystemMessage(content=(TextPart(text="a"), TextPart(text="b")), name="s"),
                *HI,
                SystemMessage(content=(TextPart(text="c"), TextPart(text=""))),
            ),
        )
    )
    assert body["system"] == [
        {"type": "text", "text": "a"},
        {"type": "text", "text": "b"},
        {"type": "text", "text": "c"},
    ]
    assert body["messages"] == [{"role": "user", "content": "hi"}]


def test_empty_system_is_left_out() -> None:
    body = encoded(ChatRequest(model="r", messages=(SystemMessage(content=()), *HI)))
    assert "system" not in body


def test_consecutive_roles_merge_and_tool_results_come_first() -> None:
    assert messages_of(
        UserMessage(content=(TextPart(text="a"),)),
        UserMessage(content=(TextPart(text="b"),), name="bob"),
        AssistantMessage(tool_calls=(ToolCall(id="t1", name="f", arguments=""),)),
        UserMessage(content=(TextPart(text="odd order"),)),
        ToolMessage(tool_call_id="t1", content=(TextPart(text="42"),)),
    ) == [
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "42"},
                {"type": "text", "text": "odd order"},
            ],
        },
    ]


def test_assistant_thinking_first_unsigned_dropped_redacted_kept() -> None:
    assert messages_of(
        *HI,
        AssistantMessage(content=(TextPart(text="x"),)),
        AssistantMessage(
            content=(
                ThinkingPart(text="unsigned, from another provider"),
                ThinkingPart(text="mine", signature="sig"),
                ThinkingPart(redacted="opaque"),
                TextPart(text=""),
                TextPart(text="y"),
            )
        ),
    )[1] == {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "mine", "signature": "sig"},
            {"type": "redacted_thinking", "data": "opaque"},
            {"type": "text", "text": "x"},
            {"type": "text", "text": "y"},
        ],
    }


def test_a_turn_of_only_empty_text_is_sent_as_it_is() -> None:
    assert messages_of(UserMessage(content=(TextPart(text=""),))) == [
        {"role": "user", "content": ""}
    ]


@pytest.mark.parametrize(
    ("part", "source"),
    [
        (
            ImagePart(url="data:image/jpeg;base64,/9j/AAA"),
            {"type": "base64", "media_type": "image/jpeg", "data": "/9j/AAA"},
        ),
        (
            ImagePart(url="data:;base64,R0lGODlh"),
            {"type": "base64", "media_type": "image/gif", "data": "R0lGODlh"},
        ),
        (
            ImagePart(data="UklGRAAA"),
            {"type": "base64", "media_type": "image/webp", "data": "UklGRAAA"},
        ),
        (
            ImagePart(data="AAAA", media_type="image/jpeg"),
            {"type": "base64", "media_type": "image/jpeg", "data": "AAAA"},
        ),
        (
            ImagePart(url="https://x.test/a.png", detail="low"),
            {"type": "url", "url": "https://x.test/a.png"},
        ),
    ],
)
def test_image_sources(part: ImagePart, source: dict[str, Any]) -> None:
    [turn] = messages_of(UserMessage(content=(part,)))
    assert turn["content"] == [{"type": "image", "source": source}]


def test_data_url_that_is_not_base64_is_refused() -> None:
    with pytest.raises(InvalidRequestError):
        messages_of(UserMessage(content=(ImagePart(url="data:image/png,%89PNG"),)))


def test_tool_result_with_image_and_error_flag() -> None:
    [turn] = messages_of(
        ToolMessage(
            tool_call_id="t1",
            content=(TextPart(text="see"), ImagePart(data="iVBORw0", media_type="image/png")),
            is_error=True,
        ),
        ToolMessage(tool_call_id="t2", content=()),
    )
    assert turn["content"] == [
        {
            "type": "tool_result",
            "tool_use_id": "t1",
            "content": [
                {"type": "text", "text": "see"},
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0"},
                },
            ],
            "is_error": True,
        },
        {"type": "tool_result", "tool_use_id": "t2"},
    ]


def test_tool_arguments_travel_verbatim() -> None:
    arguments = '{"b": [1, 2.50], "a": "\\u00e9"}'
    body = encode_upstream_request(
        ChatRequest(
            model="r",
            messages=(
                AssistantMessage(tool_calls=(ToolCall(id="t", name="f", arguments=arguments),)),
            ),
        ),
        model="m",
        stream=False,
        default_max_tokens=1,
    )
    assert b'"input":' + arguments.encode() in body


@pytest.mark.parametrize("arguments", ["[1, 2]", "not json", '"text"', "{"])
def test_tool_arguments_that_are_not_an_object_are_refused(arguments: str) -> None:
    with pytest.raises(NativeFeatureUnsupportedError, match="not a JSON object"):
        messages_of(AssistantMessage(tool_calls=(ToolCall(id="t", name="f", arguments=arguments),)))


def test_tools_and_choice() -> None:
    body = encoded(
        ChatRequest(
            model="r",
            messages=HI,
            tools=(
                ToolDefinition(
                    name="f", description="d", parameters={"type": "object"}, strict=True
                ),
                ToolDefinition(name="g"),
                ToolDefinition(name="h", parameters={}, defer_loading=True),
            ),
            tool_choice=ToolChoice(mode="tool", name="g"),
        )
    )
    assert body["tools"] == [
        {"name": "f", "description": "d", "input_schema": {"type": "object"}, "strict": True},
        {"name": "g", "input_schema": {"type": "object", "properties": {}}},
        {"name": "h", "input_schema": {"type": "object", "properties": {}}, "defer_loading": True},
    ]
    assert body["tool_choice"] == {"type": "tool", "name": "g"}


@pytest.mark.parametrize(
    ("choice", "parallel", "tools", "expected"),
    [
        (None, None, (TOOL,), None),
        (None, True, (TOOL,), None),
        (None, False, (TOOL,), {"type": "auto", "disable_parallel_tool_use": True}),
        (ToolChoice(mode="auto"), None, (TOOL,), {"type": "auto"}),
        (
            ToolChoice(mode="required"),
            False,
            (TOOL,),
            {"type": "any", "disable_parallel_tool_use": True},
        ),
        (ToolChoice(mode="none"), False, (TOOL,), {"type": "none"}),
        (ToolChoice(mode="none"), None, (), None),
        (ToolChoice(mode="auto"), False, (), None),
        (ToolChoice(mode="required"), None, (), {"type": "any"}),
    ],
)
def test_tool_choice_table(
    choice: ToolChoice | None,
    parallel: bool | None,
    tools: tuple[ToolDefinition, ...],
    expected: Any,
) -> None:
    request = ChatRequest(
        model="r", messages=HI, tools=tools, tool_choice=choice, parallel_tool_calls=parallel
    )
    assert encoded(request).get("tool_choice") == expected


def test_tool_choice_without_a_name_is_refused() -> None:
    request = ChatRequest(
        model="r", messages=HI, tools=(TOOL,), tool_choice=ToolChoice(mode="tool")
    )
    with pytest.raises(InvalidRequestError):
        encoded(request)


@pytest.mark.parametrize(
    ("reasoning", "max_tokens", "thinking"),
    [
        (Reasoning(budget_tokens=2000), 4096, {"type": "enabled", "budget_tokens": 2000}),
        (Reasoning(budget_tokens=0), 4096, {"type": "disabled"}),
        (
            Reasoning(budget_tokens=5000, effort="low"),
            4096,
            {"type": "enabled", "budget_tokens": 5000},
        ),
        (Reasoning(effort="minimal"), 4096, {"type": "enabled", "budget_tokens": 1024}),
        (Reasoning(effort="low"), 4096, {"type": "enabled", "budget_tokens": 1024}),
        (Reasoning(effort="medium"), 4096, {"type": "enabled", "budget_tokens": 2048}),
        (Reasoning(effort="high"), 4096, {"type": "enabled", "budget_tokens": 3276}),
        (Reasoning(effort="high"), 20000, {"type": "enabled", "budget_tokens": 16000}),
        (Reasoning(), 4096, None),
        (Reasoning(adaptive=True), 4096, {"type": "adaptive"}),
        (Reasoning(adaptive=True, effort="high"), 4096, {"type": "adaptive"}),
        (Reasoning(effort="none"), 4096, {"type": "disabled"}),
        (Reasoning(effort="xhigh"), 20000, {"type": "enabled", "budget_tokens": 18000}),
    ],
)
def test_reasoning_to_thinking(reasoning: Reasoning, max_tokens: int, thinking: Any) -> None:
    request = ChatRequest(model="r", messages=HI, reasoning=reasoning, max_tokens=max_tokens)
    assert encoded(request).get("thinking") == thinking


def test_effort_table_covers_every_effort_and_stays_below_max_tokens() -> None:
    # "none" is no thinking at all: {"type": "disabled"}
    assert set(EFFORT_BUDGET_SHARE) == {"minimal", "low", "medium", "high", "xhigh"}
    assert all(0 <= share < 1 for share in EFFORT_BUDGET_SHARE.values())
    assert MIN_THINKING_BUDGET == 1024


def test_effort_without_room_for_thinking_is_refused() -> None:
    request = ChatRequest(
        model="r", messages=HI, reasoning=Reasoning(effort="high"), max_tokens=1024
    )
    with pytest.raises(NativeFeatureUnsupportedError) as caught:
        encoded(request)
    assert caught.value.param == "max_tokens"


def test_sampling_stop_and_user() -> None:
    body = encoded(
        ChatRequest(
            model="r",
            messages=HI,
            sampling=Sampling(temperature=0.0, top_p=0.9, top_k=3),
            stop=("a", "b"),
            user="u1",
            include_usage=True,
        )
    )
    assert (body["temperature"], body["top_p"], body["top_k"]) == (0.0, 0.9, 3)
    assert body["stop_sequences"] == ["a", "b"]
    assert body["metadata"] == {"user_id": "u1"}


@pytest.mark.parametrize(
    ("request_", "param"),
    [
        (ChatRequest(model="r", messages=HI, sampling=Sampling(seed=1)), "seed"),
        (
            ChatRequest(model="r", messages=HI, sampling=Sampling(frequency_penalty=0.0)),
            "frequency_penalty",
        ),
        (
            ChatRequest(model="r", messages=HI, sampling=Sampling(presence_penalty=1.0)),
            "presence_penalty",
        ),
        (
            ChatRequest(model="r", messages=HI, response_format=ResponseFormat(type="json_object")),
            "response_format",
        ),
    ],
)
def test_parameters_anthropic_lacks_are_refused_by_name(request_: ChatRequest, param: str) -> None:
    with pytest.raises(NativeFeatureUnsupportedError) as caught:
        encoded(request_)
    assert caught.value.param == param


@pytest.mark.parametrize("field", ["temperature", "top_p", "top_k"])
def test_api_version_2026_refuses_sampling(field: str) -> None:
    request = ChatRequest(model="r", messages=HI, sampling=Sampling(**{field: 1}))
    assert field in encoded(request, api_version="2023-06-01")
    with pytest.raises(NativeFeatureUnsupportedError) as caught:
        encoded(request, api_version="2026-10-21")
    assert caught.value.param == field
    assert "temperature" not in encoded(
        ChatRequest(model="r", messages=HI), api_version="2026-10-21"
    )


def test_response_format() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    request = ChatRequest(
        model="r",
        messages=HI,
        response_format=ResponseFormat(
            type="json_schema", name="out", json_schema=schema, strict=True
        ),
    )
    assert encoded(request)["output_config"] == {
        "format": {"type": "json_schema", "schema": schema}
    }
    text = ChatRequest(model="r", messages=HI, response_format=ResponseFormat(type="text"))
    assert "output_config" not in encoded(text)
    empty = ChatRequest(model="r", messages=HI, response_format=ResponseFormat(type="json_schema"))
    with pytest.raises(InvalidRequestError):
        encoded(empty)


def test_extensions_merge_and_computed_keys_win() -> None:
    request = ChatRequest(
        model="r",
        messages=HI,
        max_tokens=10,
        response_format=ResponseFormat(type="json_schema", json_schema={"type": "object"}),
        extensions={
            "anthropic": {
                "model": "other",
                "max_tokens": 99999,
                "stream": True,
                "thinking": {"type": "adaptive"},
                "output_config": {
                    "effort": "high",
                    "format": {"type": "json_schema", "schema": {}},
                },
                "service_tier": "standard_only",
            },
            "openai": {"logprobs": True},
        },
    )
    body = encoded(request)
    assert (body["model"], body["max_tokens"], body["stream"]) == ("claude-x", 10, False)
    assert body["thinking"] == {"type": "adaptive"}
    assert body["output_config"] == {
        "effort": "high",
        "format": {"type": "json_schema", "schema": {"type": "object"}},
    }
    assert body["service_tier"] == "standard_only"
    assert "logprobs" not in body


@pytest.mark.parametrize(
    ("reasoning", "kept", "thinking"),
    [
        (
            Reasoning(budget_tokens=2000),
            {"display": "omitted"},
            {"type": "enabled", "budget_tokens": 2000, "display": "omitted"},
        ),
        (
            Reasoning(adaptive=True),
            {"display": "omitted"},
            {"type": "adaptive", "display": "omitted"},
        ),
        (Reasoning(adaptive=True), {"type": "between_tools"}, {"type": "between_tools"}),
        (None, {"type": "disabled"}, {"type": "disabled"}),
    ],
)
def test_the_client_s_own_thinking_words_win(
    reasoning: Reasoning | None, kept: dict[str, Any], thinking: dict[str, Any]
) -> None:
    """What an Anthropic client kept of ``thinking`` (display, the types the IR has no
    word for) goes back as it said it."""
    request = ChatRequest(
        model="r", messages=HI, reasoning=reasoning, extensions={"anthropic": {"thinking": kept}}
    )
    assert encoded(request)["thinking"] == thinking


def test_native_tools_follow_the_custom_ones_verbatim_and_others_formats_are_left_out() -> None:
    search = {"type": "web_search_20250305", "name": "web_search", "max_uses": 2}
    request = ChatRequest(
        model="r",
        messages=HI,
        tools=(TOOL,),
        native_tools=(
            NativeBlock(format="anthropic", data=search),
            NativeBlock(format="openai_responses", data={"type": "web_search"}),
        ),
    )
    assert encoded(request)["tools"] == [
        {"name": "f", "input_schema": {"type": "object", "properties": {}}},
        search,
    ]


def test_a_tool_choice_among_only_server_tools_is_sent() -> None:
    search = NativeBlock(format="anthropic", data={"type": "web_search_20250305", "name": "s"})
    request = ChatRequest(
        model="r",
        messages=HI,
        native_tools=(search,),
        tool_choice=ToolChoice(mode="tool", name="s"),
        parallel_tool_calls=False,
    )
    body = encoded(request)
    assert body["tools"] == [search.data]
    assert body["tool_choice"] == {"type": "tool", "name": "s", "disable_parallel_tool_use": True}


def test_native_blocks_go_back_verbatim_in_their_place() -> None:
    call = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}
    result = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []}
    cited = {"type": "text", "text": "Paris.", "citations": [{"type": "x"}]}
    other = NativeBlock(format="openai_responses", data={"type": "reasoning"})
    turn = assistant_from_blocks(
        [
            ThinkingPart(text="t", signature="sig"),
            TextPart(text="Searching."),
            NativeBlock(format="anthropic", data=call),
            other,
            NativeBlock(format="anthropic", data=result),
            NativeBlock(format="anthropic", data=cited),
        ]
    )
    assert messages_of(*HI, turn)[1]["content"] == [
        {"type": "thinking", "thinking": "t", "signature": "sig"},
        {"type": "text", "text": "Searching."},
        call,
        result,
        cited,
    ]


# --- round trip: IR -> Anthropic body -> (a test-only decoder) -> IR -------------------------


def decode_body(body: dict[str, Any]) -> ChatRequest:
    """Anthropic request JSON -> IR, for conversations gw itself encodes (test only)."""
    messages: list[Message] = []
    system = body.get("system")
    if system is not None:
        blocks = [{"type": "text", "text": system}] if isinstance(system, str) else system
        messages.append(SystemMessage(content=tuple(_part(block) for block in blocks)))
    for turn in body["messages"]:
        content = turn["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if turn["role"] == "assistant":
            messages.append(_assistant(blocks))
        else:
            messages.extend(_user(blocks))
    choice = body.get("tool_choice")
    thinking = body.get("thinking")
    output = body.get("output_config", {}).get("format")
    reverse_choice = {"auto": "auto", "any": "required", "tool": "tool", "none": "none"}
    return ChatRequest(
        model=body["model"],
        messages=tuple(messages),
        tools=tuple(
            ToolDefinition(
                name=tool["name"],
                description=tool.get("description"),
                parameters=tool["input_schema"],
                strict=tool.get("strict"),
                cache=_mark(tool),
            )
            for tool in body.get("tools", ())
        ),
        tool_choice=None
        if choice is None
        else ToolChoice(mode=reverse_choice[choice["type"]], name=choice.get("name")),
        parallel_tool_calls=False if choice and choice.get("disable_parallel_tool_use") else None,
        response_format=None
        if output is None
        else ResponseFormat(type="json_schema", json_schema=output["schema"]),
        sampling=Sampling(
            temperature=body.get("temperature"), top_p=body.get("top_p"), top_k=body.get("top_k")
        ),
        stop=tuple(body.get("stop_sequences", ())),
        max_tokens=body["max_tokens"],
        reasoning=None if thinking is None else Reasoning(budget_tokens=thinking["budget_tokens"]),
        user=body.get("metadata", {}).get("user_id"),
    )


def _mark(block: dict[str, Any]) -> CacheMark | None:
    control = block.get("cache_control")
    if control is None:
        return None
    assert set(control) <= {"type", "ttl"}
    assert control["type"] == "ephemeral"
    return CacheMark(ttl=control.get("ttl"))


def _part(block: dict[str, Any]) -> ContentPart:
    if block["type"] == "text":
        return TextPart(text=block["text"], cache=_mark(block))
    source = block["source"]
    if source["type"] == "url":
        return ImagePart(url=source["url"], cache=_mark(block))
    return ImagePart(data=source["data"], media_type=source["media_type"], cache=_mark(block))


def _assistant(blocks: list[dict[str, Any]]) -> AssistantMessage:
    ordered: list[TextPart | ThinkingPart | ToolCall] = []
    for block in blocks:
        if block["type"] == "thinking":
            ordered.append(ThinkingPart(text=block["thinking"], signature=block["signature"]))
        elif block["type"] == "redacted_thinking":
            ordered.append(ThinkingPart(redacted=block["data"]))
        elif block["type"] == "tool_use":
            arguments = msgspec.json.encode(block["input"]).decode()
            call = ToolCall(
                id=block["id"], name=block["name"], arguments=arguments, cache=_mark(block)
            )
            ordered.append(call)
        else:
            ordered.append(TextPart(text=block["text"], cache=_mark(block)))
    return assistant_from_blocks(ordered)


def _user(blocks: list[dict[str, Any]]) -> list[Message]:
    out: list[Message] = []
    for block in blocks:
        if block["type"] == "tool_result":
            content = block.get("content", [])
            parts = (
                [TextPart(text=content)]
                if isinstance(content, str)
                else [_part(b) for b in content]
            )
            out.append(
                ToolMessage(
                    tool_call_id=block["tool_use_id"],
                    content=tuple(parts),
                    is_error=block.get("is_error", False),
                    cache=_mark(block),
                )
            )
    rest = [_part(block) for block in blocks if block["type"] != "tool_result"]
    if rest:
        out.append(UserMessage(content=tuple(rest)))
    return out


_texts = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=12)
_ids = st.text("abcdefghij0123456789_", min_size=1, max_size=8)
_marks = st.none() | st.sampled_from([CacheMark(), CacheMark(ttl="5m"), CacheMark(ttl="1h")])
_images = st.one_of(
    st.builds(ImagePart, url=_ids.map(lambda name: f"https://img.test/{name}"), cache=_marks),
    st.builds(
        ImagePart,
        data=st.text("ABCDEFabcdef0123456789+/", min_size=4, max_size=16),
        media_type=st.sampled_from(["image/png", "image/jpeg", "image/gif", "image/webp"]),
        cache=_marks,
    ),
)
_text_parts = st.builds(TextPart, text=_texts, cache=_marks)
_parts: st.SearchStrategy[ContentPart] = st.one_of(_text_parts, _images)
_json_objects = st.dictionaries(
    _ids, st.one_of(st.integers(-1000, 1000), _texts, st.booleans(), st.none()), max_size=3
).map(lambda d: msgspec.json.encode(d).decode())
_thinking = st.one_of(
    st.builds(ThinkingPart, text=_texts, signature=_ids),
    st.builds(ThinkingPart, redacted=_ids),
)
_calls = st.builds(ToolCall, id=_ids, name=_ids, arguments=_json_objects, cache=_marks)
# Grouped turns (thinking, text, tool calls) and, now and then, interleaved ones.
_assistants = (
    st.one_of(
        st.tuples(
            st.lists(_thinking, max_size=2),
            st.lists(_text_parts, max_size=2),
            st.lists(_calls, max_size=2),
        ).map(lambda lists: [*lists[0], *lists[1], *lists[2]]),
        st.lists(st.one_of(_thinking, _text_parts, _calls), max_size=4),
    )
    .filter(bool)
    .map(assistant_from_blocks)
)
_user_messages = st.builds(UserMessage, content=st.lists(_parts, min_size=1, max_size=3).map(tuple))
_tool_messages = st.builds(
    ToolMessage,
    tool_call_id=_ids,
    content=st.lists(_parts, min_size=2, max_size=3).map(tuple)
    | st.builds(lambda part: (part,), _text_parts),
    is_error=st.booleans(),
    cache=_marks,
)
# A user turn: a user message, or tool results optionally followed by a user message.
_user_turns = st.one_of(
    _user_messages.map(lambda m: [m]),
    st.tuples(
        st.lists(_tool_messages, min_size=1, max_size=2), st.lists(_user_messages, max_size=1)
    ).map(lambda pair: [*pair[0], *pair[1]]),
)


@st.composite
def conversations(draw: st.DrawFn) -> tuple[Message, ...]:
    messages: list[Message] = []
    if draw(st.booleans()):
        parts = draw(st.lists(_text_parts, min_size=1, max_size=3))
        messages.append(SystemMessage(content=tuple(parts)))
    for index in range(draw(st.integers(1, 4))):
        messages.extend(draw(_user_turns) if index % 2 == 0 else [draw(_assistants)])
    return tuple(messages)


@st.composite
def requests(draw: st.DrawFn) -> ChatRequest:
    tools = draw(
        st.lists(
            st.builds(
                ToolDefinition,
                name=_ids,
                description=st.none() | _texts,
                parameters=st.just({"type": "object", "properties": {}}),
                strict=st.none() | st.booleans(),
                cache=_marks,
            ),
            max_size=2,
        )
    )
    choice = None
    if tools:
        mode = draw(st.sampled_from(["auto", "required", "tool", "none", None]))
        if mode is not None:
            choice = ToolChoice(mode=mode, name=tools[0].name if mode == "tool" else None)
    return ChatRequest(
        model="claude-x",
        messages=draw(conversations()),
        tools=tuple(tools),
        tool_choice=choice,
        parallel_tool_calls=False
        if choice is not None and choice.mode != "none" and draw(st.booleans())
        else None,
        response_format=draw(
            st.none() | st.just(ResponseFormat(type="json_schema", json_schema={"type": "object"}))
        ),
        sampling=Sampling(
            temperature=draw(st.none() | st.floats(0, 1)),
            top_p=draw(st.none() | st.floats(0, 1)),
            top_k=draw(st.none() | st.integers(1, 100)),
        ),
        stop=tuple(draw(st.lists(_texts, max_size=2))),
        max_tokens=draw(st.integers(2048, 8192)),
        reasoning=draw(st.none() | st.builds(Reasoning, budget_tokens=st.integers(1024, 2047))),
        user=draw(st.none() | _ids),
    )


@settings(max_examples=150, deadline=None)
@given(requests())
def test_round_trip_through_the_wire_format(request: ChatRequest) -> None:
    body = json.loads(
        encode_upstream_request(request, model="claude-x", stream=False, default_max_tokens=1)
    )
    assert decode_body(body) == request


def test_lossy_notes_name_what_anthropic_cannot_carry() -> None:
    messages = (
        UserMessage(content=(TextPart(text="hi"),), name="ann"),
        AssistantMessage(
            content=(ThinkingPart(text="unsigned"), ThinkingPart(text="ok", signature="s"))
        ),
        SystemMessage(content=(TextPart(text="late"),)),
        UserMessage(content=(ImagePart(url="https://x/y.png", detail="high"),)),
    )
    assert lossy_notes(messages) == [
        "messages[0].name: not sent (Anthropic has no message names)",
        "messages[1]: unsigned thinking not sent (Anthropic needs signatures)",
        "messages[2]: system text moved to the top-level system prompt",
        "messages[3]: image detail not sent (Anthropic has none)",
    ]
    assert lossy_notes((SystemMessage(content=(TextPart(text="first"),)),)) == []
