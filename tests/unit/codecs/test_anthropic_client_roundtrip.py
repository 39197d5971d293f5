"""Property: any IR conversation written as an Anthropic request decodes back to itself.

The encoder here is test-only and written from the API reference, independently of the
decoder: tool results go first in a user message, followed by that turn's other blocks.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from gw.codecs.anthropic_messages.client_request import decode_messages_request
from gw.ir import (
    AssistantMessage,
    ChatRequest,
    ContentPart,
    ImagePart,
    Message,
    Reasoning,
    Sampling,
    SystemMessage,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolMessage,
    UserMessage,
    assistant_from_blocks,
)

# ---- a small Anthropic request encoder -------------------------------------------------


def _part(part: ContentPart) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    if part.url is not None:
        return {"type": "image", "source": {"type": "url", "url": part.url}}
    source = {"type": "base64", "media_type": part.media_type, "data": part.data}
    return {"type": "image", "source": source}


def _assistant_block(part: TextPart | ThinkingPart | ToolCall) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    if isinstance(part, ToolCall):
        arguments = json.loads(part.arguments)
        return {"type": "tool_use", "id": part.id, "name": part.name, "input": arguments}
    if part.redacted is not None:
        return {"type": "redacted_thinking", "data": part.redacted}
    return {"type": "thinking", "thinking": part.text, "signature": part.signature}


def _tool_result(message: ToolMessage) -> dict[str, Any]:
    return {
        "type": "tool_result",
        "tool_use_id": message.tool_call_id,
        "content": [_part(part) for part in message.content],
        "is_error": message.is_error,
    }


def encode_messages(messages: tuple[Message, ...]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []  # tool results waiting for their user turn
    for message in messages:
        if isinstance(message, ToolMessage):
            results.append(_tool_result(message))
            continue
        if isinstance(message, UserMessage):
            blocks = [*results, *(_part(part) for part in message.content)]
            out.append({"role": "user", "content": blocks})
            results = []
            continue
        if results:
            out.append({"role": "user", "content": results})
            results = []
        if isinstance(message, AssistantMessage):
            parts = message.blocks or (*message.content, *message.tool_calls)
            blocks = [_assistant_block(part) for part in parts]
            out.append({"role": "assistant", "content": blocks})
        else:
            out.append({"role": "system", "content": [_part(p) for p in message.content]})
    if results:
        out.append({"role": "user", "content": results})
    return out


def encode_request(request: ChatRequest) -> bytes:
    messages = request.messages
    payload: dict[str, Any] = {"model": request.model, "max_tokens": request.max_tokens}
    if isinstance(messages[0], SystemMessage):
        payload["system"] = [_part(part) for part in messages[0].content]
        messages = messages[1:]
    payload["messages"] = encode_messages(messages)
    if request.stop:
        payload["stop_sequences"] = list(request.stop)
    if request.sampling.temperature is not None:
        payload["temperature"] = request.sampling.temperature
    if request.user is not None:
        payload["metadata"] = {"user_id": request.user}
    if request.reasoning is not None:
        payload["thinking"] = {"type": "enabled", "budget_tokens": request.reasoning.budget_tokens}
    payload["stream"] = request.stream
    return json.dumps(payload).encode()


# ---- strategies ------------------------------------------------------------------------

texts = st.text(min_size=1, max_size=12)
ids = st.from_regex(r"toolu_[A-Za-z0-9]{1,8}", fullmatch=True)
text_parts = st.builds(TextPart, text=texts)
images = st.one_of(
    st.builds(ImagePart, url=st.from_regex(r"https://img\.test/[a-z]{1,6}\.png", fullmatch=True)),
    st.builds(
        ImagePart,
        data=st.from_regex(r"[A-Za-z0-9+/]{4,16}={0,2}", fullmatch=True),
        media_type=st.sampled_from(["image/jpeg", "image/png", "image/gif", "image/webp"]),
    ),
)
content_parts = st.one_of(text_parts, images)
thinking_parts = st.one_of(
    st.builds(ThinkingPart, text=st.text(max_size=12), signature=texts),
    st.builds(ThinkingPart, redacted=texts),
)
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53), max_value=2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)
tool_calls = st.builds(
    ToolCall,
    id=ids,
    name=st.from_regex(r"[a-z_]{1,10}", fullmatch=True),
    arguments=st.dictionaries(st.text(max_size=5), json_values, max_size=3).map(
        lambda value: msgspec.json.encode(value).decode()
    ),
)
users = st.builds(UserMessage, content=st.lists(content_parts, min_size=1, max_size=3).map(tuple))
tools = st.builds(
    ToolMessage,
    tool_call_id=ids,
    content=st.lists(content_parts, max_size=2).map(tuple),
    is_error=st.booleans(),
)


assistants = st.lists(
    st.one_of(text_parts, thinking_parts, tool_calls), min_size=1, max_size=4
).map(assistant_from_blocks)
systems = st.builds(SystemMessage, content=st.lists(text_parts, min_size=1, max_size=2).map(tuple))


@st.composite
def requests(draw: st.DrawFn) -> ChatRequest:
    system = draw(st.none() | systems)
    messages = tuple(draw(st.lists(st.one_of(users, assistants, tools), min_size=1, max_size=6)))
    budget = draw(st.none() | st.integers(min_value=1024, max_value=64_000))
    return ChatRequest(
        model=draw(texts),
        messages=messages if system is None else (system, *messages),
        sampling=Sampling(temperature=draw(st.none() | st.floats(min_value=0, max_value=1))),
        stop=tuple(draw(st.lists(texts, max_size=2))),
        max_tokens=draw(st.integers(min_value=1, max_value=200_000)),
        reasoning=None if budget is None else Reasoning(budget_tokens=budget),
        stream=draw(st.booleans()),
        include_usage=True,
        user=draw(st.none() | texts),
    )


@settings(max_examples=150, deadline=None)
@given(requests())
def test_ir_written_as_anthropic_json_decodes_back(request: ChatRequest) -> None:
    assert decode_messages_request(encode_request(request)) == request


def test_encoder_groups_tool_results_with_the_next_user_turn() -> None:
    """Guards the property's encoder: the grouping it relies on is the decoder's inverse."""
    messages = (
        ToolMessage(tool_call_id="a", content=()),
        UserMessage(content=(TextPart(text="x"),)),
        UserMessage(content=(TextPart(text="y"),)),
    )
    assert [len(m["content"]) for m in encode_messages(messages)] == [2, 1]
