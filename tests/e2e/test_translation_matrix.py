"""Every client format through gw to every upstream format, as the client SDKs parse it.

Ingress (the openai SDK's chat and Responses APIs, the anthropic SDK) x upstream (openai,
azure_openai, openai_responses, anthropic, gemini, mock) x {whole answer, stream} x
{plain text, a tool call round trip, an image}. (google-genai, the Gemini client, runs
against every upstream in test_gemini_ingress.py.)
Each upstream is a fake speaking its provider's real wire format on loopback; the
assertions are on what the client SDK parsed: text, tool call name and arguments, stop
reason and usage, and on what reached the upstream in its own format.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

import anthropic
import openai
import pytest

from e2e.gw_process import GwServer
from fakes import anthropic_upstream, gemini_upstream, openai_upstream, responses_upstream
from fakes.anthropic_upstream import FakeAnthropic
from fakes.gemini_upstream import FakeGemini
from fakes.openai_upstream import FakeOpenAI
from fakes.responses_upstream import FakeResponses

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 16).decode()
WEATHER = {
    "name": "get_weather",
    "description": "Weather for a city",
    "schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
ARGUMENTS = {"city": "Paris"}

CONFIG = """
providers:
  - {{name: oai, kind: openai_compatible, base_url: "{openai}"}}
  - {{name: azure, kind: azure_openai, base_url: "{azure}", api_key: env:GW_TEST_KEY}}
  - {{name: gem, kind: gemini, base_url: "{gemini}", api_key: env:GW_TEST_KEY}}
  - {{name: claude, kind: anthropic, base_url: "{anthropic}", api_key: env:GW_TEST_KEY}}
  - {{name: mock, kind: mock}}
  - {{name: oresp, kind: openai_responses, base_url: "{responses}", api_key: env:GW_TEST_KEY}}
routes:
  - {{name: to-openai, targets: [{{provider: oai, model: gpt-a}}]}}
  - {{name: to-azure, targets: [{{provider: azure, model: my-deployment}}]}}
  - {{name: to-gemini, targets: [{{provider: gem, model: gemini-2.5-flash}}]}}
  - {{name: to-anthropic, targets: [{{provider: claude, model: claude-sonnet-4-5}}]}}
  - {{name: to-mock, targets: [{{provider: mock, model: mock-1}}]}}
  - {{name: to-responses, targets: [{{provider: oresp, model: gpt-5-mini}}]}}
"""


# -- the clients -------------------------------------------------------------------------


@dataclass
class Reply:
    text: str
    stop: str  # normalised: "stop", "tool_calls" or "length"
    tool_calls: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    input_tokens: int = 0
    output_tokens: int = 0


class Client(Protocol):
    def ask(
        self, route: str, *, stream: bool, tools: bool = False, image: bool = False
    ) -> Reply: ...

    def answer_tool(self, route: str, first: Reply, *, stream: bool) -> Reply: ...


class OpenAIClient:
    def __init__(self, gw: GwServer) -> None:
        self.sdk = openai.OpenAI(base_url=gw.base_url, api_key="x", max_retries=0)

    def _messages(self, image: bool) -> list[dict[str, Any]]:
        content: Any = "What is the weather in Paris?"
        if image:
            content = [
                {"type": "text", "text": "What is this?"},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
            ]
        return [{"role": "user", "content": content}]

    def _tools(self) -> list[dict[str, Any]]:
        function = {
            "name": WEATHER["name"],
            "description": WEATHER["description"],
            "parameters": WEATHER["schema"],
        }
        return [{"type": "function", "function": function}]

    def _call(self, route: str, messages: list[Any], *, stream: bool, tools: bool) -> Reply:
        extra: dict[str, Any] = {"tools": self._tools()} if tools else {}
        if not stream:
            done = self.sdk.chat.completions.create(
                model=route, messages=messages, max_tokens=200, **extra
            )
            choice = done.choices[0]
            calls = [
                (c.id, c.function.name, json.loads(c.function.arguments))
                for c in choice.message.tool_calls or []
                if c.type == "function"
            ]
            assert done.usage is not None
            return Reply(
                choice.message.content or "",
                choice.finish_reason,
                calls,
                done.usage.prompt_tokens,
                done.usage.completion_tokens,
            )
        with self.sdk.chat.completions.stream(
            model=route,
            messages=messages,
            max_tokens=200,
            stream_options={"include_usage": True},
            **extra,
        ) as events:
            final = events.get_final_completion()
        choice = final.choices[0]
        calls = [
            (c.id, c.function.name, json.loads(c.function.arguments))
            for c in choice.message.tool_calls or []
        ]
        assert final.usage is not None
        return Reply(
            choice.message.content or "",
            choice.finish_reason,
            calls,
            final.usage.prompt_tokens,
            final.usage.completion_tokens,
        )

    def ask(self, route: str, *, stream: bool, tools: bool = False, image: bool = False) -> Reply:
        return self._call(route, self._messages(image), stream=stream, tools=tools)

    def answer_tool(self, route: str, first: Reply, *, stream: bool) -> Reply:
        call_id, name, arguments = first.tool_calls[0]
        messages = [
            *self._messages(False),
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps(arguments)},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": call_id, "content": "sunny, 21 C"},
        ]
        return self._call(route, messages, stream=stream, tools=True)


ANTHROPIC_STOPS = {"end_turn": "stop", "tool_use": "tool_calls", "max_tokens": "length"}


class AnthropicClient:
    def __init__(self, gw: GwServer) -> None:
        self.sdk = anthropic.Anthropic(base_url=gw.url, api_key="x", max_retries=0)

    def _messages(self, image: bool) -> list[dict[str, Any]]:
        content: Any = "What is the weather in Paris?"
        if image:
            source = {"type": "base64", "media_type": "image/png", "data": PNG}
            content = [
                {"type": "text", "text": "What is this?"},
                {"type": "image", "source": source},
            ]
        return [{"role": "user", "content": content}]

    def _tools(self) -> list[dict[str, Any]]:
        return [
            {
                "name": WEATHER["name"],
                "description": WEATHER["description"],
                "input_schema": WEATHER["schema"],
            }
        ]

    def _call(self, route: str, messages: list[Any], *, stream: bool, tools: bool) -> Reply:
        extra: dict[str, Any] = {"tools": self._tools()} if tools else {}
        if stream:
            with self.sdk.messages.stream(
                model=route, max_tokens=200, messages=messages, **extra
            ) as events:
                message = events.get_final_message()
        else:
            message = self.sdk.messages.create(
                model=route, max_tokens=200, messages=messages, **extra
            )
        text = "".join(block.text for block in message.content if block.type == "text")
        calls = [
            (block.id, block.name, dict(block.input))  # type: ignore[call-overload]
            for block in message.content
            if block.type == "tool_use"
        ]
        assert message.stop_reason is not None
        return Reply(
            text,
            ANTHROPIC_STOPS[message.stop_reason],
            calls,
            message.usage.input_tokens,
            message.usage.output_tokens,
        )

    def ask(self, route: str, *, stream: bool, tools: bool = False, image: bool = False) -> Reply:
        return self._call(route, self._messages(image), stream=stream, tools=tools)

    def answer_tool(self, route: str, first: Reply, *, stream: bool) -> Reply:
        call_id, name, arguments = first.tool_calls[0]
        messages = [
            *self._messages(False),
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": call_id, "name": name, "input": arguments}],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": call_id, "content": "sunny, 21 C"}
                ],
            },
        ]
        return self._call(route, messages, stream=stream, tools=True)


RESPONSES_STOPS = {"max_output_tokens": "length", "content_filter": "content_filter"}


class ResponsesClient:
    """The OpenAI SDK's ``client.responses`` (the Responses API, /v1/responses)."""

    def __init__(self, gw: GwServer) -> None:
        self.sdk = openai.OpenAI(base_url=gw.base_url, api_key="x", max_retries=0)

    def _input(self, image: bool) -> list[Any]:
        content: Any = "What is the weather in Paris?"
        if image:
            content = [
                {"type": "input_text", "text": "What is this?"},
                {"type": "input_image", "image_url": f"data:image/png;base64,{PNG}"},
            ]
        return [{"role": "user", "content": content}]

    def _tools(self) -> list[Any]:
        return [
            {
                "type": "function",
                "name": WEATHER["name"],
                "description": WEATHER["description"],
                "parameters": WEATHER["schema"],
                "strict": False,
            }
        ]

    def _call(self, route: str, items: list[Any], *, stream: bool, tools: bool) -> Reply:
        extra: dict[str, Any] = {"tools": self._tools()} if tools else {}
        if stream:
            with self.sdk.responses.stream(
                model=route, input=items, max_output_tokens=200, **extra
            ) as events:
                final = events.get_final_response()
        else:
            final = self.sdk.responses.create(
                model=route, input=items, max_output_tokens=200, **extra
            )
        calls = [
            (item.call_id, item.name, json.loads(item.arguments))
            for item in final.output
            if item.type == "function_call"
        ]
        stop = "tool_calls" if calls else "stop"
        if final.status == "incomplete" and final.incomplete_details is not None:
            stop = RESPONSES_STOPS[final.incomplete_details.reason or ""]
        assert final.usage is not None
        return Reply(
            final.output_text,
            stop,
            calls,
            final.usage.input_tokens,
            final.usage.output_tokens,
        )

    def ask(self, route: str, *, stream: bool, tools: bool = False, image: bool = False) -> Reply:
        return self._call(route, self._input(image), stream=stream, tools=tools)

    def answer_tool(self, route: str, first: Reply, *, stream: bool) -> Reply:
        call_id, name, arguments = first.tool_calls[0]
        items = [
            *self._input(False),
            {
                "type": "function_call",
                "call_id": call_id,
                "name": name,
                "arguments": json.dumps(arguments),
            },
            {"type": "function_call_output", "call_id": call_id, "output": "sunny, 21 C"},
        ]
        return self._call(route, items, stream=stream, tools=True)


# -- the upstreams -----------------------------------------------------------------------


class Upstream(Protocol):
    route: str
    text: str | None  # what a plain answer says; None: not known in advance (the mock)

    def script_tool_call(self) -> None: ...

    def script_text(self) -> None: ...

    def last_body(self) -> dict[str, Any] | None: ...

    def image_sent(self, body: dict[str, Any]) -> bool: ...

    def tool_result_sent(self, body: dict[str, Any]) -> bool: ...


class OpenAIUpstream:
    text = openai_upstream.DEFAULT_TEXT

    def __init__(self, fake: FakeOpenAI, route: str) -> None:
        self.fake, self.route = fake, route

    def script_tool_call(self) -> None:
        self.fake.enqueue(
            openai_upstream.Behavior(tool_call=("get_weather", json.dumps(ARGUMENTS)))
        )

    def script_text(self) -> None:
        self.fake.enqueue(openai_upstream.Behavior())

    def last_body(self) -> dict[str, Any] | None:
        return self.fake.requests[-1].json  # type: ignore[no-any-return]

    def image_sent(self, body: dict[str, Any]) -> bool:
        parts = body["messages"][-1]["content"]
        return {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}} in parts

    def tool_result_sent(self, body: dict[str, Any]) -> bool:
        return body["messages"][-1] == {
            "role": "tool",
            "tool_call_id": body["messages"][-2]["tool_calls"][0]["id"],
            "content": "sunny, 21 C",
        }


class GeminiUpstream:
    text = gemini_upstream.DEFAULT_TEXT
    route = "to-gemini"

    def __init__(self, fake: FakeGemini) -> None:
        self.fake = fake

    def script_tool_call(self) -> None:
        calls = (("get_weather", json.dumps(ARGUMENTS)),)
        self.fake.enqueue(gemini_upstream.Behavior(tool_calls=calls))

    def script_text(self) -> None:
        self.fake.enqueue(gemini_upstream.Behavior())

    def last_body(self) -> dict[str, Any] | None:
        return self.fake.requests[-1].json  # type: ignore[no-any-return]

    def image_sent(self, body: dict[str, Any]) -> bool:
        parts = body["contents"][-1]["parts"]
        return {"inlineData": {"mimeType": "image/png", "data": PNG}} in parts

    def tool_result_sent(self, body: dict[str, Any]) -> bool:
        parts = body["contents"][-1]["parts"]
        return any(p.get("functionResponse", {}).get("name") == "get_weather" for p in parts)


class AnthropicUpstream:
    text = anthropic_upstream.DEFAULT_TEXT
    route = "to-anthropic"

    def __init__(self, fake: FakeAnthropic) -> None:
        self.fake = fake

    def script_tool_call(self) -> None:
        call = ("get_weather", json.dumps(ARGUMENTS))
        self.fake.enqueue(anthropic_upstream.Behavior(tool_call=call))

    def script_text(self) -> None:
        self.fake.enqueue(anthropic_upstream.Behavior())

    def last_body(self) -> dict[str, Any] | None:
        return self.fake.requests[-1].json  # type: ignore[no-any-return]

    def image_sent(self, body: dict[str, Any]) -> bool:
        source = {"type": "base64", "media_type": "image/png", "data": PNG}
        return {"type": "image", "source": source} in body["messages"][-1]["content"]

    def tool_result_sent(self, body: dict[str, Any]) -> bool:
        turn = body["messages"][-1]
        call_id = body["messages"][-2]["content"][-1]["id"]
        result = turn["content"][0]
        return (
            turn["role"] == "user"
            and result["type"] == "tool_result"
            and result["tool_use_id"] == call_id
            and "sunny" in json.dumps(result["content"])
        )


class ResponsesUpstream:
    text = responses_upstream.DEFAULT_TEXT
    route = "to-responses"

    def __init__(self, fake: FakeResponses) -> None:
        self.fake = fake

    def script_tool_call(self) -> None:
        call = ("get_weather", json.dumps(ARGUMENTS))
        self.fake.enqueue(responses_upstream.Behavior(tool_call=call))

    def script_text(self) -> None:
        self.fake.enqueue(responses_upstream.Behavior())

    def last_body(self) -> dict[str, Any] | None:
        return self.fake.responses_requests[-1].json  # type: ignore[no-any-return]

    def image_sent(self, body: dict[str, Any]) -> bool:
        parts = body["input"][-1]["content"]
        return any(
            part.get("type") == "input_image"
            and part.get("image_url") == f"data:image/png;base64,{PNG}"
            for part in parts
        )

    def tool_result_sent(self, body: dict[str, Any]) -> bool:
        call, result = body["input"][-2:]
        return call["type"] == "function_call" and result == {
            "type": "function_call_output",
            "call_id": call["call_id"],
            "output": "sunny, 21 C",
        }


class MockUpstream:
    route = "to-mock"
    text = None

    def script_tool_call(self) -> None:
        """The mock calls the first offered tool by itself."""

    def script_text(self) -> None:
        """The mock answers with text once the last message is a tool result."""

    def last_body(self) -> dict[str, Any] | None:
        return None  # no wire: nothing to inspect

    def image_sent(self, body: dict[str, Any]) -> bool:
        return True

    def tool_result_sent(self, body: dict[str, Any]) -> bool:
        return True


# -- fixtures ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fakes() -> Iterator[dict[str, Any]]:
    with (
        FakeOpenAI() as oai,
        FakeOpenAI() as azure,
        FakeGemini() as gem,
        FakeAnthropic() as claude,
        FakeResponses() as responses,
    ):
        yield {
            "openai": oai,
            "azure": azure,
            "gemini": gem,
            "anthropic": claude,
            "responses": responses,
        }


@pytest.fixture(scope="module")
def matrix_gw(
    tmp_path_factory: pytest.TempPathFactory, fakes: dict[str, Any]
) -> Iterator[GwServer]:
    home = tmp_path_factory.mktemp("matrix")
    config = home / "gw.yaml"
    config.write_text(
        CONFIG.format(
            openai=fakes["openai"].base_url,
            azure=fakes["azure"].base_url.removesuffix("/v1"),
            gemini=fakes["gemini"].base_url,
            anthropic=fakes["anthropic"].base_url,
            responses=fakes["responses"].base_url,
        )
    )
    with GwServer(home / "state", config, env={"GW_TEST_KEY": "k-test"}) as server:
        yield server


CLIENTS: dict[str, type[OpenAIClient | AnthropicClient | ResponsesClient]] = {
    "openai": OpenAIClient,
    "anthropic": AnthropicClient,
    "responses": ResponsesClient,
}


@pytest.fixture(params=list(CLIENTS))
def client(request: pytest.FixtureRequest, matrix_gw: GwServer) -> Client:
    return CLIENTS[request.param](matrix_gw)


@pytest.fixture(
    params=["openai", "azure_openai", "anthropic", "gemini", "openai_responses", "mock"]
)
def upstream(request: pytest.FixtureRequest, fakes: dict[str, Any]) -> Upstream:
    for fake in fakes.values():
        fake.clear()
    chosen: Upstream
    if request.param == "openai":
        chosen = OpenAIUpstream(fakes["openai"], "to-openai")
    elif request.param == "azure_openai":
        chosen = OpenAIUpstream(fakes["azure"], "to-azure")
    elif request.param == "anthropic":
        chosen = AnthropicUpstream(fakes["anthropic"])
    elif request.param == "gemini":
        chosen = GeminiUpstream(fakes["gemini"])
    elif request.param == "openai_responses":
        chosen = ResponsesUpstream(fakes["responses"])
    else:
        chosen = MockUpstream()
    return chosen


STREAM = pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])


# -- the matrix --------------------------------------------------------------------------


@STREAM
def test_plain_text(client: Client, upstream: Upstream, stream: bool) -> None:
    upstream.script_text()
    reply = client.ask(upstream.route, stream=stream)
    assert reply.text
    if upstream.text is not None:
        assert reply.text == upstream.text
    assert reply.stop == "stop"
    assert reply.tool_calls == []
    assert reply.input_tokens > 0
    assert reply.output_tokens > 0


@STREAM
def test_tool_call_round_trip(client: Client, upstream: Upstream, stream: bool) -> None:
    upstream.script_tool_call()
    first = client.ask(upstream.route, stream=stream, tools=True)
    assert first.stop == "tool_calls"
    assert len(first.tool_calls) == 1
    call_id, name, arguments = first.tool_calls[0]
    assert call_id
    assert name == "get_weather"
    if upstream.text is not None:
        assert arguments == ARGUMENTS

    upstream.script_text()
    second = client.answer_tool(upstream.route, first, stream=stream)
    assert second.text
    assert second.stop == "stop"
    body = upstream.last_body()
    if body is not None:
        assert upstream.tool_result_sent(body), body


@STREAM
def test_image_input(client: Client, upstream: Upstream, stream: bool) -> None:
    upstream.script_text()
    reply = client.ask(upstream.route, stream=stream, image=True)
    assert reply.text
    body = upstream.last_body()
    if body is not None:
        assert upstream.image_sent(body), body


def test_a_lossy_translation_is_traced_and_explained(
    matrix_gw: GwServer, fakes: dict[str, Any]
) -> None:
    # Gemini's schema subset has no additionalProperties: gw drops it and says so.
    fakes["gemini"].clear()
    schema = {**WEATHER["schema"], "additionalProperties": False}
    tool = {"type": "function", "function": {"name": "get_weather", "parameters": schema}}
    sdk = openai.OpenAI(base_url=matrix_gw.base_url, api_key="x", max_retries=0)
    raw = sdk.chat.completions.with_raw_response.create(
        model="to-gemini", messages=[{"role": "user", "content": "hi"}], tools=[tool]
    )
    request_id = raw.headers["x-gw-request-id"]
    sent = fakes["gemini"].requests[-1].json
    assert "additionalProperties" not in sent["tools"][0]["functionDeclarations"][0]["parameters"]
    trace = matrix_gw.wait_for_trace(request_id)
    assert trace["attempts"][0]["translation_notes"] == [
        "tools[0].parameters.additionalProperties: removed"
    ]
    shown = matrix_gw.cli("explain", request_id).stdout
    assert "OpenAI chat -> IR -> Gemini generateContent; lossy:" in shown


def test_embeddings_through_gemini(matrix_gw: GwServer, fakes: dict[str, Any]) -> None:
    gemini = fakes["gemini"]
    gemini.clear()
    sdk = openai.OpenAI(base_url=matrix_gw.base_url, api_key="x", max_retries=0)
    texts = [f"text {n}" for n in range(250)]
    answer = sdk.embeddings.create(model="gem/gemini-embedding-001", input=texts, dimensions=8)
    assert [item.index for item in answer.data] == list(range(250))
    assert {len(item.embedding) for item in answer.data} == {8}
    sent = gemini.requests
    assert [r.path for r in sent] == ["/v1beta/models/gemini-embedding-001:batchEmbedContents"] * 3
    assert [len(r.json["requests"]) for r in sent] == [100, 100, 50]
    assert sent[0].json["requests"][0] == {
        "model": "models/gemini-embedding-001",
        "content": {"parts": [{"text": "text 0"}]},
        "outputDimensionality": 8,
    }

    with pytest.raises(openai.BadRequestError) as caught:
        sdk.embeddings.create(model="gem/gemini-embedding-001", input=[[1, 2, 3]])
    assert caught.value.code == "native_feature_unsupported"
