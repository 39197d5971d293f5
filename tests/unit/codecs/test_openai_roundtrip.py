"""Property: any IR request the OpenAI format can express survives IR -> body -> IR.

The upstream encoder writes the body an OpenAI-compatible server receives; the client
decoder reads the body the OpenAI SDK sends. Both speak Chat Completions, so what one
writes the other must read back unchanged.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from gw.codecs.openai_chat import decode_chat_request, encode_upstream_request
from gw.ir import (
    AssistantMessage,
    ChatRequest,
    ImagePart,
    Message,
    Reasoning,
    ResponseFormat,
    Sampling,
    SystemMessage,
    TextPart,
    ToolCall,
    ToolChoice,
    ToolDefinition,
    ToolMessage,
    UserMessage,
)

texts = st.text(min_size=1, max_size=20)
names = st.from_regex(r"[a-z][a-z0-9_]{0,10}", fullmatch=True)
text_parts = st.lists(st.builds(TextPart, text=texts), min_size=1, max_size=3).map(tuple)
images = st.one_of(
    st.builds(
        ImagePart,
        url=st.sampled_from(["https://example.com/a.png", "http://x.test/b.jpg"]),
        detail=st.none() | st.sampled_from(["low", "high", "auto"]),
    ),
    st.builds(
        ImagePart,
        data=st.sampled_from(["iVBORw0KGgo=", "R0lGODlh"]),
        media_type=st.sampled_from(["image/png", "image/gif"]),
    ),
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-1000, 1000) | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(names, inner, max_size=3),
    max_leaves=6,
)
arguments = st.dictionaries(names, json_values, max_size=3).map(json.dumps)


@st.composite
def conversations(draw: st.DrawFn) -> tuple[Message, ...]:
    messages: list[Message] = []
    if draw(st.booleans()):
        messages.append(SystemMessage(content=draw(text_parts), name=draw(st.none() | names)))
    for _ in range(draw(st.integers(1, 4))):
        content = draw(st.lists(st.builds(TextPart, text=texts) | images, min_size=1, max_size=3))
        messages.append(UserMessage(content=tuple(content), name=draw(st.none() | names)))
        calls = draw(
            st.lists(
                st.builds(
                    ToolCall, id=names.map(lambda n: f"call_{n}"), name=names, arguments=arguments
                ),
                max_size=2,
                unique_by=lambda call: call.id,
            )
        )
        said = draw(text_parts) if not calls or draw(st.booleans()) else ()
        messages.append(AssistantMessage(content=said, tool_calls=tuple(calls)))
        messages.extend(
            ToolMessage(tool_call_id=call.id, content=draw(text_parts)) for call in calls
        )
    return tuple(messages)


@st.composite
def requests(draw: st.DrawFn) -> ChatRequest:
    tools = draw(
        st.lists(
            st.builds(
                ToolDefinition,
                name=names,
                description=st.none() | texts,
                parameters=st.just({"type": "object", "properties": {"a": {"type": "string"}}}),
            ),
            max_size=2,
            unique_by=lambda tool: tool.name,
        )
    )
    choices: list[Any] = [None, ToolChoice(mode="auto"), ToolChoice(mode="none")]
    if tools:
        choices += [ToolChoice(mode="required"), ToolChoice(mode="tool", name=tools[0].name)]
    stream = draw(st.booleans())
    return ChatRequest(
        model="m",
        messages=draw(conversations()),
        tools=tuple(tools),
        tool_choice=draw(st.sampled_from(choices)),
        parallel_tool_calls=draw(st.none() | st.booleans()) if tools else None,
        response_format=draw(
            st.none()
            | st.just(ResponseFormat(type="json_object"))
            | st.builds(
                ResponseFormat,
                type=st.just("json_schema"),
                name=names,
                json_schema=st.just({"type": "object"}),
                strict=st.none() | st.booleans(),
            )
        ),
        sampling=Sampling(
            temperature=draw(st.none() | st.floats(0, 2)),
            top_p=draw(st.none() | st.floats(0, 1)),
            frequency_penalty=draw(st.none() | st.floats(-2, 2)),
            presence_penalty=draw(st.none() | st.floats(-2, 2)),
            seed=draw(st.none() | st.integers(0, 2**31)),
        ),
        stop=tuple(draw(st.lists(texts, max_size=3))),
        max_tokens=draw(st.none() | st.integers(1, 100_000)),
        reasoning=draw(
            st.none() | st.builds(Reasoning, effort=st.sampled_from(["low", "medium", "high"]))
        ),
        stream=stream,
        include_usage=stream,  # a stream always asks upstream for usage
        user=draw(st.none() | texts),
    )


@settings(max_examples=200, deadline=None)
@given(requests())
def test_every_expressible_request_survives_the_round_trip(request: ChatRequest) -> None:
    body = encode_upstream_request(request, model="m", stream=request.stream)
    assert decode_chat_request(body) == request
