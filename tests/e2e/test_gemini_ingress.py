"""The Gemini API through a live gw, driven by Google's own SDK (google-genai), to every
upstream kind: fake OpenAI-compatible, Anthropic and Gemini servers speaking their real wire
formats on loopback, and the built-in mock.

google-genai calls ``/v1/models/{model}:...`` by default; ``api_version="v1beta"`` (what
Gemini CLI's SDK uses) is checked too. Assertions are on what the SDK parsed, on what
reached each upstream in its own format, and on what gw traced.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from google import genai
from google.genai import errors, types

from e2e.gw_process import GwServer
from fakes import anthropic_upstream, gemini_upstream, openai_upstream
from fakes.anthropic_upstream import FakeAnthropic
from fakes.gemini_upstream import FakeGemini
from fakes.openai_upstream import FakeOpenAI

CONFIG = """
providers:
  - {{name: oai, kind: openai_compatible, base_url: "{openai}", api_key: env:GW_TEST_KEY}}
  - {{name: claude, kind: anthropic, base_url: "{anthropic}", api_key: env:GW_TEST_KEY}}
  - {{name: gem, kind: gemini, base_url: "{gemini}", api_key: env:GW_TEST_KEY}}
  - {{name: mock, kind: mock}}
models:
  - {{provider: oai, model: emb-a, capabilities: [embeddings]}}
  - {{provider: gem, model: gemini-embedding-001, capabilities: [embeddings]}}
  - {{provider: mock, model: mock-emb, capabilities: [embeddings]}}
routes:
  - {{name: to-openai, targets: [{{provider: oai, model: gpt-a}}]}}
  - {{name: to-anthropic, targets: [{{provider: claude, model: claude-sonnet-4-5}}]}}
  - {{name: to-gemini, targets: [{{provider: gem, model: gemini-2.5-flash}}]}}
  - {{name: to-mock, targets: [{{provider: mock, model: mock-1}}]}}
  - {{name: embed-openai, targets: [{{provider: oai, model: emb-a}}]}}
  - {{name: embed-google, targets: [{{provider: gem, model: gemini-embedding-001}}]}}
  - {{name: embed-mock, targets: [{{provider: mock, model: mock-emb}}]}}
tenants: [{{name: team}}]
policies:
  - name: fast
    match: {{routes: ["*"]}}
    retry: {{max_attempts: 1}}
    timeout: {{total: 30s, per_attempt: 10s}}
"""
UPSTREAM_KEY = "k-upstream-test"
QUESTION = "What is the weather in Paris?"
WEATHER = types.Tool(
    function_declarations=[
        types.FunctionDeclaration(
            name="get_weather",
            description="Weather for a city",
            parameters=types.Schema(
                type="OBJECT", properties={"city": types.Schema(type="STRING")}, required=["city"]
            ),
        )
    ]
)
NO_AFC = types.AutomaticFunctionCallingConfig(disable=True)
EMBED_ROUTES = {"openai": "embed-openai", "gemini": "embed-google", "mock": "embed-mock"}
TOOLS = types.GenerateContentConfig(tools=[WEATHER], automatic_function_calling=NO_AFC)


@dataclass
class Upstream:
    """One upstream kind behind one route: how to script it and what it received."""

    kind: str
    route: str
    fake: Any  # the fake server; None for the mock
    text: str | None  # what a plain answer says; None: not known in advance (the mock)

    def script_text(self) -> None:
        if self.kind == "openai":
            self.fake.enqueue(openai_upstream.Behavior())
        elif self.kind == "anthropic":
            self.fake.enqueue(anthropic_upstream.Behavior())
        elif self.kind == "gemini":
            self.fake.enqueue(gemini_upstream.Behavior())

    def script_call(self) -> None:
        arguments = json.dumps({"city": "Paris"})
        if self.kind == "openai":
            self.fake.enqueue(openai_upstream.Behavior(tool_call=("get_weather", arguments)))
        elif self.kind == "anthropic":
            self.fake.enqueue(anthropic_upstream.Behavior(tool_call=("get_weather", arguments)))
        elif self.kind == "gemini":
            calls = (("get_weather", arguments),)
            self.fake.enqueue(gemini_upstream.Behavior(tool_calls=calls, thought_signature="c2ln"))

    def last_body(self) -> Any:
        return self.fake.requests[-1].json if self.fake is not None else None

    def question_arrived(self) -> bool:
        """The question reached the upstream in the upstream's own format."""
        body = self.last_body()
        if self.kind == "openai":
            return bool(body["messages"][-1] == {"role": "user", "content": QUESTION})
        if self.kind == "anthropic":
            return bool(
                body["messages"][-1]["content"] in (QUESTION, [{"type": "text", "text": QUESTION}])
            )
        if self.kind == "gemini":
            return bool(body["contents"][-1] == {"role": "user", "parts": [{"text": QUESTION}]})
        return True

    def result_arrived(self) -> bool:
        """The function's result reached the upstream as that format's tool result."""
        body = self.last_body()
        if self.kind == "openai":
            call_id = body["messages"][-2]["tool_calls"][0]["id"]
            return bool(
                body["messages"][-1]
                == {"role": "tool", "tool_call_id": call_id, "content": "sunny, 21 C"}
            )
        if self.kind == "anthropic":
            call_id = body["messages"][-2]["content"][-1]["id"]
            result = body["messages"][-1]["content"][0]
            return bool(
                result["tool_use_id"] == call_id and "sunny" in json.dumps(result["content"])
            )
        if self.kind == "gemini":
            model_turn, results = body["contents"][-2], body["contents"][-1]
            # Gemini's signature came back on the call it was given on.
            call = next(p for p in model_turn["parts"] if "functionCall" in p)
            answered = results["parts"][0]["functionResponse"]
            return bool(
                call["thoughtSignature"] == "c2ln"
                and answered == {"name": "get_weather", "response": {"output": "sunny, 21 C"}}
            )
        return True


@pytest.fixture(scope="module")
def fakes() -> Iterator[dict[str, Any]]:
    with FakeOpenAI() as oai, FakeAnthropic() as claude, FakeGemini(api_key=UPSTREAM_KEY) as gem:
        yield {"openai": oai, "anthropic": claude, "gemini": gem}


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory, fakes: dict[str, Any]) -> Iterator[GwServer]:
    home = tmp_path_factory.mktemp("gemini-ingress")
    config = home / "gw.yaml"
    config.write_text(
        CONFIG.format(
            openai=fakes["openai"].base_url,
            anthropic=fakes["anthropic"].base_url,
            gemini=fakes["gemini"].base_url,
        )
    )
    with GwServer(home / "state", config, env={"GW_TEST_KEY": UPSTREAM_KEY}) as server:
        yield server


TEXTS = {
    "openai": openai_upstream.DEFAULT_TEXT,
    "anthropic": anthropic_upstream.DEFAULT_TEXT,
    "gemini": gemini_upstream.DEFAULT_TEXT,
    "mock": None,
}


@pytest.fixture(params=list(TEXTS))
def upstream(request: pytest.FixtureRequest, fakes: dict[str, Any]) -> Upstream:
    for fake in fakes.values():
        fake.clear()
    kind: str = request.param
    return Upstream(kind, f"to-{kind}", fakes.get(kind), TEXTS[kind])


def client(gw: GwServer, key: str = "anything", api_version: str | None = None) -> genai.Client:
    options = types.HttpOptions(
        base_url=gw.url,
        api_version=api_version,
        retry_options=types.HttpRetryOptions(attempts=1),
    )
    return genai.Client(api_key=key, http_options=options)


def gw_header(response: Any, name: str) -> str:
    value: str = response.sdk_http_response.headers[name]
    return value


# -- generate, stream, function calling, to every upstream -----------------------------------


def test_generate_content(gw: GwServer, upstream: Upstream) -> None:
    upstream.script_text()
    sdk = client(gw)
    answer = sdk.models.generate_content(model=upstream.route, contents=QUESTION)
    if upstream.text is not None:
        assert answer.text == upstream.text
    else:
        assert answer.text
    assert answer.candidates is not None
    assert answer.candidates[0].finish_reason == "STOP"
    assert answer.usage_metadata is not None
    assert answer.usage_metadata.prompt_token_count
    assert upstream.question_arrived()
    request_id = gw_header(answer, "x-gw-request-id")
    assert answer.response_id == request_id
    assert gw_header(answer, "x-gw-route").split("/")[0] in ("oai", "claude", "gem", "mock")
    assert int(gw_header(answer, "x-gw-revision")) >= 1
    trace = gw.wait_for_trace(request_id)
    assert trace["endpoint"] == "gemini.generateContent"
    assert trace["requested_model"] == upstream.route
    assert trace["decision"]["route"] == upstream.route


def test_generate_content_stream(gw: GwServer, upstream: Upstream) -> None:
    upstream.script_text()
    sdk = client(gw, api_version="v1beta")
    chunks = list(sdk.models.generate_content_stream(model=upstream.route, contents=QUESTION))
    text = "".join(chunk.text or "" for chunk in chunks)
    if upstream.text is not None:
        assert text == upstream.text
    else:
        assert text.startswith("Mock answer")
    assert len(chunks) > 1
    last = chunks[-1]
    assert last.candidates is not None
    assert last.candidates[0].finish_reason == "STOP"
    assert last.usage_metadata is not None
    assert last.usage_metadata.total_token_count
    assert upstream.question_arrived()
    trace = gw.wait_for_trace(chunks[0].response_id or "")
    assert (trace["endpoint"], trace["stream"]) == ("gemini.streamGenerateContent", True)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_a_function_call_round_trip(gw: GwServer, upstream: Upstream, stream: bool) -> None:
    """The model calls a function, the client sends its result, the model answers: through
    google-genai's chats, which keep the history (and its ids and signatures) themselves."""
    sdk = client(gw)
    chat = sdk.chats.create(model=upstream.route, config=TOOLS)
    upstream.script_call()
    calls = _send(chat, QUESTION, stream=stream).function_calls
    assert calls is not None
    assert [call.name for call in calls] == ["get_weather"]
    if upstream.kind != "mock":  # the mock makes up its own arguments
        assert calls[0].args == {"city": "Paris"}
    upstream.script_text()
    result = types.Part.from_function_response(
        name="get_weather", response={"output": "sunny, 21 C"}
    )
    final = _send(chat, result, stream=stream)
    if upstream.text is not None:
        assert final.text == upstream.text
    else:
        assert final.text
    assert upstream.result_arrived()


@dataclass
class _Reply:
    text: str | None
    function_calls: list[types.FunctionCall] | None


def _send(chat: Any, message: Any, *, stream: bool) -> _Reply:
    if not stream:
        answer = chat.send_message(message)
        return _Reply(answer.text, answer.function_calls)
    chunks = list(chat.send_message_stream(message))
    calls = [call for chunk in chunks for call in chunk.function_calls or []]
    text = "".join(chunk.text or "" for chunk in chunks)
    return _Reply(text or None, calls or None)


# -- count tokens, models, embeddings --------------------------------------------------------


def test_count_tokens_is_gws_estimate_without_an_upstream_call(
    gw: GwServer, fakes: dict[str, Any]
) -> None:
    for fake in fakes.values():
        fake.clear()
    sdk = client(gw)
    counted = sdk.models.count_tokens(model="to-gemini", contents="one two three four")
    assert counted.total_tokens is not None
    assert counted.total_tokens > 0
    assert all(not fake.requests for fake in fakes.values())


def test_models_list_and_get(gw: GwServer) -> None:
    sdk = client(gw)
    names = [model.name for model in sdk.models.list()]
    assert {"models/to-openai", "models/to-gemini", "models/embed-google"} <= set(names)
    assert "models/gem/gemini-embedding-001" in names  # catalogued provider/model
    model = sdk.models.get(model="to-anthropic")
    assert model.name == "models/to-anthropic"
    assert model.supported_actions is not None
    assert "generateContent" in model.supported_actions
    beta = client(gw, api_version="v1beta")
    embedder = beta.models.get(model="embed-google")
    assert embedder.supported_actions == ["embedContent", "batchEmbedContents"]


@pytest.mark.parametrize("kind", ["openai", "gemini", "mock"])
def test_embed_content(gw: GwServer, fakes: dict[str, Any], kind: str) -> None:
    """Routes are named without "gemini": google-genai sends a model named so (other than
    gemini-embedding-001) its list of texts as one content, to embed as one vector."""
    fake = fakes.get(kind)
    if fake is not None:
        fake.clear()
    config = types.EmbedContentConfig(output_dimensionality=8)
    sdk = client(gw)
    done = sdk.models.embed_content(
        model=EMBED_ROUTES[kind], contents=["first text", "second text"], config=config
    )
    vectors = [embedding.values for embedding in done.embeddings or []]
    assert len(vectors) == 2
    assert all(vector and len(vector) == 8 for vector in vectors)
    assert vectors[0] != vectors[1]
    if kind == "openai":
        assert fake.requests[-1].json["input"] == ["first text", "second text"]
    elif kind == "gemini":
        sent = fake.requests[-1]
        assert sent.path.endswith(":batchEmbedContents")
        assert [r["content"]["parts"][0]["text"] for r in sent.json["requests"]] == [
            "first text",
            "second text",
        ]


# -- errors ----------------------------------------------------------------------------------


def test_an_unknown_model_is_a_404_the_sdk_raises(gw: GwServer) -> None:
    sdk = client(gw)
    with pytest.raises(errors.ClientError) as caught:
        sdk.models.generate_content(model="no-such-route", contents="hi")
    assert (caught.value.code, caught.value.status) == (404, "NOT_FOUND")
    assert caught.value.details["gw"]["code"] == "model_not_found"
    with pytest.raises(errors.ClientError) as streamed:
        list(sdk.models.generate_content_stream(model="no-such-route", contents="hi"))
    assert streamed.value.code == 404


def test_a_direct_provider_model_holds_a_slash(gw: GwServer, fakes: dict[str, Any]) -> None:
    fakes["openai"].clear()
    sdk = client(gw, api_version="v1beta")
    answer = sdk.models.generate_content(model="oai/gpt-z", contents="hi")
    assert answer.text == openai_upstream.DEFAULT_TEXT
    assert fakes["openai"].requests[-1].json["model"] == "gpt-z"


def test_a_failure_after_the_first_byte_ends_the_stream_with_one_error(
    gw: GwServer, fakes: dict[str, Any]
) -> None:
    fakes["openai"].clear()
    fakes["openai"].enqueue(
        openai_upstream.Behavior(text="one two three four", drop_after_chunks=2)
    )
    sdk = client(gw)
    stream = sdk.models.generate_content_stream(model="to-openai", contents="hi")
    got: list[str] = []
    with pytest.raises(errors.APIError) as caught:
        got.extend(chunk.text or "" for chunk in stream)
    assert "".join(got) == "one two"  # what came before the failure, and no second answer
    assert caught.value.details["gw"]["code"] == "upstream_error"


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/v1beta/cachedContents"),
        ("POST", "/v1beta/models/to-mock:predict"),
        ("DELETE", "/v1beta/models/to-mock"),
        ("GET", "/v1beta"),
    ],
)
def test_an_unknown_gemini_path_is_a_404_naming_what_gw_serves(
    gw: GwServer, method: str, path: str
) -> None:
    with gw.client() as http:
        answer = http.request(method, path, json={} if method == "POST" else None)
    assert answer.status_code == 404
    body = answer.json()
    assert body["error"]["status"] == "NOT_FOUND"
    assert body["error"]["code"] == 404
    assert body["gw"]["code"] == "endpoint_not_found"
    if path != "/v1beta":
        assert ":generateContent" in body["error"]["message"]
    assert answer.headers["x-gw-request-id"].startswith("req_")


# -- keys mode -------------------------------------------------------------------------------


@pytest.fixture
def keyed_gw(tmp_path: Path) -> Iterator[GwServer]:
    config = tmp_path / "gw.yaml"
    config.write_text(
        "providers: [{name: mock, kind: mock}]\n"
        "routes: [{name: to-mock, targets: [{provider: mock, model: mock-1}]}]\n"
        "tenants: [{name: team}]\n"
    )
    with GwServer(tmp_path / "state", config) as server:
        yield server


def test_keys_mode_takes_x_goog_api_key_or_the_key_parameter(keyed_gw: GwServer) -> None:
    assert keyed_gw.config is not None
    made = keyed_gw.cli_json("keys", "create", "--tenant", "team", "--config", str(keyed_gw.config))
    key: str = made["key"]
    sdk = client(keyed_gw, key=key)
    answer = sdk.models.generate_content(model="to-mock", contents="hi")
    assert answer.text
    stranger = client(keyed_gw, key="wrong-key")
    with pytest.raises(errors.ClientError) as caught:
        stranger.models.generate_content(model="to-mock", contents="hi")
    assert (caught.value.code, caught.value.status) == (401, "UNAUTHENTICATED")
    body = {"contents": [{"parts": [{"text": "hi"}]}]}
    with keyed_gw.client() as http:
        by_query = http.post(f"/v1beta/models/to-mock:generateContent?key={key}", json=body)
        no_key = http.post("/v1beta/models/to-mock:generateContent", json=body)
        elsewhere = http.get(f"/v1/models?key={key}")
    assert by_query.status_code == 200
    assert no_key.status_code == 401
    assert no_key.json()["error"]["status"] == "UNAUTHENTICATED"
    assert elsewhere.status_code == 401  # ?key= is taken on Gemini's paths only
    trace = keyed_gw.wait_for_trace(by_query.headers["x-gw-request-id"])
    assert trace["key_id"] == made["id"]
    assert key not in json.dumps(trace)
    assert key not in keyed_gw.log()


def test_the_raw_sse_frames_are_googles(gw: GwServer) -> None:
    body = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
    with gw.client() as http:
        sse = http.post("/v1beta/models/to-mock:streamGenerateContent?alt=sse", json=body)
        array = http.post("/v1beta/models/to-mock:streamGenerateContent", json=body)
    assert sse.headers["content-type"].startswith("text/event-stream")
    frames = sse.content.split(b"\r\n\r\n")
    assert frames[-1] == b""
    assert all(frame.startswith(b"data: {") for frame in frames[:-1])
    assert array.headers["content-type"].startswith("application/json")
    chunks = json.loads(array.content)
    assert chunks[-1]["candidates"][0]["finishReason"] == "STOP"


def test_options_has_the_gw_headers_too(gw: GwServer) -> None:
    with gw.client() as http:
        answer = http.options("/v1beta/models/to-mock:generateContent")
    assert answer.status_code == 204
    assert answer.headers["x-gw-request-id"].startswith("req_")
    assert answer.headers["x-gw-route"] == "-"
