"""What only the Responses adapter does: its URL and credentials (OpenAI, Azure's v1 API,
Azure's api-version), the bytes it sends, the notes it leaves, the items it streams back,
and a stream that fails after its first events. Every call reaches a ``FakeResponses`` on
loopback through each of gw's upstream transports."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import msgspec
import pytest

from gw.adapters.directory import AdapterDirectory
from gw.config.schema import ProviderConfig
from gw.errors import RateLimitedError
from gw.ir import (
    ChatRequest,
    ChatResponse,
    NativeEvent,
    Sampling,
    TextDelta,
    ThinkingDelta,
)

from contract.upstream_harness import (
    ENVIRON,
    KEY_VARIABLE,
    chat_request,
    new_transport,
    run_complete,
    run_stream,
    streamed_text,
    upstream_call,
)
from fakes.responses_upstream import Behavior, FakeResponses

KEY = ENVIRON[KEY_VARIABLE]


@pytest.fixture(scope="module")
def server() -> Iterator[FakeResponses]:
    with FakeResponses() as fake:
        yield fake


@pytest.fixture
def fake(server: FakeResponses) -> FakeResponses:
    server.clear()
    server.default = Behavior()
    return server


def provider_for(base_url: str, *, api_version: str | None = None) -> ProviderConfig:
    return ProviderConfig(
        name="responses-wire",
        kind="openai_responses",
        base_url=base_url,
        api_key=f"env:{KEY_VARIABLE}",
        api_version=api_version,
    )


def complete_with_notes(
    provider: ProviderConfig, request: ChatRequest
) -> tuple[ChatResponse, list[str]]:
    async def inner() -> tuple[ChatResponse, list[str]]:
        transport = new_transport()
        try:
            call = upstream_call(provider, request)
            upstream = AdapterDirectory(transport, ENVIRON).upstream_for(provider)
            return await upstream.complete(call), call.notes
        finally:
            await transport.close()

    return asyncio.run(inner())


def test_openai_gets_a_bearer_key_and_the_target_model(fake: FakeResponses) -> None:
    request = msgspec.structs.replace(chat_request(), model="gpt-5-mini", max_tokens=64)

    answer = run_complete(provider_for(fake.base_url), request)
    events = run_stream(provider_for(fake.base_url), request)

    assert answer.text == streamed_text(events.events)
    assert answer.id.startswith("resp_fake")
    for sent, stream in zip(fake.requests, (False, True), strict=True):
        assert (sent.method, sent.path, sent.query) == ("POST", "/v1/responses", "")
        assert sent.headers["authorization"] == f"Bearer {KEY}"
        assert sent.headers["content-type"] == "application/json"
        assert "api-key" not in sent.headers
        body = sent.json
        assert (body["model"], body["stream"], body["store"]) == ("gpt-5-mini", stream, False)
        assert body["max_output_tokens"] == 64
        assert body["input"][0]["role"] == "user"


def test_azure_v1_is_a_base_url(fake: FakeResponses) -> None:
    azure = provider_for(fake.base_url.removesuffix("/v1") + "/openai/v1")
    run_complete(azure, chat_request(model="my-deployment"))
    sent = fake.requests[-1]
    assert sent.path == "/openai/v1/responses"
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    assert sent.json["model"] == "my-deployment"


def test_an_api_version_sends_azures_query_and_api_key_header(fake: FakeResponses) -> None:
    azure = provider_for(fake.base_url.removesuffix("/v1") + "/openai", api_version="preview")
    run_complete(azure, chat_request())
    run_stream(azure, chat_request())
    for sent in fake.requests:
        assert (sent.path, sent.query) == ("/openai/responses", "api-version=preview")
        assert sent.headers["api-key"] == KEY
        assert "authorization" not in sent.headers


def test_what_the_format_cannot_carry_is_noted_on_the_call(fake: FakeResponses) -> None:
    request = msgspec.structs.replace(chat_request(), sampling=Sampling(top_k=3), stop=("END",))
    _, notes = complete_with_notes(provider_for(fake.base_url), request)
    assert notes == [
        "sampling.top_k, stop sequences: not sent (the OpenAI Responses format has none)"
    ]
    assert "stop" not in fake.requests[-1].json


def test_reasoning_and_a_search_stream_back_as_thinking_and_whole_items(
    fake: FakeResponses,
) -> None:
    fake.default = Behavior(reasoning=("Look it up.",), web_search="paris weather")
    outcome = run_stream(provider_for(fake.base_url), chat_request())
    assert outcome.error is None
    thinking = "".join(e.text for e in outcome.events if isinstance(e, ThinkingDelta))
    assert thinking == "Look it up."
    natives = [e.block.data for e in outcome.events if isinstance(e, NativeEvent)]
    # The reasoning item opens (in_progress) and closes whole; the search comes whole.
    assert [(d["type"], d.get("status")) for d in natives] == [
        ("reasoning", "in_progress"),
        ("reasoning", natives[1].get("status")),
        ("web_search_call", natives[2].get("status")),
    ]
    assert natives[1].get("status") != "in_progress"


def test_an_error_event_after_text_ends_the_stream_with_its_error(fake: FakeResponses) -> None:
    fake.default = Behavior(
        text="one two three four", error_after_chunks=2, error_code="rate_limit_exceeded"
    )
    outcome = run_stream(provider_for(fake.base_url), chat_request())
    assert [e.text for e in outcome.events if isinstance(e, TextDelta)] == ["one", " two"]
    assert type(outcome.error) is RateLimitedError


def test_a_dropped_stream_is_an_upstream_error(fake: FakeResponses) -> None:
    fake.default = Behavior(text="one two three four", drop_after_chunks=1)
    outcome = run_stream(provider_for(fake.base_url), chat_request())
    assert outcome.error is not None
    assert outcome.error.code == "upstream_error"
    assert streamed_text(outcome.events) == "one"
