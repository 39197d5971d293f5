"""What only the OpenAI adapter does: the bytes it sends, its credentials, its transport faults.

Every call goes through a real pooled ``httpx.AsyncClient`` to a ``FakeOpenAI`` on loopback.
"""

from __future__ import annotations

import socket
from collections.abc import Mapping
from typing import Literal

import msgspec
import pytest

from gw.config.schema import ProviderConfig
from gw.errors import (
    GatewayError,
    InvalidRequestError,
    PersistentUpstreamError,
    RateLimitedError,
    UpstreamAuthFailedError,
    UpstreamError,
    UpstreamTimeoutError,
)
from gw.ir import ChatRequest, EmbeddingRequest, Finish, Reasoning, StreamStart, TextDelta
from gw.ports import AttemptTimeouts

from contract.upstream_harness import (
    ENVIRON,
    KEY_VARIABLE,
    TIMEOUTS,
    chat_request,
    run_complete,
    run_embed,
    run_stream,
    streamed_text,
)
from fakes.openai_upstream import Behavior, FakeOpenAI, fake_embedding

Mode = Literal["complete", "stream"]
MODES = ["complete", "stream"]


def provider_for(base_url: str, *, api_key: str | None = f"env:{KEY_VARIABLE}") -> ProviderConfig:
    return ProviderConfig(
        name="openai-wire", kind="openai_compatible", base_url=base_url, api_key=api_key
    )


@pytest.fixture
def provider(fake: FakeOpenAI) -> ProviderConfig:
    return provider_for(fake.base_url)


def call_failing(
    mode: Mode,
    provider: ProviderConfig,
    request: ChatRequest,
    *,
    environ: Mapping[str, str] = ENVIRON,
    timeouts: AttemptTimeouts = TIMEOUTS,
) -> GatewayError:
    """Run one call that must fail before the first event; return its gw error."""
    if mode == "complete":
        with pytest.raises(GatewayError) as caught:
            run_complete(provider, request, environ=environ, timeouts=timeouts)
        return caught.value
    outcome = run_stream(provider, request, environ=environ, timeouts=timeouts)
    assert outcome.events == [], "a failure before the first byte must not start the stream"
    assert outcome.error is not None
    return outcome.error


def closed_loopback_port() -> int:
    """A port nothing listens on: bound by us to learn a free one, then released."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


# --- the request on the wire ---------------------------------------------------------------


def test_complete_request_body_and_headers(fake: FakeOpenAI, provider: ProviderConfig) -> None:
    run_complete(provider, chat_request("Hi there", model="target-model-7"))

    [received] = fake.requests
    assert (received.method, received.path) == ("POST", "/v1/chat/completions")
    assert received.headers["content-type"] == "application/json"
    assert received.headers["authorization"] == f"Bearer {ENVIRON[KEY_VARIABLE]}"
    body = received.json
    assert body["model"] == "target-model-7"
    assert body["messages"] == [{"role": "user", "content": "Hi there"}]
    assert body["stream"] is False
    assert "max_tokens" not in body
    assert "max_completion_tokens" not in body
    assert "stream_options" not in body


def test_stream_request_asks_for_usage(fake: FakeOpenAI, provider: ProviderConfig) -> None:
    run_stream(provider, chat_request(model="target-model-7"))

    received = fake.requests[-1]
    assert received.headers["authorization"] == f"Bearer {ENVIRON[KEY_VARIABLE]}"
    body = received.json
    assert body["model"] == "target-model-7"
    assert body["stream"] is True
    assert body["stream_options"]["include_usage"] is True
    assert "max_tokens" not in body


@pytest.mark.parametrize(
    ("kind", "field"),
    [("openai", "max_completion_tokens"), ("openai_compatible", "max_tokens")],
)
@pytest.mark.parametrize("max_tokens", [None, 64])
def test_token_limit_is_sent_only_when_set_under_the_kind_s_field(
    fake: FakeOpenAI,
    kind: Literal["openai", "openai_compatible"],
    field: str,
    max_tokens: int | None,
) -> None:
    # OpenAI itself gets max_completion_tokens (its reasoning models refuse max_tokens);
    # compatible servers get the max_tokens they know.
    provider = msgspec.structs.replace(provider_for(fake.base_url), kind=kind)

    run_complete(provider, chat_request(max_tokens=max_tokens))

    body = fake.requests[-1].json
    sent = {name: body[name] for name in ("max_tokens", "max_completion_tokens") if name in body}
    assert sent == ({} if max_tokens is None else {field: max_tokens})


def test_configured_headers_are_sent(fake: FakeOpenAI) -> None:
    provider = msgspec.structs.replace(provider_for(fake.base_url), headers={"x-org-tag": "team-7"})

    run_complete(provider, chat_request())

    assert fake.requests[-1].headers["x-org-tag"] == "team-7"


def test_no_api_key_sends_no_authorization(fake: FakeOpenAI) -> None:
    run_complete(provider_for(fake.base_url, api_key=None), chat_request())

    assert "authorization" not in fake.requests[-1].headers


# --- credentials ---------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_missing_env_key_names_the_variable_and_no_secret(fake: FakeOpenAI, mode: Mode) -> None:
    environ = {"GW_OTHER_KEY": "sk-other-secret-value", KEY_VARIABLE: "sk-present-secret-value"}
    provider = provider_for(fake.base_url, api_key="env:GW_MISSING_KEY")

    error = call_failing(mode, provider, chat_request(), environ=environ)

    assert type(error) is UpstreamAuthFailedError
    assert "GW_MISSING_KEY" in error.message
    for secret in environ.values():
        assert secret not in error.message
        assert secret not in str(error)
        assert secret not in repr(error)
    assert fake.count == 0, "nothing may be sent without the credential"


@pytest.mark.parametrize("mode", MODES)
def test_unsupported_key_reference_fails_before_sending(fake: FakeOpenAI, mode: Mode) -> None:
    provider = provider_for(fake.base_url, api_key="vault:openai/prod")

    error = call_failing(mode, provider, chat_request())

    assert type(error) is UpstreamAuthFailedError
    assert fake.count == 0


def test_upstream_auth_error_does_not_quote_the_key(
    fake: FakeOpenAI, provider: ProviderConfig
) -> None:
    # OpenAI's 401 body echoes a prefix of the key ("sk-fake***"); it must not reach gw's text.
    fake.enqueue(Behavior(status=401))

    error = call_failing("complete", provider, chat_request())

    assert type(error) is UpstreamAuthFailedError
    assert error.blame == "upstream"
    assert "sk-" not in error.message


# --- transport faults ----------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_connection_refused_raises_upstream_error(mode: Mode) -> None:
    provider = provider_for(f"http://127.0.0.1:{closed_loopback_port()}/v1")

    error = call_failing(mode, provider, chat_request())

    assert type(error) is UpstreamError
    assert error.blame == "upstream"


@pytest.mark.parametrize("mode", MODES)
def test_drop_before_headers_raises_upstream_error(
    fake: FakeOpenAI, provider: ProviderConfig, mode: Mode
) -> None:
    fake.enqueue(Behavior(drop_before_headers=True))

    error = call_failing(mode, provider, chat_request())

    assert type(error) is UpstreamError
    assert error.blame == "upstream"


def test_drop_mid_stream_raises_after_the_first_deltas(
    fake: FakeOpenAI, provider: ProviderConfig
) -> None:
    fake.enqueue(Behavior(text="one two three four five", drop_after_chunks=2))

    outcome = run_stream(provider, chat_request())

    assert isinstance(outcome.events[0], StreamStart)
    assert streamed_text(outcome.events) == "one two"
    assert not any(isinstance(event, Finish) for event in outcome.events)
    assert type(outcome.error) is UpstreamError
    assert outcome.error.blame == "upstream"


def test_drop_mid_body_raises_upstream_error(fake: FakeOpenAI, provider: ProviderConfig) -> None:
    fake.enqueue(Behavior(drop_after_chunks=2))

    error = call_failing("complete", provider, chat_request())

    assert type(error) is UpstreamError


def test_malformed_body_raises_upstream_error(fake: FakeOpenAI, provider: ProviderConfig) -> None:
    fake.enqueue(Behavior(malformed=True))

    error = call_failing("complete", provider, chat_request())

    assert type(error) is PersistentUpstreamError
    assert error.blame == "upstream"


def test_malformed_stream_chunk_raises_upstream_error(
    fake: FakeOpenAI, provider: ProviderConfig
) -> None:
    fake.enqueue(Behavior(malformed=True))

    outcome = run_stream(provider, chat_request())

    assert not any(isinstance(event, TextDelta | Finish) for event in outcome.events)
    assert type(outcome.error) is PersistentUpstreamError
    assert outcome.error.blame == "upstream"


def test_read_timeout_raises_upstream_timeout(fake: FakeOpenAI, provider: ProviderConfig) -> None:
    # Whole answers only: a stream's reads are timed by the engine (see AttemptTimeouts).
    fake.enqueue(Behavior(delay_before_headers=1.0))

    error = call_failing(
        "complete", provider, chat_request(), timeouts=AttemptTimeouts(connect=2.0, read=0.1)
    )

    assert type(error) is UpstreamTimeoutError
    assert error.code == "upstream_timeout"


@pytest.mark.parametrize("mode", MODES)
def test_undecodable_content_encoding_raises_upstream_error(
    fake: FakeOpenAI, provider: ProviderConfig, mode: Mode
) -> None:
    # The fake sends plain JSON / SSE while claiming gzip, so httpx raises DecodingError: a
    # RequestError but not a TransportError, which must not escape the adapter raw.
    fake.enqueue(Behavior(headers={"content-encoding": "gzip"}))

    if mode == "complete":
        with pytest.raises(GatewayError) as caught:
            run_complete(provider, chat_request())
        error = caught.value
    else:
        outcome = run_stream(provider, chat_request())
        assert not any(isinstance(event, TextDelta | Finish) for event in outcome.events)
        assert outcome.error is not None
        error = outcome.error

    assert type(error) is UpstreamError
    assert error.blame == "upstream"


def test_azure_openai_calls_the_deployment_url_with_an_api_key_header(fake: FakeOpenAI) -> None:
    azure = ProviderConfig(
        name="azure-wire",
        kind="azure_openai",
        base_url=fake.base_url.removesuffix("/v1"),
        api_key=f"env:{KEY_VARIABLE}",
        api_version="2025-01-01-preview",
    )
    request = msgspec.structs.replace(chat_request(), model="my gpt-4o", max_tokens=50)

    answer = run_complete(azure, request)
    events = run_stream(azure, request)

    assert answer.text
    assert streamed_text(events.events)
    for sent in fake.requests:
        assert sent.path == "/openai/deployments/my%20gpt-4o/chat/completions"
        assert sent.query == "api-version=2025-01-01-preview"
        assert sent.headers["api-key"] == ENVIRON[KEY_VARIABLE]
        assert "authorization" not in sent.headers
        assert sent.json["max_tokens"] == 50
    assert len(fake.requests) == 2


def test_azure_openai_defaults_to_the_ga_api_version(fake: FakeOpenAI) -> None:
    azure = ProviderConfig(
        name="azure-wire", kind="azure_openai", base_url=fake.base_url.removesuffix("/v1")
    )
    run_complete(azure, chat_request())
    assert fake.requests[-1].query == "api-version=2024-10-21"


# --- embeddings ----------------------------------------------------------------------------

EMBED = EmbeddingRequest(
    model="text-embedding-3-small",
    inputs=("Hello there", (15339, 1917)),
    dimensions=8,
    user="user-7",
    extensions={"openai": {"encoding_format": "base64", "vendor_flag": True}},
)


def test_embeddings_request_path_body_and_headers(
    fake: FakeOpenAI, provider: ProviderConfig
) -> None:
    response = run_embed(provider, EMBED)

    [received] = fake.requests
    assert (received.method, received.path, received.query) == ("POST", "/v1/embeddings", "")
    assert received.headers["authorization"] == f"Bearer {ENVIRON[KEY_VARIABLE]}"
    assert received.headers["content-type"] == "application/json"
    # Floats are asked for whatever the client wants; gw re-encodes for its client.
    assert received.json == {
        "model": "text-embedding-3-small",
        "input": ["Hello there", [15339, 1917]],
        "encoding_format": "float",
        "dimensions": 8,
        "user": "user-7",
        "vendor_flag": True,
    }
    assert response.model == "text-embedding-3-small"
    assert response.vectors == (
        tuple(fake_embedding("Hello there", 8)),
        tuple(fake_embedding([15339, 1917], 8)),
    )
    assert response.usage is not None
    assert response.usage.input_tokens == 4  # the fake counts 2 words + 2 tokens


def test_embeddings_on_azure_use_the_deployment_url(fake: FakeOpenAI) -> None:
    azure = ProviderConfig(
        name="azure-wire",
        kind="azure_openai",
        base_url=fake.base_url.removesuffix("/v1"),
        api_key=f"env:{KEY_VARIABLE}",
    )

    response = run_embed(azure, msgspec.structs.replace(EMBED, model="emb deploy"))

    [received] = fake.requests
    assert received.path == "/openai/deployments/emb%20deploy/embeddings"
    assert received.query == "api-version=2024-10-21"
    assert received.headers["api-key"] == ENVIRON[KEY_VARIABLE]
    assert "authorization" not in received.headers
    assert len(response.vectors) == 2


@pytest.mark.parametrize(
    ("behavior", "expected"),
    [
        (Behavior(status=429, headers={"retry-after": "3"}), RateLimitedError),
        (Behavior(status=500), UpstreamError),
        (Behavior(status=401), UpstreamAuthFailedError),
        (Behavior(status=400), InvalidRequestError),
        (Behavior(malformed=True), PersistentUpstreamError),
        (Behavior(drop_before_headers=True), UpstreamError),
        (Behavior(drop_after_chunks=1), UpstreamError),
    ],
)
def test_embeddings_faults_map_like_chat(
    fake: FakeOpenAI, provider: ProviderConfig, behavior: Behavior, expected: type[GatewayError]
) -> None:
    fake.enqueue(behavior)

    with pytest.raises(GatewayError) as caught:
        run_embed(provider, EMBED)

    assert type(caught.value) is expected
    assert caught.value.blame == "upstream"
    if behavior.status == 429:
        assert caught.value.retry_after == 3


def test_embeddings_read_timeout_raises_upstream_timeout(
    fake: FakeOpenAI, provider: ProviderConfig
) -> None:
    fake.enqueue(Behavior(delay_before_headers=1.0))

    with pytest.raises(UpstreamTimeoutError):
        run_embed(provider, EMBED, timeouts=AttemptTimeouts(connect=2.0, read=0.1))


def test_azure_reasoning_requests_use_max_completion_tokens(fake: FakeOpenAI) -> None:
    azure = ProviderConfig(
        name="azure-wire", kind="azure_openai", base_url=fake.base_url.removesuffix("/v1")
    )
    request = msgspec.structs.replace(
        chat_request(), max_tokens=64, reasoning=Reasoning(effort="low")
    )
    run_complete(azure, request)
    sent = fake.requests[-1].json
    assert sent["max_completion_tokens"] == 64
    assert "max_tokens" not in sent
    assert sent["reasoning_effort"] == "low"
