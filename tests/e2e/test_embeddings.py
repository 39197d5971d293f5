"""POST /v1/embeddings through the official openai SDK against a live gw: the mock, fake
OpenAI-shaped upstreams (plain and Azure), fallback, errors in OpenAI's shape, traces."""

from __future__ import annotations

import array
import base64
import json
import socket
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest

from gw.adapters.mock import mock_embedding

from e2e.gw_process import GwServer
from e2e.waiting import wait_until
from fakes.openai_upstream import Behavior, FakeOpenAI, fake_embedding

CONFIG = """
server:
  max_body_bytes: 64KiB
providers:
  - {{name: primary, kind: openai_compatible, base_url: "{primary}", api_key: env:GW_TEST_KEY}}
  - {{name: backup, kind: openai_compatible, base_url: "{backup}"}}
  - {{name: azure, kind: azure_openai, base_url: "{azure}", api_key: env:GW_TEST_KEY}}
  - {{name: mock, kind: mock}}
models:
  - {{provider: primary, model: emb-a, input_per_mtok: 0.02, context_window: 8191,
     capabilities: [embeddings]}}
  - {{provider: backup, model: emb-b, input_per_mtok: 0.13, capabilities: [embeddings]}}
  - {{provider: azure, model: emb-deploy, input_per_mtok: 0.1, capabilities: [embeddings]}}
  - {{provider: mock, model: mock-emb, input_per_mtok: 1.0, capabilities: [embeddings]}}
  - {{provider: mock, model: mock-1, capabilities: [tools]}}
routes:
  - name: embed
    targets:
      - {{provider: primary, model: emb-a, priority: 1}}
      - {{provider: backup, model: emb-b, priority: 2}}
  - name: mock-embed
    targets: [{{provider: mock, model: mock-emb}}]
  - name: azure-embed
    targets: [{{provider: azure, model: emb-deploy}}]
  - name: chat-only
    targets: [{{provider: mock, model: mock-1}}]
  - name: lazy-embed
    targets: [{{provider: primary, model: emb-a}}]
policies:
  - name: fast
    match: {{routes: ["*"]}}
    retry: {{max_attempts: 2, initial_backoff: 10ms}}
    timeout: {{total: 30s, per_attempt: 1500ms}}
  - name: patient  # the hang-up test: only the client's leaving may end its call
    match: {{routes: [lazy-embed]}}
    retry: {{max_attempts: 1}}
"""


@pytest.fixture(scope="module")
def gw(
    tmp_path_factory: pytest.TempPathFactory, primary: FakeOpenAI, backup: FakeOpenAI
) -> Iterator[GwServer]:
    home = tmp_path_factory.mktemp("gw-embeddings")
    config = home / "gw.yaml"
    config.write_text(
        CONFIG.format(
            primary=primary.base_url,
            backup=backup.base_url,
            azure=primary.base_url.removesuffix("/v1"),
        )
    )
    with GwServer(home / "state", config, env={"GW_TEST_KEY": "sk-test-secret-0123"}) as server:
        yield server


@pytest.fixture
def client(gw: GwServer) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=gw.base_url, api_key="anything", max_retries=0) as sdk:
        yield sdk


def floats32(encoded: str) -> list[float]:
    return array.array("f", base64.b64decode(encoded)).tolist()


# --- the mock ------------------------------------------------------------------------------


def test_a_string_against_the_mock(client: openai.OpenAI) -> None:
    # No encoding_format: the SDK asks for base64 and decodes it itself.
    raw = client.embeddings.with_raw_response.create(model="mock-embed", input="hello")
    result = raw.parse()
    assert [item.embedding for item in result.data] == [list(mock_embedding("hello", 8))]
    assert (result.object, result.data[0].object, result.data[0].index) == (
        "list", "embedding", 0,
    )  # fmt: skip
    assert result.model == "mock-emb"
    assert (result.usage.prompt_tokens, result.usage.total_tokens) == (2, 2)
    assert raw.headers["x-gw-route"] == "mock/mock-emb"
    assert raw.headers["x-gw-request-id"].startswith("req_")
    assert raw.headers["x-gw-revision"].isdigit()


def test_a_list_token_arrays_and_dimensions_against_the_mock(client: openai.OpenAI) -> None:
    texts = client.embeddings.create(model="mock-embed", input=["b", "a"], encoding_format="float")
    assert [item.embedding for item in texts.data] == [
        list(mock_embedding("b", 8)),
        list(mock_embedding("a", 8)),
    ]
    assert [item.index for item in texts.data] == [0, 1]
    tokens = client.embeddings.create(model="mock-embed", input=[[1, 2, 3], [4]], dimensions=5)
    assert [item.embedding for item in tokens.data] == [
        list(mock_embedding((1, 2, 3), 5)),
        list(mock_embedding((4,), 5)),
    ]
    assert tokens.usage.prompt_tokens == 4
    single = client.embeddings.create(model="mock-embed", input=[7, 8], encoding_format="float")
    assert single.data[0].embedding == list(mock_embedding((7, 8), 8))


def test_explicit_base64_is_little_endian_float32(client: openai.OpenAI) -> None:
    # Asked for explicitly, the SDK hands the base64 text over undecoded.
    result = client.embeddings.create(
        model="mock-embed", input=["x", "y"], encoding_format="base64", dimensions=4
    )
    encoded = [item.embedding for item in result.data]
    assert all(isinstance(value, str) for value in encoded)
    assert [floats32(value) for value in encoded] == [  # type: ignore[arg-type]
        list(mock_embedding("x", 4)),
        list(mock_embedding("y", 4)),
    ]


# --- OpenAI-shaped upstreams ---------------------------------------------------------------


def test_an_openai_upstream_gets_floats_and_its_vectors_reach_the_client(
    client: openai.OpenAI, primary: FakeOpenAI, backup: FakeOpenAI
) -> None:
    raw = client.embeddings.with_raw_response.create(
        model="embed", input=["red fox", "blue"], dimensions=16, user="u-1"
    )
    result = raw.parse()
    assert [item.embedding for item in result.data] == [
        fake_embedding("red fox", 16),
        fake_embedding("blue", 16),
    ]
    assert result.usage.prompt_tokens == 3  # the fake's count: 2 + 1 words
    assert raw.headers["x-gw-route"] == "primary/emb-a"
    [sent] = primary.requests
    assert sent.path == "/v1/embeddings"
    assert sent.headers["authorization"] == "Bearer sk-test-secret-0123"
    assert sent.json == {
        "model": "emb-a",
        "input": ["red fox", "blue"],
        "encoding_format": "float",  # the SDK asked gw for base64; gw re-encodes
        "dimensions": 16,
        "user": "u-1",
    }
    assert backup.count == 0


def test_azure_deployment_path(client: openai.OpenAI, primary: FakeOpenAI) -> None:
    result = client.embeddings.create(model="azure-embed", input="hi", encoding_format="float")
    assert result.data[0].embedding == fake_embedding("hi")
    [sent] = primary.requests
    assert sent.path == "/openai/deployments/emb-deploy/embeddings"
    assert sent.query == "api-version=2024-10-21"
    assert sent.headers["api-key"] == "sk-test-secret-0123"


def test_a_500_is_retried_then_falls_back(
    gw: GwServer, client: openai.OpenAI, primary: FakeOpenAI, backup: FakeOpenAI
) -> None:
    primary.enqueue(Behavior(status=500), Behavior(status=500))
    raw = client.embeddings.with_raw_response.create(model="embed", input="x")
    assert raw.parse().data[0].embedding == fake_embedding("x")
    assert raw.headers["x-gw-route"] == "backup/emb-b"
    assert (primary.count, backup.count) == (2, 1)
    trace = gw.wait_for_trace(raw.headers["x-gw-request-id"])
    assert [(a["provider"], a["outcome"], a["error_code"]) for a in trace["attempts"]] == [
        ("primary", "retried", "upstream_error"),
        ("primary", "fell_back", "upstream_error"),
        ("backup", "answered", None),
    ]
    assert trace["answered_by"] == {"provider": "backup", "model": "emb-b"}


def test_explain_and_traces_show_usage_and_cost(
    gw: GwServer, client: openai.OpenAI, primary: FakeOpenAI
) -> None:
    primary.enqueue(Behavior(usage=(1000, 0)))
    raw = client.embeddings.with_raw_response.create(model="embed", input="one two")
    request_id = raw.headers["x-gw-request-id"]
    explained = gw.wait_for_trace(request_id)
    assert (explained["endpoint"], explained["stream"], explained["status"]) == (
        "embeddings", False, 200,
    )  # fmt: skip
    assert explained["usage"]["input_tokens"] == 1000
    assert explained["usage"]["output_tokens"] == 0
    assert explained["usage"]["source"] == "provider"
    assert explained["cost_usd"] == pytest.approx(1000 * 0.02 / 1e6)
    assert explained["decision"]["max_output_tokens"] == 0
    assert explained["decision"]["estimated_input_tokens"] == 2
    [row] = [t for t in gw.cli_json("traces", "--limit", "20") if t["request_id"] == request_id]
    assert (row["input_tokens"], row["cost_usd"]) == (1000, pytest.approx(2e-5))
    human = gw.cli("explain", request_id).stdout
    assert "embeddings" in human


# --- errors --------------------------------------------------------------------------------


def post(gw: GwServer, payload: Any) -> httpx.Response:
    with gw.client() as http:
        return http.post("/v1/embeddings", json=payload)


def assert_openai_error(answer: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert answer.status_code == status, answer.text
    body: dict[str, Any] = answer.json()
    assert set(body["error"]) == {"message", "type", "code", "param"}
    assert body["error"]["code"] == code
    assert body["gw"]["request_id"] == answer.headers["x-gw-request-id"]
    assert answer.headers["x-gw-revision"].isdigit()
    assert "x-gw-route" in answer.headers
    return body


@pytest.mark.parametrize(
    ("payload", "param"),
    [
        ({"model": "mock-embed"}, "input"),
        ({"model": "mock-embed", "input": []}, "input"),
        ({"model": "mock-embed", "input": ["a", ""]}, "input[1]"),
        ({"model": "mock-embed", "input": [[1], [-1]]}, "input[1][0]"),
        ({"model": "mock-embed", "input": "x", "encoding_format": "int8"}, "encoding_format"),
        ({"model": "mock-embed", "input": "x", "dimensions": 0}, "dimensions"),
    ],
)
def test_bad_requests_are_400_in_openai_shape(
    gw: GwServer, payload: dict[str, Any], param: str
) -> None:
    body = assert_openai_error(post(gw, payload), 400, "invalid_request")
    assert body["error"]["param"] == param
    assert body["error"]["type"] == "invalid_request_error"


def test_the_sdk_raises_typed_errors(client: openai.OpenAI) -> None:
    with pytest.raises(openai.NotFoundError) as missing:
        client.embeddings.create(model="nope", input="x")
    assert missing.value.code == "model_not_found"
    with pytest.raises(openai.BadRequestError) as unsupported:
        client.embeddings.create(model="chat-only", input="x")
    assert unsupported.value.code == "native_feature_unsupported"
    assert "lacks embeddings" in str(unsupported.value)


def test_the_last_target_s_rate_limit_reaches_the_client(gw: GwServer, primary: FakeOpenAI) -> None:
    primary.enqueue(Behavior(status=429, headers={"retry-after": "60"}))
    answer = post(gw, {"model": "azure-embed", "input": "x"})
    body = assert_openai_error(answer, 429, "rate_limited")
    assert answer.headers["retry-after"] == "60"
    assert answer.headers["x-gw-route"] == "azure/emb-deploy"
    assert answer.headers["x-gw-queue-ms"] == "0"  # admitted, then failed
    assert body["gw"]["attempts"][0]["upstream_status"] == 429


def test_an_oversized_body_is_413(gw: GwServer) -> None:
    answer = post(gw, {"model": "mock-embed", "input": "x" * 100_000})
    assert_openai_error(answer, 413, "request_too_large")


def test_a_client_that_hangs_up_is_traced_and_the_call_cancelled(
    gw: GwServer, primary: FakeOpenAI
) -> None:
    """The upstream would answer after 60 s; the client hangs up once it has the request."""
    primary.enqueue(Behavior(delay_before_headers=60.0))
    taken = primary.count
    body = json.dumps({"model": "lazy-embed", "input": "x"}).encode()
    head = (
        "POST /v1/embeddings HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", gw.port)) as raw:
        raw.sendall(head.encode() + body)
        wait_until(lambda: primary.count > taken, "the upstream to receive the call")
    trace = wait_until(lambda: _trace_of_route(gw, "lazy-embed"), "the hung-up request's trace")
    assert (trace["status"], trace["error_code"]) == (499, "client_aborted")
    explained = gw.wait_for_trace(trace["request_id"])
    assert explained["endpoint"] == "embeddings"
    assert [a["outcome"] for a in explained["attempts"]] == ["aborted"]
    assert explained["attempts"][0]["latency_ms"] < 60_000  # cancelled, not waited out


def _trace_of_route(gw: GwServer, route: str) -> dict[str, Any] | None:
    traces = gw.cli_json("traces", "--limit", "5")
    return next((trace for trace in traces if trace["route"] == route), None)
