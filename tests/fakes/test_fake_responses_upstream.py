"""The fake Responses upstream, checked through the real `openai` SDK and its own types:
every stream event validates as the SDK's ``ResponseStreamEvent``, every body as its
``Response``, so the fake cannot drift from the wire format gw is tested against."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pydantic
import pytest
from openai.types.responses import Response, ResponseStreamEvent

from .responses_answer import ENCRYPTED_INCLUDE, encrypted_for
from .responses_upstream import DEFAULT_TEXT, Behavior, FakeResponses

EVENTS: pydantic.TypeAdapter[Any] = pydantic.TypeAdapter(ResponseStreamEvent)
TOOL = {
    "type": "function",
    "name": "get_weather",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    "strict": False,
}
EVERYTHING = Behavior(
    reasoning=("First I think.", "Then I check."),
    web_search="weather in Paris",
    text="It is sunny.",
    tool_call=("get_weather", '{"city": "Paris"}'),
)


@pytest.fixture
def fake() -> Iterator[FakeResponses]:
    with FakeResponses() as server:
        yield server


@pytest.fixture
def client(fake: FakeResponses) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=fake.base_url, api_key="sk-test", max_retries=0, timeout=10) as sdk:
        yield sdk


def raw_stream(fake: FakeResponses, body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(event name, data) of each frame of a streamed answer, read without the SDK."""
    with httpx.stream("POST", f"{fake.base_url}/responses", json={**body, "stream": True}) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        text = r.read().decode()
    frames = []
    for block in text.split("\n\n"):
        if not block.strip():
            continue
        name_line, data_line = block.split("\n")
        frames.append((name_line.removeprefix("event: "), json.loads(data_line[len("data: ") :])))
    return frames


def validated(frames: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    """Each frame as the SDK's typed event, after checking names and sequence numbers."""
    assert [data["sequence_number"] for _, data in frames] == list(range(len(frames)))
    assert all(name == data["type"] for name, data in frames)
    return [EVENTS.validate_python(data) for _, data in frames]


def test_a_whole_answer_is_a_valid_response(client: openai.OpenAI, fake: FakeResponses) -> None:
    raw = client.responses.with_raw_response.create(model="gpt-test", input="Say hello to me")
    assert raw.headers["x-request-id"].startswith("req_")
    body = json.loads(raw.http_response.text)
    Response.model_validate(body)
    answer = raw.parse()
    assert answer.output_text == DEFAULT_TEXT
    assert answer.status == "completed"
    assert answer.usage is not None
    assert (answer.usage.input_tokens, answer.usage.output_tokens) == (4, 4)
    assert fake.requests[0].json["input"] == "Say hello to me"


def test_a_stream_is_the_numbered_event_sequence(fake: FakeResponses) -> None:
    fake.default = Behavior(text="one two three", chunks=2)
    events = validated(raw_stream(fake, {"model": "gpt-test", "input": "hi"}))
    assert [event.type for event in events] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert [e.delta for e in events if e.type == "response.output_text.delta"] == [
        "one",
        " two three",
    ]
    completed = events[-1].response
    assert completed.output_text == "one two three"
    assert completed.usage.output_tokens == 3


def test_the_sdk_accumulates_reasoning_search_text_and_a_call(
    client: openai.OpenAI, fake: FakeResponses
) -> None:
    fake.default = EVERYTHING
    with client.responses.stream(
        model="gpt-test", input="weather?", tools=[TOOL], include=[ENCRYPTED_INCLUDE]
    ) as stream:
        final = stream.get_final_response()
    kinds = [item.type for item in final.output]
    assert kinds == ["reasoning", "web_search_call", "message", "function_call"]
    reasoning, search, _, call = final.output
    assert reasoning.type == "reasoning"
    assert [part.text for part in reasoning.summary] == ["First I think.", "Then I check."]
    assert reasoning.encrypted_content == encrypted_for("First I think. Then I check.")
    assert search.type == "web_search_call"
    assert call.type == "function_call"
    assert (call.name, call.arguments) == ("get_weather", '{"city": "Paris"}')
    assert final.output_text == "It is sunny."
    assert final.usage is not None
    assert final.usage.output_tokens_details.reasoning_tokens == 6


def test_every_event_kind_validates(fake: FakeResponses) -> None:
    fake.enqueue(EVERYTHING, Behavior(refusal=True))
    first = raw_stream(fake, {"model": "m", "input": "x", "include": [ENCRYPTED_INCLUDE]})
    second = raw_stream(fake, {"model": "m", "input": "x"})
    names = {event.type for event in [*validated(first), *validated(second)]}
    assert {
        "response.reasoning_summary_part.added",
        "response.reasoning_summary_text.delta",
        "response.reasoning_summary_text.done",
        "response.web_search_call.searching",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.refusal.delta",
    } <= names


def test_encrypted_reasoning_only_when_included(client: openai.OpenAI, fake: FakeResponses) -> None:
    fake.default = Behavior(reasoning=("Hm.",))
    answer = client.responses.create(model="m", input="x")
    assert answer.output[0].type == "reasoning"
    assert answer.output[0].encrypted_content is None


@pytest.mark.parametrize(
    ("behavior", "status", "reason"),
    [
        (Behavior(ending="incomplete"), "incomplete", "max_output_tokens"),
        (
            Behavior(ending="incomplete", incomplete_reason="content_filter"),
            "incomplete",
            "content_filter",
        ),
    ],
)
def test_incomplete_answers(
    fake: FakeResponses, behavior: Behavior, status: str, reason: str
) -> None:
    fake.enqueue(behavior, behavior)
    events = validated(raw_stream(fake, {"model": "m", "input": "x"}))
    assert events[-1].type == "response.incomplete"
    assert events[-1].response.incomplete_details.reason == reason
    whole = httpx.post(f"{fake.base_url}/responses", json={"model": "m", "input": "x"}).json()
    assert Response.model_validate(whole).status == status


def test_a_failed_stream_ends_with_response_failed(fake: FakeResponses) -> None:
    fake.default = Behavior(ending="failed", failure_code="server_error")
    events = validated(raw_stream(fake, {"model": "m", "input": "x"}))
    assert [event.type for event in events] == [
        "response.created",
        "response.in_progress",
        "response.failed",
    ]
    assert events[-1].response.error.code == "server_error"


def test_error_events_flat_and_nested(fake: FakeResponses) -> None:
    fake.enqueue(
        Behavior(error_after_chunks=1, error_code="rate_limit_exceeded"),
        Behavior(error_after_chunks=1, nested_error=True, error_code="too_many_requests"),
    )
    flat = raw_stream(fake, {"model": "m", "input": "x"})
    assert flat[-1][1]["code"] == "rate_limit_exceeded"
    assert validated(flat)[-1].type == "error"
    nested = raw_stream(fake, {"model": "m", "input": "x"})
    assert nested[-1][1]["error"]["code"] == "too_many_requests"


def test_error_statuses_have_openai_bodies(client: openai.OpenAI, fake: FakeResponses) -> None:
    fake.enqueue(Behavior(status=429, headers={"retry-after": "3"}))
    with pytest.raises(openai.RateLimitError) as caught:
        client.responses.create(model="m", input="x")
    assert caught.value.response.headers["retry-after"] == "3"
    assert caught.value.code == "rate_limit_exceeded"


def test_unknown_parameters_are_refused_before_the_script(fake: FakeResponses) -> None:
    fake.enqueue(Behavior(status=500))
    for body in (
        {"model": "m", "messages": []},
        {"model": "m", "input": "x", "stream_options": {"include_usage": True}},
        {
            "model": "m",
            "input": [{"role": "assistant", "content": [{"type": "input_text", "text": "x"}]}],
        },
    ):
        answer = httpx.post(f"{fake.base_url}/responses", json=body)
        assert answer.status_code == 400, body
    assert fake.pending == 1


def test_a_dropped_stream_is_cut(fake: FakeResponses) -> None:
    fake.default = Behavior(text="a b c d", drop_after_chunks=2)
    with (
        pytest.raises(httpx.RemoteProtocolError),
        httpx.stream(
            "POST", f"{fake.base_url}/responses", json={"model": "m", "input": "x", "stream": True}
        ) as r,
    ):
        r.read()


def test_azure_paths(fake: FakeResponses) -> None:
    origin = fake.base_url.removesuffix("/v1")
    for url in (f"{origin}/openai/v1/responses", f"{origin}/openai/responses?api-version=preview"):
        answer = httpx.post(url, json={"model": "deployment", "input": "x"})
        assert answer.status_code == 200
        assert answer.json()["model"] == "deployment"
