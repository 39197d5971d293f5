"""The official openai SDK, sync and async, streaming and not, with tools, against a live gw."""

from __future__ import annotations

import asyncio
import json

import openai
import pydantic
import pytest

from e2e.gw_process import GwServer
from fakes.openai_upstream import DEFAULT_TEXT, Behavior, FakeOpenAI

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}


def sdk(gw: GwServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=gw.base_url, api_key="anything", max_retries=0)


def test_sync_non_streaming_through_a_real_upstream(gw: GwServer, primary: FakeOpenAI) -> None:
    raw = sdk(gw).chat.completions.with_raw_response.create(
        model="chat", messages=[{"role": "user", "content": "hello"}], max_tokens=50
    )
    completion = raw.parse()
    assert completion.choices[0].message.content == DEFAULT_TEXT
    assert completion.choices[0].finish_reason == "stop"
    assert completion.usage is not None
    assert completion.usage.total_tokens > 0
    assert raw.headers["x-gw-route"] == "primary/gpt-a"
    assert raw.headers["x-gw-queue-ms"] == "0"  # a free slot: no wait
    # The SDK's request-id accessor shows gw's id (x-request-id), not the upstream's.
    assert completion._request_id == raw.headers["x-gw-request-id"]
    sent = primary.requests[-1]
    assert sent.json is not None
    assert sent.json["model"] == "gpt-a"
    assert sent.json["max_tokens"] == 50
    assert sent.headers["authorization"] == "Bearer sk-test-secret-0123"


def test_no_max_tokens_is_never_invented(gw: GwServer, primary: FakeOpenAI) -> None:
    sdk(gw).chat.completions.create(model="chat", messages=[{"role": "user", "content": "x"}])
    assert primary.requests[-1].json is not None
    assert "max_tokens" not in primary.requests[-1].json


def test_sync_streaming_with_usage(gw: GwServer, primary: FakeOpenAI) -> None:
    primary.enqueue(Behavior(text="one two three four"))
    stream = sdk(gw).chat.completions.create(
        model="chat",
        messages=[{"role": "user", "content": "count"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "one two three four"
    assert chunks[-1].choices == []
    assert chunks[-1].usage is not None
    assert chunks[-1].usage.completion_tokens > 0
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert finishes[-1] == "stop"


def test_async_client_streaming_and_not(gw: GwServer) -> None:
    async def run() -> tuple[str, str]:
        client = openai.AsyncOpenAI(base_url=gw.base_url, api_key="x", max_retries=0)
        messages = [{"role": "user", "content": "async please"}]
        whole = await client.chat.completions.create(model="mock", messages=messages)  # type: ignore[arg-type]
        parts = []
        stream = await client.chat.completions.create(
            model="mock",
            messages=messages,  # type: ignore[arg-type]
            stream=True,
        )
        async for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                parts.append(chunk.choices[0].delta.content)
        await client.close()
        return whole.choices[0].message.content or "", "".join(parts)

    whole, streamed = asyncio.run(run())
    assert whole.startswith("Mock answer")
    assert streamed == whole


@pytest.mark.parametrize("stream", [False, True])
def test_tool_calls_round_trip_through_the_upstream(
    gw: GwServer, primary: FakeOpenAI, stream: bool
) -> None:
    primary.enqueue(Behavior(tool_call=("get_weather", '{"city": "Paris"}')))
    client = sdk(gw)
    messages: list[dict[str, object]] = [{"role": "user", "content": "weather in Paris?"}]
    if stream:
        with client.chat.completions.stream(
            model="chat",
            messages=messages,
            tools=[WEATHER_TOOL],  # type: ignore[arg-type, list-item]
        ) as events:
            final = events.get_final_completion()
        message = final.choices[0].message
        finish = final.choices[0].finish_reason
    else:
        completion = client.chat.completions.create(
            model="chat",
            messages=messages,
            tools=[WEATHER_TOOL],  # type: ignore[arg-type, list-item]
        )
        message = completion.choices[0].message
        finish = completion.choices[0].finish_reason
    assert finish == "tool_calls"
    assert message.tool_calls is not None
    call = message.tool_calls[0]
    assert call.function.name == "get_weather"
    assert json.loads(call.function.arguments) == {"city": "Paris"}
    sent = primary.requests[-1].json
    assert sent is not None
    assert sent["tools"][0]["function"]["name"] == "get_weather"

    # The agent loop's second turn: the tool result goes upstream in OpenAI's shape.
    messages += [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": call.id, "type": "function",
             "function": {"name": "get_weather", "arguments": call.function.arguments}}]},
        {"role": "tool", "tool_call_id": call.id, "content": "18C, sunny"},
    ]  # fmt: skip
    answer = client.chat.completions.create(
        model="chat",
        messages=messages,
        tools=[WEATHER_TOOL],  # type: ignore[arg-type, list-item]
    )
    assert answer.choices[0].message.content == DEFAULT_TEXT
    second = primary.requests[-1].json
    assert second is not None
    assert second["messages"][-1] == {
        "role": "tool",
        "tool_call_id": call.id,
        "content": "18C, sunny",
    }
    assert second["messages"][-2]["tool_calls"][0]["id"] == call.id


def test_mock_calls_a_tool_when_offered_one(gw: GwServer) -> None:
    completion = sdk(gw).chat.completions.create(
        model="mock",
        messages=[{"role": "user", "content": "use the tool"}],
        tools=[WEATHER_TOOL],  # type: ignore[list-item]
    )
    assert completion.choices[0].finish_reason == "tool_calls"
    assert completion.choices[0].message.tool_calls is not None
    assert completion.choices[0].message.tool_calls[0].function.name == "get_weather"


def test_images_and_response_format_reach_the_upstream(gw: GwServer, primary: FakeOpenAI) -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}
    sdk(gw).chat.completions.create(
        model="chat",
        messages=[
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "describe"},
                    {
                        "type": "image_url",
                        "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="},
                    },
                    {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}},
                ],
            }
        ],
        response_format={
            "type": "json_schema",
            "json_schema": {"name": "answer", "schema": schema, "strict": True},
        },
    )
    sent = primary.requests[-1].json
    assert sent is not None
    parts = sent["messages"][0]["content"]
    assert parts[1]["image_url"]["url"] == "data:image/png;base64,iVBORw0KGgo="
    assert parts[2]["image_url"]["url"] == "https://example.com/cat.png"
    assert sent["response_format"]["json_schema"]["schema"] == schema


def test_models_lists_the_routes(gw: GwServer) -> None:
    names = {model.id for model in sdk(gw).models.list()}
    assert {"chat", "strict", "solo", "mock"} <= names


def test_models_retrieve_one_route(gw: GwServer) -> None:
    model = sdk(gw).models.retrieve("chat")
    assert (model.id, model.object, model.owned_by) == ("chat", "model", "gw")
    with pytest.raises(openai.NotFoundError) as unknown:
        sdk(gw).models.retrieve("no-such-route")
    assert unknown.value.code == "model_not_found"


class Answer(pydantic.BaseModel):
    city: str


def test_a_refusal_reaches_the_sdk_as_a_refusal(gw: GwServer, primary: FakeOpenAI) -> None:
    text = "I'm sorry, I cannot help with that."
    ask = [{"role": "user", "content": "which city?"}]
    primary.enqueue(Behavior(text=text, refusal=True))
    parsed = sdk(gw).chat.completions.parse(model="chat", messages=ask, response_format=Answer)
    message = parsed.choices[0].message
    assert (message.refusal, message.content, message.parsed) == (text, None, None)

    primary.enqueue(Behavior(text=text, refusal=True))
    with sdk(gw).chat.completions.stream(
        model="chat", messages=ask, response_format=Answer
    ) as stream:
        final = stream.get_final_completion()
    streamed = final.choices[0].message
    assert (streamed.refusal, streamed.parsed) == (text, None)
    assert not streamed.content
