"""The ``Upstream`` contract, run over every adapter (CONVENTIONS rule 13).

Each case hides how its adapter is told what to answer: the mock is steered by its
``mock:`` options, the OpenAI adapter by the script of a ``FakeOpenAI`` on loopback. The
assertions below are the same for every case; a new adapter joins by adding a case.
"""

from __future__ import annotations

import json
from typing import Literal, Protocol

import msgspec
import pytest

from gw.config.schema import MockOptions, ProviderConfig
from gw.errors import GatewayError, RateLimitedError, UpstreamError
from gw.ir import EmbeddingInput, EmbeddingRequest, Finish, TextDelta, ToolCallDelta, UsageEvent

from contract.upstream_harness import (
    KEY_VARIABLE,
    WEATHER_TOOL,
    assert_well_formed,
    chat_request,
    run_complete,
    run_embed,
    run_stream,
    streamed_arguments,
    streamed_text,
)
from fakes import anthropic_upstream, gemini_upstream, responses_upstream
from fakes.openai_upstream import Behavior, FakeOpenAI

Failure = Literal["server_error", "rate_limited"]
EXPECTED_ERRORS: dict[Failure, type[GatewayError]] = {
    "server_error": UpstreamError,
    "rate_limited": RateLimitedError,
}


class AdapterCase(Protocol):
    provider: ProviderConfig
    # What a rate-limited answer carries as retry_after (only a real header sets one).
    rate_limit_retry_after: float | None
    # Embeddings: whether token-id inputs are taken and usage reported (Gemini: neither).
    embeds_token_ids: bool
    reports_embedding_usage: bool

    def failing(self, failure: Failure, *, times: int = 1) -> ProviderConfig:
        """The provider to call so that the next ``times`` calls fail with ``failure``."""
        ...

    def calling_tool(self, name: str, arguments: str, *, times: int = 1) -> None:
        """Make the next ``times`` calls offering tool ``name`` answer with a call to it."""
        ...


class MockCase:
    provider = ProviderConfig(name="mock-contract", kind="mock")
    rate_limit_retry_after: float | None = None
    embeds_token_ids = reports_embedding_usage = True

    def failing(self, failure: Failure, *, times: int = 1) -> ProviderConfig:
        options = (
            MockOptions(fail_status=500)
            if failure == "server_error"
            else MockOptions(fail_code="rate_limited")
        )
        return msgspec.structs.replace(self.provider, mock=options)

    def calling_tool(self, name: str, arguments: str, *, times: int = 1) -> None:
        """Nothing to arrange: the mock calls the first offered tool with its own arguments."""


class OpenAICase:
    rate_limit_retry_after: float | None = 2.0
    embeds_token_ids = reports_embedding_usage = True

    def __init__(self, fake: FakeOpenAI) -> None:
        self.fake = fake
        self.provider = ProviderConfig(
            name="openai-contract",
            kind="openai_compatible",
            base_url=fake.base_url,
            api_key=f"env:{KEY_VARIABLE}",
        )

    def failing(self, failure: Failure, *, times: int = 1) -> ProviderConfig:
        behavior = (
            Behavior(status=500)
            if failure == "server_error"
            else Behavior(status=429, headers={"retry-after": "2"})
        )
        self.fake.enqueue(*[behavior] * times)
        return self.provider

    def calling_tool(self, name: str, arguments: str, *, times: int = 1) -> None:
        self.fake.enqueue(*[Behavior(tool_call=(name, arguments))] * times)


class AnthropicCase:
    """Steers a ``FakeAnthropic`` of its own, started for one test and stopped after it."""

    rate_limit_retry_after: float | None = 2.0
    embeds_token_ids = reports_embedding_usage = True

    def __init__(self, request: pytest.FixtureRequest) -> None:
        self.fake = anthropic_upstream.FakeAnthropic().start()
        request.addfinalizer(self.fake.stop)
        self.provider = ProviderConfig(
            name="anthropic-contract",
            kind="anthropic",
            base_url=self.fake.base_url,
            api_key=f"env:{KEY_VARIABLE}",
        )

    def failing(self, failure: Failure, *, times: int = 1) -> ProviderConfig:
        behavior = (
            anthropic_upstream.Behavior(status=500)
            if failure == "server_error"
            else anthropic_upstream.Behavior(status=429, headers={"retry-after": "2"})
        )
        self.fake.enqueue(*[behavior] * times)
        return self.provider

    def calling_tool(self, name: str, arguments: str, *, times: int = 1) -> None:
        self.fake.enqueue(*[anthropic_upstream.Behavior(tool_call=(name, arguments))] * times)


class GeminiCase:
    """Steers a ``FakeGemini`` of its own, started for one test and stopped after it.

    Gemini's 429 carries its wait in the body (``RetryInfo.retryDelay: "2s"``), not a header.
    """

    rate_limit_retry_after: float | None = 2.0
    embeds_token_ids = reports_embedding_usage = False

    def __init__(self, request: pytest.FixtureRequest) -> None:
        self.fake = gemini_upstream.FakeGemini().start()
        request.addfinalizer(self.fake.stop)
        self.provider = ProviderConfig(
            name="gemini-contract",
            kind="gemini",
            base_url=self.fake.base_url,
            api_key=f"env:{KEY_VARIABLE}",
        )

    def failing(self, failure: Failure, *, times: int = 1) -> ProviderConfig:
        status = 500 if failure == "server_error" else 429
        self.fake.enqueue(*[gemini_upstream.Behavior(status=status)] * times)
        return self.provider

    def calling_tool(self, name: str, arguments: str, *, times: int = 1) -> None:
        behavior = gemini_upstream.Behavior(tool_calls=((name, arguments),))
        self.fake.enqueue(*[behavior] * times)


class ResponsesCase:
    """Steers a ``FakeResponses`` (OpenAI's Responses API) of its own, for one test."""

    rate_limit_retry_after: float | None = 2.0
    embeds_token_ids = reports_embedding_usage = True

    def __init__(self, request: pytest.FixtureRequest) -> None:
        self.fake = responses_upstream.FakeResponses().start()
        request.addfinalizer(self.fake.stop)
        self.provider = ProviderConfig(
            name="responses-contract",
            kind="openai_responses",
            base_url=self.fake.base_url,
            api_key=f"env:{KEY_VARIABLE}",
        )

    def failing(self, failure: Failure, *, times: int = 1) -> ProviderConfig:
        behavior = (
            responses_upstream.Behavior(status=500)
            if failure == "server_error"
            else responses_upstream.Behavior(status=429, headers={"retry-after": "2"})
        )
        self.fake.enqueue(*[behavior] * times)
        return self.provider

    def calling_tool(self, name: str, arguments: str, *, times: int = 1) -> None:
        self.fake.enqueue(*[responses_upstream.Behavior(tool_call=(name, arguments))] * times)


@pytest.fixture(params=["mock", "openai", "anthropic", "gemini", "openai_responses"])
def case(request: pytest.FixtureRequest) -> AdapterCase:
    if request.param == "mock":
        return MockCase()
    if request.param == "openai_responses":
        return ResponsesCase(request)
    if request.param == "anthropic":
        return AnthropicCase(request)
    if request.param == "gemini":
        return GeminiCase(request)
    return OpenAICase(request.getfixturevalue("fake"))


def test_complete_returns_text_and_usage(case: AdapterCase) -> None:
    response = run_complete(case.provider, chat_request())

    assert response.text
    assert response.tool_calls == ()
    assert response.finish_reason == "stop"
    assert response.usage is not None
    assert response.usage.input_tokens > 0
    assert response.usage.output_tokens > 0


def test_stream_is_well_formed(case: AdapterCase) -> None:
    outcome = run_stream(case.provider, chat_request())

    assert outcome.error is None
    assert_well_formed(outcome.events)
    assert any(isinstance(event, TextDelta) for event in outcome.events)
    finish = next(event for event in outcome.events if isinstance(event, Finish))
    assert finish.reason == "stop"


def test_stream_text_and_usage_match_complete(case: AdapterCase) -> None:
    # Both adapters are deterministic here: the mock by design, the fake because it serves
    # the same default answer to both calls.
    request = chat_request("Tell me about routes and retries")
    response = run_complete(case.provider, request)
    outcome = run_stream(case.provider, request)

    assert outcome.error is None
    assert streamed_text(outcome.events) == response.text
    usage = [event.usage for event in outcome.events if isinstance(event, UsageEvent)]
    assert usage[-1] == response.usage


def test_complete_tool_call_has_json_arguments(case: AdapterCase) -> None:
    case.calling_tool(WEATHER_TOOL.name, '{"city": "Paris"}')

    response = run_complete(case.provider, chat_request(tools=[WEATHER_TOOL]))

    assert response.finish_reason == "tool_calls"
    assert not response.text
    [call] = response.tool_calls
    assert call.name == WEATHER_TOOL.name
    assert call.id
    assert isinstance(json.loads(call.arguments), dict)


def test_stream_tool_call_deltas_join_into_json(case: AdapterCase) -> None:
    request = chat_request(tools=[WEATHER_TOOL])
    case.calling_tool(WEATHER_TOOL.name, '{"city": "Paris"}', times=2)
    response = run_complete(case.provider, request)
    outcome = run_stream(case.provider, request)

    assert outcome.error is None
    assert_well_formed(outcome.events)
    deltas = [event for event in outcome.events if isinstance(event, ToolCallDelta)]
    assert deltas
    assert {delta.index for delta in deltas} == {0}
    assert deltas[0].id
    assert deltas[0].name == WEATHER_TOOL.name
    # id and name come once, with the first fragment.
    assert all(delta.id is None and delta.name is None for delta in deltas[1:])
    arguments = streamed_arguments(outcome.events)
    assert isinstance(json.loads(arguments), dict)
    assert arguments == response.tool_calls[0].arguments
    assert streamed_text(outcome.events) == ""
    finish = next(event for event in outcome.events if isinstance(event, Finish))
    assert finish.reason == "tool_calls"


@pytest.mark.parametrize("failure", ["server_error", "rate_limited"])
def test_complete_failure_raises_mapped_error(case: AdapterCase, failure: Failure) -> None:
    provider = case.failing(failure)

    with pytest.raises(GatewayError) as caught:
        run_complete(provider, chat_request())

    _assert_mapped(case, failure, caught.value)


@pytest.mark.parametrize("failure", ["server_error", "rate_limited"])
def test_stream_failure_raises_mapped_error_before_any_event(
    case: AdapterCase, failure: Failure
) -> None:
    provider = case.failing(failure)

    outcome = run_stream(provider, chat_request())

    assert outcome.events == [], "a failure before the first byte must not start the stream"
    assert outcome.error is not None
    _assert_mapped(case, failure, outcome.error)


def _assert_mapped(case: AdapterCase, failure: Failure, error: GatewayError) -> None:
    assert type(error) is EXPECTED_ERRORS[failure]
    assert error.blame == "upstream"
    assert error.retryable
    if failure == "rate_limited":
        assert error.retry_after == case.rate_limit_retry_after


# --- embeddings ----------------------------------------------------------------------------
# The adapters that implement ``embed``; an adapter joins by adding its case here.
EMBEDDING_CASES = ["mock", "openai", "gemini", "openai_responses"]


@pytest.fixture(params=EMBEDDING_CASES)
def embedder(request: pytest.FixtureRequest) -> AdapterCase:
    if request.param == "mock":
        return MockCase()
    if request.param == "openai_responses":
        return ResponsesCase(request)
    if request.param == "gemini":
        return GeminiCase(request)
    return OpenAICase(request.getfixturevalue("fake"))


def test_embed_returns_one_vector_per_input_in_input_order(embedder: AdapterCase) -> None:
    inputs: tuple[EmbeddingInput, ...] = ("alpha", "beta gamma", "delta")
    if embedder.embeds_token_ids:
        inputs = (*inputs[:2], (1, 2, 3))
    response = run_embed(
        embedder.provider, EmbeddingRequest(model="emb-1", inputs=inputs, dimensions=16)
    )
    alone = run_embed(
        embedder.provider, EmbeddingRequest(model="emb-1", inputs=inputs[1:2], dimensions=16)
    )

    assert [len(vector) for vector in response.vectors] == [16, 16, 16]
    assert len(set(response.vectors)) == 3
    assert alone.vectors == response.vectors[1:2]
    if embedder.reports_embedding_usage:
        assert response.usage is not None
        assert response.usage.input_tokens > 0
        assert response.usage.output_tokens == 0


@pytest.mark.parametrize("failure", ["server_error", "rate_limited"])
def test_embed_failure_raises_mapped_error(embedder: AdapterCase, failure: Failure) -> None:
    provider = embedder.failing(failure)

    with pytest.raises(GatewayError) as caught:
        run_embed(provider, EmbeddingRequest(model="emb-1", inputs=("x",)))

    _assert_mapped(embedder, failure, caught.value)
