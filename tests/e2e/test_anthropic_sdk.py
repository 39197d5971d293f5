"""The official anthropic SDK against a live gw: POST /v1/messages served by an OpenAI upstream."""

from __future__ import annotations

import json

import anthropic
import httpx
import pytest

from e2e.gw_process import GwServer
from fakes.openai_upstream import DEFAULT_TEXT, Behavior, FakeOpenAI

WEATHER_TOOL = {
    "name": "get_weather",
    "description": "Weather for a city",
    "input_schema": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
}
HELLO = [{"role": "user", "content": "hello"}]


def sdk(gw: GwServer) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=gw.url, api_key="anything", max_retries=0)


def test_a_message_served_by_an_openai_upstream(gw: GwServer, primary: FakeOpenAI) -> None:
    raw = sdk(gw).messages.with_raw_response.create(
        model="chat", max_tokens=64, system="be brief", messages=HELLO
    )
    message = raw.parse()
    assert message.type == "message"
    assert message.id.startswith("msg_")
    assert [block.type for block in message.content] == ["text"]
    assert message.content[0].text == DEFAULT_TEXT  # type: ignore[union-attr]
    assert message.stop_reason == "end_turn"
    assert message.usage.input_tokens > 0
    assert message.usage.output_tokens > 0
    assert raw.headers["x-gw-route"] == "primary/gpt-a"
    # The SDK's request-id accessor shows gw's id (the `request-id` header).
    assert message._request_id == raw.headers["x-gw-request-id"]
    sent = primary.requests[-1].json
    assert sent["messages"] == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "hello"},
    ]
    assert sent["max_tokens"] == 64


def test_streaming_text_with_the_sdk_helpers(gw: GwServer, primary: FakeOpenAI) -> None:
    primary.enqueue(Behavior(text="one two three four"))
    with sdk(gw).messages.stream(model="chat", max_tokens=64, messages=HELLO) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text == "one two three four"
    assert final.stop_reason == "end_turn"
    assert final.usage.output_tokens > 0


@pytest.mark.parametrize("streaming", [False, True])
def test_tool_use_round_trip(gw: GwServer, primary: FakeOpenAI, streaming: bool) -> None:
    client = sdk(gw)
    primary.enqueue(Behavior(tool_call=("get_weather", '{"city": "Paris"}')))
    ask = {"model": "chat", "max_tokens": 64, "tools": [WEATHER_TOOL]}
    messages: list[dict[str, object]] = [{"role": "user", "content": "weather in Paris?"}]
    if streaming:
        with client.messages.stream(**ask, messages=messages) as stream:  # type: ignore[arg-type]
            first = stream.get_final_message()
    else:
        first = client.messages.create(**ask, messages=messages)  # type: ignore[arg-type]
    assert first.stop_reason == "tool_use"
    call = next(block for block in first.content if block.type == "tool_use")
    assert call.name == "get_weather"
    assert call.input == {"city": "Paris"}

    messages += [
        {"role": "assistant", "content": [block.model_dump() for block in first.content]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "sunny"}],
        },
    ]
    second = client.messages.create(**ask, messages=messages)  # type: ignore[arg-type]
    assert second.stop_reason == "end_turn"
    sent = primary.requests[-1].json
    assert sent["messages"][1]["tool_calls"][0]["function"] == {
        "name": "get_weather",
        "arguments": json.dumps({"city": "Paris"}, separators=(",", ":")),
    }
    assert sent["messages"][2] == {"role": "tool", "tool_call_id": call.id, "content": "sunny"}


def test_image_input_reaches_the_upstream(gw: GwServer, primary: FakeOpenAI) -> None:
    image = {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}
    sdk(gw).messages.create(
        model="chat",
        max_tokens=16,
        messages=[
            {
                "role": "user",
                "content": [
                    {"type": "image", "source": image},  # type: ignore[typeddict-item]
                    {"type": "text", "text": "what is this?"},
                ],
            }
        ],
    )
    parts = primary.requests[-1].json["messages"][0]["content"]
    assert parts[0] == {
        "type": "image_url",
        "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="},
    }
    assert parts[1] == {"type": "text", "text": "what is this?"}


def test_errors_come_in_anthropic_shape(gw: GwServer, primary: FakeOpenAI) -> None:
    with pytest.raises(anthropic.NotFoundError) as missing:
        sdk(gw).messages.create(model="no-such-route", max_tokens=8, messages=HELLO)
    body = missing.value.body
    assert isinstance(body, dict)
    assert body["type"] == "error"
    assert body["error"]["type"] == "not_found_error"
    assert body["gw"]["code"] == "model_not_found"

    primary.enqueue(Behavior(status=500), Behavior(status=500))
    with pytest.raises(anthropic.InternalServerError) as failed:
        sdk(gw).messages.create(model="solo", max_tokens=8, messages=HELLO)
    assert failed.value.status_code == 502
    assert failed.value.body["gw"]["code"] == "upstream_error"  # type: ignore[index]
    assert failed.value.request_id == failed.value.body["gw"]["request_id"]  # type: ignore[index]


def test_a_bad_body_is_a_400_naming_the_field(gw: GwServer) -> None:
    answer = httpx.post(f"{gw.url}/v1/messages", json={"model": "chat", "messages": HELLO})
    assert answer.status_code == 400
    body = answer.json()
    assert body["error"]["type"] == "invalid_request_error"
    assert "max_tokens" in body["error"]["message"]
    assert answer.headers["x-gw-request-id"]


def test_the_key_is_accepted_from_x_api_key(gw: GwServer) -> None:
    # Open mode on loopback accepts any key; the SDK sends it as x-api-key.
    message = sdk(gw).messages.create(model="mock", max_tokens=16, messages=HELLO)
    assert message.content


def test_count_tokens_answers_an_estimate(gw: GwServer) -> None:
    counted = sdk(gw).messages.count_tokens(model="chat", messages=HELLO)
    assert counted.input_tokens > 0


def test_explain_shows_the_translation(gw: GwServer, primary: FakeOpenAI) -> None:
    raw = sdk(gw).messages.with_raw_response.create(model="chat", max_tokens=8, messages=HELLO)
    request_id = raw.headers["x-gw-request-id"]
    gw.wait_for_trace(request_id)
    shown = gw.cli("explain", request_id)
    assert "Anthropic messages -> IR -> OpenAI chat" in shown.stdout
    # The message id the SDK user holds finds the same request.
    by_message_id = gw.cli("explain", raw.parse().id, "--json")
    assert json.loads(by_message_id.stdout)["request_id"] == request_id
    too_short = gw.cli("explain", "req_", check=False)
    assert too_short.returncode == 1
    assert "a prefix needs 8 characters" in too_short.stderr


def test_models_list_in_anthropic_shape(gw: GwServer) -> None:
    names = [model.id for model in sdk(gw).models.list()]
    assert "chat" in names
    assert "mock" in names
    model = sdk(gw).models.retrieve("chat")
    assert (model.id, model.type, model.display_name) == ("chat", "model", "chat")
    with pytest.raises(anthropic.NotFoundError):
        sdk(gw).models.retrieve("no-such-route")


def test_a_tool_call_cut_by_the_limit_ends_the_answer_at_the_limit(
    gw: GwServer, primary: FakeOpenAI, backup: FakeOpenAI
) -> None:
    # Arguments cut short by a token limit are not a JSON object, so no tool_use input
    # exists for them: the call is dropped and the answer ends at the limit, from the same
    # target, with no retry (the limit was the client's own).
    cut = Behavior(tool_call=("get_weather", '{"city": "Par'), finish_reason="length")
    primary.enqueue(cut)
    backup_calls = backup.count
    raw = sdk(gw).messages.with_raw_response.create(
        model="chat",
        max_tokens=64,
        tools=[WEATHER_TOOL],
        messages=HELLO,  # type: ignore[list-item]
    )
    assert raw.http_response.status_code == 200
    assert raw.headers["x-gw-route"] == "primary/gpt-a"
    message = raw.parse()
    assert message.stop_reason == "max_tokens"
    assert [block.type for block in message.content if block.type == "tool_use"] == []
    trace = gw.wait_for_trace(raw.headers["x-gw-request-id"])
    assert [(a["outcome"], a["error_code"]) for a in trace["attempts"]] == [("answered", None)]
    assert backup.count == backup_calls


def test_an_openai_refusal_reaches_an_anthropic_client_as_text(
    gw: GwServer, primary: FakeOpenAI
) -> None:
    primary.enqueue(Behavior(text="I cannot help with that.", refusal=True))
    message = sdk(gw).messages.create(model="chat", max_tokens=8, messages=HELLO)
    assert [block.type for block in message.content] == ["text"]
    assert message.content[0].text == "I cannot help with that."  # type: ignore[union-attr]
