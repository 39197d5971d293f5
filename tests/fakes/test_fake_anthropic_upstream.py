"""The fake Anthropic upstream, checked through the real `anthropic` SDK and raw httpx."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import httpx2
import pytest

from .anthropic_server_tools import SEARCH_ID, web_search_content
from .anthropic_upstream import (
    DEFAULT_TEXT,
    PROMPT_TOO_LONG,
    Behavior,
    FakeAnthropic,
    signature_for,
)

MESSAGES: list[anthropic.types.MessageParam] = [{"role": "user", "content": "Say hello to me"}]
TOOLS: list[anthropic.types.ToolParam] = [
    {"name": "get_weather", "input_schema": {"type": "object", "properties": {}}}
]
VERSION = {"anthropic-version": "2023-06-01"}


@pytest.fixture(scope="module")
def fake_server() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as server:
        yield server


@pytest.fixture
def fake(fake_server: FakeAnthropic) -> FakeAnthropic:
    fake_server.clear()
    fake_server.default = Behavior()
    return fake_server


@pytest.fixture
def client(fake: FakeAnthropic) -> Iterator[anthropic.Anthropic]:
    with anthropic.Anthropic(
        base_url=fake.base_url, api_key="sk-ant-test", max_retries=0, timeout=10
    ) as sdk:
        yield sdk


def sse_events(raw: str) -> list[tuple[str, dict[str, Any]]]:
    """(event name, data) of every frame of a raw SSE body."""
    out = []
    for frame in raw.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in frame.split("\n"))
        out.append((lines["event"], json.loads(lines["data"])))
    return out


def test_message_and_recorded_request(client: anthropic.Anthropic, fake: FakeAnthropic) -> None:
    raw = client.messages.with_raw_response.create(
        model="claude-test", max_tokens=100, system="Be brief.", messages=MESSAGES
    )
    assert raw.headers["request-id"].startswith("req_fake_")
    message = raw.parse()
    assert message.model == "claude-test"
    assert [block.type for block in message.content] == ["text"]
    assert message.content[0].type == "text"
    assert message.content[0].text == DEFAULT_TEXT
    assert (message.stop_reason, message.stop_sequence) == ("end_turn", None)
    assert (message.usage.input_tokens, message.usage.output_tokens) == (6, 4)
    assert message.usage.cache_read_input_tokens == 0
    [request] = fake.requests
    assert (request.method, request.path) == ("POST", "/v1/messages")
    # SDK 2.x sends the key as a bearer token (API version 2026-10-21); gw sends x-api-key.
    assert request.headers["authorization"] == "Bearer sk-ant-test"
    assert request.headers["anthropic-version"]
    assert request.json["system"] == "Be brief."
    assert request.json["max_tokens"] == 100


def test_stream_accumulates_thinking_text_and_tool_use(
    client: anthropic.Anthropic, fake: FakeAnthropic
) -> None:
    arguments = '{"city": "Paris", "unit": "celsius"}'
    fake.enqueue(
        Behavior(
            thinking="Weather needs a tool.",
            text="Let me check.",
            tool_call=("get_weather", arguments),
            usage=(20, 9),
            cache=(5, 3),
        )
    )
    with client.messages.stream(
        model="claude-test", max_tokens=100, messages=MESSAGES, tools=TOOLS
    ) as stream:
        text = "".join(stream.text_stream)
        message = stream.get_final_message()
    assert text == "Let me check."
    assert [block.type for block in message.content] == ["thinking", "text", "tool_use"]
    thinking, _, tool_use = message.content
    assert thinking.type == "thinking"
    assert thinking.thinking == "Weather needs a tool."
    assert thinking.signature == signature_for("Weather needs a tool.")
    assert tool_use.type == "tool_use"
    assert tool_use.name == "get_weather"
    assert tool_use.input == {"city": "Paris", "unit": "celsius"}
    assert message.stop_reason == "tool_use"
    usage = message.usage
    assert (usage.input_tokens, usage.output_tokens) == (20, 9)
    assert (usage.cache_read_input_tokens, usage.cache_creation_input_tokens) == (5, 3)


def test_raw_stream_names_every_event(fake: FakeAnthropic) -> None:
    fake.enqueue(Behavior(text="one two three", chunks=2, stop_sequence="END"))
    body = {"model": "m", "max_tokens": 10, "messages": MESSAGES, "stream": True}
    with httpx.Client(base_url=fake.base_url) as http:
        reply = http.post("/v1/messages", json=body, headers=VERSION)
    assert reply.headers["content-type"] == "text/event-stream; charset=utf-8"
    events = sse_events(reply.text)
    assert [name for name, _ in events] == [
        "message_start",
        "content_block_start",
        "ping",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert all(data["type"] == name for name, data in events)
    assert [data["delta"]["text"] for name, data in events if name == "content_block_delta"] == [
        "one",
        " two three",
    ]
    delta = events[-2][1]
    assert delta["delta"] == {"stop_reason": "stop_sequence", "stop_sequence": "END"}
    assert delta["usage"]["output_tokens"] == 3


def test_tool_input_streams_in_fragments(fake: FakeAnthropic) -> None:
    fake.enqueue(Behavior(tool_call=("get_weather", '{"city": "Oslo"}'), chunks=3))
    body = {"model": "m", "max_tokens": 10, "messages": MESSAGES, "stream": True}
    with httpx.Client(base_url=fake.base_url) as http:
        events = sse_events(http.post("/v1/messages", json=body, headers=VERSION).text)
    start = events[1][1]["content_block"]
    assert start["type"] == "tool_use"
    assert start["input"] == {}
    fragments = [
        data["delta"]["partial_json"] for name, data in events if name == "content_block_delta"
    ]
    assert fragments[0] == ""
    assert len(fragments) == 4
    assert "".join(fragments) == '{"city":"Oslo"}'


@pytest.mark.parametrize(
    ("status", "error", "error_type"),
    [
        (400, anthropic.BadRequestError, "invalid_request_error"),
        (401, anthropic.AuthenticationError, "authentication_error"),
        (402, anthropic.PaymentRequiredError, "billing_error"),
        (403, anthropic.PermissionDeniedError, "permission_error"),
        (404, anthropic.NotFoundError, "not_found_error"),
        (413, anthropic.ContentTooLargeError, "request_too_large"),
        (429, anthropic.RateLimitError, "rate_limit_error"),
        (500, anthropic.InternalServerError, "api_error"),
        (504, anthropic.GatewayTimeoutError, "timeout_error"),
        (529, anthropic.OverloadedError, "overloaded_error"),
    ],
)
def test_error_statuses(
    client: anthropic.Anthropic,
    fake: FakeAnthropic,
    status: int,
    error: type[anthropic.APIStatusError],
    error_type: str,
) -> None:
    fake.enqueue(Behavior(status=status, headers={"retry-after": "3"}))
    with pytest.raises(error) as caught:
        client.messages.create(model="m", max_tokens=10, messages=MESSAGES)
    body = caught.value.body
    assert isinstance(body, dict)
    assert body["type"] == "error"
    assert body["error"]["type"] == error_type
    assert body["request_id"].startswith("req_fake_")
    assert caught.value.response.headers["retry-after"] == "3"


def test_custom_error_message(client: anthropic.Anthropic, fake: FakeAnthropic) -> None:
    fake.enqueue(Behavior(status=400, error_message=PROMPT_TOO_LONG))
    with pytest.raises(anthropic.BadRequestError) as caught:
        client.messages.create(model="m", max_tokens=10, messages=MESSAGES)
    assert isinstance(caught.value.body, dict)
    assert caught.value.body["error"]["message"] == PROMPT_TOO_LONG


def test_overloaded_mid_stream(client: anthropic.Anthropic, fake: FakeAnthropic) -> None:
    fake.enqueue(Behavior(text="a b c d", error_after_chunks=2))
    received: list[str] = []
    with (
        pytest.raises(anthropic.APIStatusError) as caught,
        client.messages.stream(model="m", max_tokens=10, messages=MESSAGES) as stream,
    ):
        received.extend(stream.text_stream)
    assert "".join(received) == "a b"
    assert isinstance(caught.value.body, dict)
    assert caught.value.body["error"] == {"type": "overloaded_error", "message": "Overloaded"}


def test_drop_mid_stream_and_before_headers(
    client: anthropic.Anthropic, fake: FakeAnthropic
) -> None:
    fake.enqueue(Behavior(text="a b c d", drop_after_chunks=1), Behavior(drop_before_headers=True))
    received: list[str] = []
    with (
        pytest.raises((anthropic.APIConnectionError, httpx2.RemoteProtocolError)),
        client.messages.stream(model="m", max_tokens=10, messages=MESSAGES) as stream,
    ):
        received.extend(stream.text_stream)
    assert received == ["a"]
    with pytest.raises(anthropic.APIConnectionError):
        client.messages.create(model="m", max_tokens=10, messages=MESSAGES)
    assert fake.count == 2


def test_omit_message_stop_and_malformed(fake: FakeAnthropic) -> None:
    fake.enqueue(Behavior(omit_message_stop=True), Behavior(malformed=True))
    body = {"model": "m", "max_tokens": 10, "messages": MESSAGES, "stream": True}
    with httpx.Client(base_url=fake.base_url) as http:
        names = [
            name
            for name, _ in sse_events(http.post("/v1/messages", json=body, headers=VERSION).text)
        ]
        malformed = http.post("/v1/messages", json={**body, "stream": False}, headers=VERSION)
    assert names[-1] == "message_delta"
    with pytest.raises(json.JSONDecodeError):
        malformed.json()


def test_refuses_what_anthropic_refuses(fake: FakeAnthropic) -> None:
    with httpx.Client(base_url=fake.base_url) as http:
        no_version = http.post("/v1/messages", json={"model": "m", "max_tokens": 1, "messages": []})
        no_limit = http.post("/v1/messages", json={"model": "m", "messages": []}, headers=VERSION)
        other = http.post("/v1/complete", json={}, headers=VERSION)
    assert no_version.status_code == 400
    assert no_version.json()["error"]["message"] == "anthropic-version: header is required"
    assert no_limit.status_code == 400
    assert no_limit.json()["error"] == {
        "type": "invalid_request_error",
        "message": "max_tokens: Field required",
    }
    assert other.status_code == 404
    assert other.json()["error"]["type"] == "not_found_error"
    assert fake.count == 0, "refused requests use no scripted behavior"


def test_refuses_malformed_or_too_many_cache_marks(
    client: anthropic.Anthropic, fake: FakeAnthropic
) -> None:
    mark: anthropic.types.CacheControlEphemeralParam = {"type": "ephemeral"}
    block: anthropic.types.TextBlockParam = {"type": "text", "text": "hi", "cache_control": mark}
    five: list[anthropic.types.MessageParam] = [{"role": "user", "content": [block] * 5}]
    with pytest.raises(anthropic.BadRequestError) as caught:
        client.messages.create(model="m", max_tokens=5, messages=five)
    assert "A maximum of 4 blocks with cache_control" in str(caught.value)
    bad_ttl: Any = {**block, "cache_control": {"type": "ephemeral", "ttl": "2h"}}
    with pytest.raises(anthropic.BadRequestError):
        client.messages.create(
            model="m", max_tokens=5, messages=[{"role": "user", "content": [bad_ttl]}]
        )
    four: list[anthropic.types.MessageParam] = [{"role": "user", "content": [block] * 4}]
    assert client.messages.create(model="m", max_tokens=5, messages=four).content


# -- server tools, thinking and structured outputs --------------------------------------

SEARCH_TURN = web_search_content(
    "capital of France",
    [("https://example.com/paris", "Paris - Wikipedia")],
    [("The capital of France is Paris.", 0), (" Anything else?", None)],
)


@pytest.mark.parametrize("stream", [False, True])
def test_a_web_search_answer_as_the_sdk_reads_it(
    client: anthropic.Anthropic, fake: FakeAnthropic, stream: bool
) -> None:
    fake.enqueue(Behavior(content=SEARCH_TURN, stop_reason="pause_turn"))
    ask: Any = {
        "model": "m",
        "max_tokens": 100,
        "messages": MESSAGES,
        "tools": [{"type": "web_search_20250305", "name": "web_search"}],
    }
    if stream:
        with client.messages.stream(**ask) as events:
            message = events.get_final_message()
    else:
        message = client.messages.create(**ask)
    assert [block.model_dump(exclude_none=True) for block in message.content] == list(SEARCH_TURN)
    assert message.stop_reason == "pause_turn"
    assert message.usage.server_tool_use is not None
    assert message.usage.server_tool_use.web_search_requests == 1


def test_a_streamed_web_search_has_anthropic_s_frames(fake: FakeAnthropic) -> None:
    fake.enqueue(Behavior(content=SEARCH_TURN))
    body = {"model": "m", "max_tokens": 100, "messages": MESSAGES, "stream": True}
    with httpx.Client(base_url=fake.base_url) as http:
        raw = http.post("/v1/messages", json=body, headers=VERSION).text
    starts = [d["content_block"] for e, d in sse_events(raw) if e == "content_block_start"]
    assert starts[1] == {
        "type": "server_tool_use",
        "id": SEARCH_ID,
        "name": "web_search",
        "input": {},
    }
    assert starts[2] == SEARCH_TURN[2]
    assert starts[3] == {"type": "text", "text": ""}
    deltas = [d["delta"]["type"] for e, d in sse_events(raw) if e == "content_block_delta"]
    assert "citations_delta" in deltas
    assert "input_json_delta" in deltas


@pytest.mark.parametrize(
    "fields",
    [
        {"thinking": {"type": "adaptive"}},
        {"thinking": {"type": "adaptive", "display": "omitted"}},
        {"thinking": {"type": "enabled", "budget_tokens": 1024}},
        {"thinking": {"type": "disabled"}},
        {"output_config": {"effort": "max", "format": {"type": "json_schema", "schema": {}}}},
    ],
)
def test_takes_every_thinking_type_and_output_config(
    client: anthropic.Anthropic, fake: FakeAnthropic, fields: Any
) -> None:
    client.messages.create(model="m", max_tokens=2000, messages=MESSAGES, **fields)
    for key, value in fields.items():
        assert fake.requests[-1].json[key] == value


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"thinking": {"type": "sometimes"}}, "thinking.type"),
        ({"thinking": {"type": "adaptive", "budget_tokens": 2000}}, "Extra inputs"),
        ({"thinking": {"type": "enabled", "budget_tokens": 512}}, "budget_tokens"),
        ({"thinking": {"type": "enabled", "budget_tokens": 4000}}, "max_tokens"),
        ({"output_config": {"effort": "huge"}}, "output_config.effort"),
        ({"output_config": {"format": {"type": "json_object"}}}, "output_config.format"),
        ({"tools": [{"type": "web_search_20250305", "name": "search"}]}, "'web_search'"),
    ],
)
def test_refuses_malformed_thinking_output_config_and_server_tools(
    fake: FakeAnthropic, fields: Any, message: str
) -> None:
    body = {"model": "m", "max_tokens": 2000, "messages": MESSAGES, **fields}
    with httpx.Client(base_url=fake.base_url) as http:
        answer = http.post("/v1/messages", json=body, headers=VERSION)
    assert answer.status_code == 400
    assert message in answer.json()["error"]["message"]
