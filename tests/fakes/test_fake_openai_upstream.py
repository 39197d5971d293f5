"""The fake OpenAI upstream, checked through the real `openai` SDK and raw httpx."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator

import httpx
import openai
import pytest

from .openai_upstream import DEFAULT_TEXT, Behavior, FakeOpenAI, fake_embedding
from e2e.waiting import wait_until

MESSAGES: list[openai.types.chat.ChatCompletionMessageParam] = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Say hello to me"},
]
TOOLS: list[openai.types.chat.ChatCompletionToolParam] = [
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}
]


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


@pytest.fixture
def client(fake: FakeOpenAI) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=fake.base_url, api_key="sk-test", max_retries=0, timeout=10) as sdk:
        yield sdk


def test_non_stream_completion(fake: FakeOpenAI, client: openai.OpenAI) -> None:
    raw = client.chat.completions.with_raw_response.create(model="gpt-test", messages=MESSAGES)
    assert raw.headers["x-request-id"].startswith("req_")
    assert raw.headers["content-type"] == "application/json"
    completion = raw.parse()
    assert completion.id.startswith("chatcmpl-fake-")
    assert completion.model == "gpt-test"
    choice = completion.choices[0]
    assert (choice.message.role, choice.message.content) == ("assistant", DEFAULT_TEXT)
    assert choice.finish_reason == "stop"
    usage = completion.usage
    assert usage is not None
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (6, 4, 10)
    assert usage.prompt_tokens_details is not None
    assert usage.prompt_tokens_details.cached_tokens == 0
    assert usage.completion_tokens_details is not None
    assert usage.completion_tokens_details.reasoning_tokens == 0
    assert fake.count == 1


def test_stream_with_usage(client: openai.OpenAI, fake: FakeOpenAI) -> None:
    fake.default = Behavior(text="one two three four five", chunks=3, usage=(11, 5))
    chunks = list(
        client.chat.completions.create(
            model="gpt-test",
            messages=MESSAGES,
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    assert chunks[0].choices[0].delta.role == "assistant"
    assert chunks[0].choices[0].delta.content == ""
    content = [c.choices[0].delta.content for c in chunks[1:] if c.choices]
    assert content[:-1] == ["one", " two three", " four five"]
    assert "".join(filter(None, content)) == "one two three four five"
    assert chunks[-2].choices[0].finish_reason == "stop"
    assert all(c.usage is None for c in chunks[:-1])
    last = chunks[-1]
    assert last.choices == []
    assert last.usage is not None
    assert (last.usage.prompt_tokens, last.usage.completion_tokens) == (11, 5)
    assert {c.id for c in chunks} == {chunks[0].id}


def test_stream_without_include_usage_has_no_usage_chunk(client: openai.OpenAI) -> None:
    chunks = list(client.chat.completions.create(model="m", messages=MESSAGES, stream=True))
    assert all(c.choices and c.usage is None for c in chunks)
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == DEFAULT_TEXT


def test_tool_call_stream_accumulates(client: openai.OpenAI, fake: FakeOpenAI) -> None:
    arguments = json.dumps({"city": "Paris", "unit": "celsius"})
    fake.enqueue(Behavior(tool_call=("get_weather", arguments)))
    stream = client.chat.completions.create(
        model="gpt-test", messages=MESSAGES, tools=TOOLS, stream=True
    )
    name, fragments, finish = None, [], None
    for chunk in stream:
        choice = chunk.choices[0]
        finish = choice.finish_reason or finish
        for call in choice.delta.tool_calls or []:
            assert call.index == 0
            if call.function and call.function.name:
                name = call.function.name
            if call.function and call.function.arguments:
                fragments.append(call.function.arguments)
    assert name == "get_weather"
    assert len(fragments) > 1
    assert json.loads("".join(fragments)) == {"city": "Paris", "unit": "celsius"}
    assert finish == "tool_calls"


def test_tool_call_non_stream(client: openai.OpenAI, fake: FakeOpenAI) -> None:
    fake.enqueue(Behavior(tool_call=("get_weather", '{"city": "Oslo"}')))
    completion = client.chat.completions.create(model="m", messages=MESSAGES, tools=TOOLS)
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content is None
    calls = choice.message.tool_calls
    assert calls is not None
    assert calls[0].type == "function"
    assert (calls[0].function.name, calls[0].function.arguments) == (
        "get_weather",
        '{"city": "Oslo"}',
    )


def test_rate_limit_then_success(client: openai.OpenAI, fake: FakeOpenAI) -> None:
    fake.enqueue(Behavior(status=429, headers={"retry-after": "1"}))
    with pytest.raises(openai.RateLimitError) as caught:
        client.chat.completions.create(model="gpt-test", messages=MESSAGES)
    assert caught.value.status_code == 429
    assert caught.value.response.headers["retry-after"] == "1"
    assert caught.value.code == "rate_limit_exceeded"
    assert caught.value.type == "requests"
    assert fake.pending == 0
    # The script is used up: the default (success) applies again.
    assert client.chat.completions.create(model="m", messages=MESSAGES).choices
    assert fake.count == 2


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (400, openai.BadRequestError),
        (401, openai.AuthenticationError),
        (500, openai.InternalServerError),
        (503, openai.InternalServerError),
    ],
)
def test_error_statuses(
    client: openai.OpenAI, fake: FakeOpenAI, status: int, error: type[openai.APIStatusError]
) -> None:
    fake.enqueue(Behavior(status=status))
    with pytest.raises(error) as caught:
        client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
    body = caught.value.body
    assert isinstance(body, dict)
    assert set(body) == {"message", "type", "param", "code"}


def test_custom_error_body(client: openai.OpenAI, fake: FakeOpenAI) -> None:
    custom = {"error": {"message": "quota", "type": "insufficient_quota", "param": None,
                        "code": "insufficient_quota"}}  # fmt: skip
    fake.enqueue(Behavior(status=429, error_body=custom))
    with pytest.raises(openai.RateLimitError) as caught:
        client.chat.completions.create(model="m", messages=MESSAGES)
    assert caught.value.code == "insufficient_quota"


def test_drop_mid_stream_raises(client: openai.OpenAI, fake: FakeOpenAI) -> None:
    fake.enqueue(Behavior(text="a b c d e f", drop_after_chunks=2))
    received: list[str] = []
    stream = client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
    with pytest.raises((httpx.RemoteProtocolError, openai.APIConnectionError)):
        received.extend(c.choices[0].delta.content or "" for c in stream)
    assert "".join(received) == "a b"


def test_drop_before_headers_and_mid_body(client: openai.OpenAI, fake: FakeOpenAI) -> None:
    fake.enqueue(Behavior(drop_before_headers=True), Behavior(drop_after_chunks=0))
    for _ in range(2):
        with pytest.raises(openai.APIConnectionError):
            client.chat.completions.create(model="m", messages=MESSAGES)
    assert fake.count == 2
    assert client.chat.completions.create(model="m", messages=MESSAGES).choices


def test_a_client_that_hangs_up_mid_stream_is_counted(fake: FakeOpenAI) -> None:
    words = " ".join(f"w{i}" for i in range(50))
    fake.enqueue(Behavior(text=words, delay_between_chunks=0.05), Behavior(text=words))
    payload = {"model": "m", "messages": MESSAGES, "stream": True}
    with httpx.Client(base_url=fake.base_url, timeout=10) as http:
        with http.stream("POST", "/chat/completions", json=payload) as answer:
            next(line for line in answer.iter_lines() if '"content":"w0"' in line)
        whole = http.post("/chat/completions", json=payload)  # read to its end
    assert whole.text.endswith("data: [DONE]\n\n")
    wait_until(lambda: fake.disconnects, "the fake to notice the hang-up at its next write")
    assert (fake.count, fake.disconnects) == (2, 1)
    fake.clear()
    assert fake.disconnects == 0


def test_malformed_bodies_raise(client: openai.OpenAI, fake: FakeOpenAI) -> None:
    fake.enqueue(Behavior(malformed=True), Behavior(malformed=True))
    with pytest.raises(json.JSONDecodeError):
        client.chat.completions.create(model="m", messages=MESSAGES)
    stream = client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
    with pytest.raises(json.JSONDecodeError):
        list(stream)


def test_delays_are_survivable(client: openai.OpenAI, fake: FakeOpenAI) -> None:
    fake.enqueue(
        Behavior(delay_before_headers=0.01, delay_before_first_chunk=0.01),
        Behavior(delay_before_first_chunk=0.01, delay_between_chunks=0.01),
    )
    assert client.chat.completions.create(model="m", messages=MESSAGES).choices
    stream = client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
    assert "".join(c.choices[0].delta.content or "" for c in stream) == DEFAULT_TEXT


def test_requests_are_recorded(client: openai.OpenAI, fake: FakeOpenAI) -> None:
    client.chat.completions.create(model="gpt-test", messages=MESSAGES, temperature=0)
    (request,) = fake.requests
    assert (request.method, request.path) == ("POST", "/v1/chat/completions")
    assert request.headers["authorization"] == "Bearer sk-test"
    assert request.headers["content-type"] == "application/json"
    assert request.json["model"] == "gpt-test"
    assert request.json["messages"] == MESSAGES
    assert request.json["temperature"] == 0
    fake.clear()
    assert (fake.requests, fake.count) == ([], 0)


def test_models_and_unknown_paths(client: openai.OpenAI, fake: FakeOpenAI) -> None:
    assert "gpt-4o-mini" in {model.id for model in client.models.list()}
    with httpx.Client(base_url=fake.base_url) as http:
        missing = http.post("/audio/speech", json={})
        assert missing.status_code == 404
        assert missing.json()["error"]["message"] == "Invalid URL (POST /v1/audio/speech)"
        assert http.post("/chat/completions", content=b"not json").status_code == 400
    assert fake.count == 0


def test_chunked_request_body_and_keep_alive(fake: FakeOpenAI) -> None:
    def body() -> Iterator[bytes]:
        yield b'{"model": "chunky", '
        yield b'"messages": []}'

    with httpx.Client(base_url=fake.base_url) as http:
        first = http.post("/chat/completions", content=body())
        second = http.post("/chat/completions", json={"model": "m", "messages": []})
    assert first.json()["model"] == "chunky"
    assert second.json()["choices"][0]["message"]["content"] == DEFAULT_TEXT
    assert fake.requests[0].headers["transfer-encoding"] == "chunked"


def test_works_from_another_event_loop(fake: FakeOpenAI) -> None:
    async def call() -> str | None:
        async with openai.AsyncOpenAI(base_url=fake.base_url, api_key="k", max_retries=0) as sdk:
            completion = await sdk.chat.completions.create(model="m", messages=MESSAGES)
            return completion.choices[0].message.content

    assert asyncio.run(call()) == DEFAULT_TEXT


def test_stop_cuts_a_request_in_flight() -> None:
    fake = FakeOpenAI().start()
    fake.enqueue(Behavior(delay_before_headers=60))

    def stop_once_the_request_arrived() -> None:
        wait_until(lambda: fake.count, "the request to arrive")
        fake.stop()

    stopper = threading.Thread(target=stop_once_the_request_arrived)
    stopper.start()
    try:
        with (
            openai.OpenAI(base_url=fake.base_url, api_key="k", max_retries=0, timeout=30) as sdk,
            pytest.raises(openai.APIConnectionError),
        ):
            sdk.chat.completions.create(model="m", messages=MESSAGES)
    finally:
        stopper.join()
        fake.stop()


def test_embeddings_in_both_encodings_with_usage(fake: FakeOpenAI, client: openai.OpenAI) -> None:
    # The SDK asks for base64 unless told otherwise, and decodes it itself.
    sdk = client.embeddings.create(model="text-embedding-3-small", input=["a b c", "d"])
    assert [item.embedding for item in sdk.data] == [fake_embedding("a b c"), fake_embedding("d")]
    assert [item.index for item in sdk.data] == [0, 1]
    assert (sdk.usage.prompt_tokens, sdk.usage.total_tokens) == (4, 4)
    assert fake.requests[-1].json["encoding_format"] == "base64"
    floats = client.embeddings.create(
        model="m", input=[[1, 2, 3]], encoding_format="float", dimensions=4
    )
    assert floats.data[0].embedding == fake_embedding([1, 2, 3], 4)
    assert floats.usage.prompt_tokens == 3
    assert fake.count == 2


def test_embeddings_faults_and_azure_path(fake: FakeOpenAI) -> None:
    fake.enqueue(Behavior(status=429), Behavior(omit_usage=True))
    with httpx.Client(base_url=fake.base_url.removesuffix("/v1")) as http:
        limited = http.post("/v1/embeddings", json={"model": "m", "input": "x"})
        assert limited.status_code == 429
        assert limited.json()["error"]["code"] == "rate_limit_exceeded"
        azure = http.post(
            "/openai/deployments/dep/embeddings?api-version=2024-10-21",
            json={"model": "dep", "input": "x", "encoding_format": "float"},
        )
        assert azure.status_code == 200
        assert "usage" not in azure.json()
        assert http.post("/v1/embeddings", json={"model": "m"}).status_code == 400
    assert fake.count == 2
