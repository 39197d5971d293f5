"""A ``kind: openai_responses`` upstream through a real gw: the openai SDK's chat
completions, the anthropic SDK and the openai SDK's Responses API served by a fake
Responses upstream, whole and streamed: text, a function call round trip, reasoning;
failures retried or fallen back before the first byte, and ended with an error after it;
what the format could not carry shown by ``gw explain``; and a Responses client's own
items, tools and ``previous_response_id`` reaching the upstream verbatim."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest
from google import genai
from google.genai import types

from e2e.gw_process import GwServer
from fakes.openai_upstream import DEFAULT_TEXT as BACKUP_TEXT
from fakes.openai_upstream import FakeOpenAI
from fakes.responses_answer import ENCRYPTED_INCLUDE
from fakes.responses_upstream import DEFAULT_TEXT, Behavior, FakeResponses

CONFIG = """
providers:
  - {{name: resp, kind: openai_responses, base_url: "{responses}", api_key: env:GW_TEST_KEY}}
  - {{name: backup, kind: openai_compatible, base_url: "{backup}"}}
routes:
  - {{name: resp, targets: [{{provider: resp, model: gpt-5-mini}}]}}
  - name: resp-first
    targets: [{{provider: resp, model: gpt-5-mini, priority: 1}},
              {{provider: backup, model: gpt-b, priority: 2}}]
policies:
  - name: quick
    match: {{routes: ["*"]}}
    retry: {{max_attempts: 2, initial_backoff: 10ms}}
health: {{lock_accounts: false}}
"""
WEATHER: Any = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}
ARGUMENTS = '{"city": "Paris"}'


@pytest.fixture(scope="module")
def fakes() -> Iterator[tuple[FakeResponses, FakeOpenAI]]:
    with FakeResponses() as responses, FakeOpenAI() as backup:
        yield responses, backup


@pytest.fixture(scope="module")
def gw(
    tmp_path_factory: pytest.TempPathFactory, fakes: tuple[FakeResponses, FakeOpenAI]
) -> Iterator[GwServer]:
    home = tmp_path_factory.mktemp("responses-upstream")
    config = home / "gw.yaml"
    responses, backup = fakes
    config.write_text(CONFIG.format(responses=responses.base_url, backup=backup.base_url))
    with GwServer(home / "state", config, env={"GW_TEST_KEY": "sk-upstream"}) as server:
        yield server


@pytest.fixture
def fake(fakes: tuple[FakeResponses, FakeOpenAI]) -> FakeResponses:
    for server in fakes:
        server.clear()
    fakes[0].default = Behavior()
    return fakes[0]


@pytest.fixture
def backup(fakes: tuple[FakeResponses, FakeOpenAI], fake: FakeResponses) -> FakeOpenAI:
    return fakes[1]


@pytest.fixture
def chat(gw: GwServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=gw.base_url, api_key="x", max_retries=0)


@pytest.fixture
def claude(gw: GwServer) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=gw.url, api_key="x", max_retries=0)


def sent(fake: FakeResponses, index: int = -1) -> dict[str, Any]:
    body: dict[str, Any] = fake.responses_requests[index].json
    return body


# ---- chat completions clients ----------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
def test_chat_completions_text(chat: openai.OpenAI, fake: FakeResponses, stream: bool) -> None:
    fake.default = Behavior(usage=(9, 4))
    messages: Any = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Say hello"},
    ]
    if stream:
        chunks = list(
            chat.chat.completions.create(
                model="resp", messages=messages, stream=True, stream_options={"include_usage": True}
            )
        )
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        finish = [c.choices[0].finish_reason for c in chunks if c.choices][-1]
        usage = chunks[-1].usage
    else:
        answer = chat.chat.completions.create(model="resp", messages=messages)
        text, finish, usage = (
            answer.choices[0].message.content,
            answer.choices[0].finish_reason,
            answer.usage,
        )
    assert (text, finish) == (DEFAULT_TEXT, "stop")
    assert usage is not None
    assert (usage.prompt_tokens, usage.completion_tokens) == (9, 4)
    body = sent(fake)
    assert fake.requests[-1].headers["authorization"] == "Bearer sk-upstream"
    assert (body["model"], body["stream"], body["store"]) == ("gpt-5-mini", stream, False)
    assert body["instructions"] == "Be brief."
    assert body["input"] == [
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "Say hello"}],
        }
    ]


@pytest.mark.parametrize("stream", [False, True])
def test_chat_completions_function_call_round_trip(
    chat: openai.OpenAI, fake: FakeResponses, stream: bool
) -> None:
    fake.enqueue(Behavior(tool_call=("get_weather", ARGUMENTS)), Behavior(text="Sunny."))
    question: Any = {"role": "user", "content": "Weather in Paris?"}
    if stream:
        chunks = list(
            chat.chat.completions.create(
                model="resp", messages=[question], tools=[WEATHER], stream=True
            )
        )
        fragments = [
            call for c in chunks if c.choices for call in c.choices[0].delta.tool_calls or ()
        ]
        call_id, name = fragments[0].id, fragments[0].function.name  # type: ignore[union-attr]
        arguments = "".join(f.function.arguments or "" for f in fragments if f.function)
    else:
        answer = chat.chat.completions.create(model="resp", messages=[question], tools=[WEATHER])
        assert answer.choices[0].finish_reason == "tool_calls"
        [call] = answer.choices[0].message.tool_calls or []
        call_id, name, arguments = call.id, call.function.name, call.function.arguments  # type: ignore[union-attr]
    assert (name, arguments) == ("get_weather", ARGUMENTS)
    assert sent(fake)["tools"] == [
        {"type": "function", "name": "get_weather", "parameters": WEATHER["function"]["parameters"],
         "strict": False}
    ]  # fmt: skip

    follow_up: Any = [
        question,
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": name, "arguments": arguments},
                }
            ],
        },
        {"role": "tool", "tool_call_id": call_id, "content": "21 C and sunny"},
    ]
    answer = chat.chat.completions.create(model="resp", messages=follow_up, tools=[WEATHER])
    assert answer.choices[0].message.content == "Sunny."
    assert sent(fake)["input"][1:] == [
        {
            "type": "function_call",
            "call_id": call_id,
            "name": "get_weather",
            "arguments": ARGUMENTS,
        },
        {"type": "function_call_output", "call_id": call_id, "output": "21 C and sunny"},
    ]


def test_chat_completions_reasoning_effort(chat: openai.OpenAI, fake: FakeResponses) -> None:
    fake.default = Behavior(reasoning=("Think first.",), text="42")
    answer = chat.chat.completions.create(
        model="resp", messages=[{"role": "user", "content": "meaning?"}], reasoning_effort="low"
    )
    assert answer.choices[0].message.content == "42"
    assert answer.usage is not None
    assert answer.usage.completion_tokens_details is not None
    assert answer.usage.completion_tokens_details.reasoning_tokens == 2
    assert sent(fake)["reasoning"] == {"effort": "low"}


# ---- Anthropic clients -------------------------------------------------------------------

TOOL: Any = {
    "name": "get_weather",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
}


def test_anthropic_messages_text_and_a_tool_round_trip(
    claude: anthropic.Anthropic, fake: FakeResponses
) -> None:
    fake.enqueue(Behavior(tool_call=("get_weather", ARGUMENTS)), Behavior(text="Sunny."))
    question: Any = {"role": "user", "content": "Weather in Paris?"}
    first = claude.messages.create(
        model="resp", max_tokens=200, system="Be brief.", messages=[question], tools=[TOOL]
    )
    assert first.stop_reason == "tool_use"
    [use] = [block for block in first.content if block.type == "tool_use"]
    assert (use.name, use.input) == ("get_weather", {"city": "Paris"})
    body = sent(fake)
    assert (body["instructions"], body["max_output_tokens"]) == ("Be brief.", 200)

    second = claude.messages.create(
        model="resp",
        max_tokens=200,
        messages=[
            question,
            {"role": "assistant", "content": first.content},  # type: ignore[typeddict-item]
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "21 C"}],
            },
        ],
        tools=[TOOL],
    )
    assert [block.text for block in second.content if block.type == "text"] == ["Sunny."]
    call, output = sent(fake)["input"][1:]
    assert (call["type"], call["call_id"], call["name"]) == ("function_call", use.id, "get_weather")
    assert json.loads(call["arguments"]) == {"city": "Paris"}
    assert output == {"type": "function_call_output", "call_id": use.id, "output": "21 C"}


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_anthropic_with_thinking(
    claude: anthropic.Anthropic, fake: FakeResponses, stream: bool
) -> None:
    fake.default = Behavior(reasoning=("Consider Paris.",), text="It is sunny.")
    asked: Any = {
        "model": "resp",
        "max_tokens": 4000,
        "thinking": {"type": "enabled", "budget_tokens": 2000},
        "messages": [{"role": "user", "content": "Weather?"}],
    }
    if stream:
        with claude.messages.stream(**asked) as events:
            final = events.get_final_message()
    else:
        final = claude.messages.create(**asked)
    assert [block.thinking for block in final.content if block.type == "thinking"] == [
        "Consider Paris."
    ]
    assert [block.text for block in final.content if block.type == "text"] == ["It is sunny."]
    assert final.stop_reason == "end_turn"
    assert sent(fake)["reasoning"] == {"effort": "low"}


# ---- Gemini clients -----------------------------------------------------------------------


def test_google_genai_text_whole_and_streamed(gw: GwServer, fake: FakeResponses) -> None:
    options = types.HttpOptions(base_url=gw.url, retry_options=types.HttpRetryOptions(attempts=1))
    sdk = genai.Client(api_key="x", http_options=options)
    config = types.GenerateContentConfig(system_instruction="Be brief.", max_output_tokens=50)
    answer = sdk.models.generate_content(model="resp", contents="Say hello", config=config)
    assert answer.text == DEFAULT_TEXT
    pieces = sdk.models.generate_content_stream(model="resp", contents="Say hello", config=config)
    assert "".join(piece.text or "" for piece in pieces) == DEFAULT_TEXT
    for request in fake.responses_requests:
        assert request.json["instructions"] == "Be brief."
        assert request.json["max_output_tokens"] == 50


# ---- failures ----------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
def test_a_rate_limit_is_retried(
    chat: openai.OpenAI, gw: GwServer, fake: FakeResponses, stream: bool
) -> None:
    fake.enqueue(Behavior(status=429, headers={"retry-after": "0"}), Behavior())
    raw = chat.chat.completions.with_raw_response.create(
        model="resp", messages=[{"role": "user", "content": "hi"}], stream=stream
    )
    if stream:
        text = "".join(c.choices[0].delta.content or "" for c in raw.parse() if c.choices)
    else:
        text = raw.parse().choices[0].message.content or ""
    assert text == DEFAULT_TEXT
    assert fake.count == 2
    trace = gw.wait_for_trace(raw.headers["x-gw-request-id"])
    assert [a["error_code"] for a in trace["attempts"]] == ["rate_limited", None]


def test_server_errors_fall_back_to_the_next_target(
    chat: openai.OpenAI, fake: FakeResponses, backup: FakeOpenAI
) -> None:
    fake.enqueue(Behavior(status=500), Behavior(status=500))
    answer = chat.chat.completions.create(
        model="resp-first", messages=[{"role": "user", "content": "hi"}]
    )
    assert answer.choices[0].message.content == BACKUP_TEXT
    assert (fake.count, backup.count) == (2, 1)


def test_a_response_failed_before_any_output_is_retried(
    chat: openai.OpenAI, fake: FakeResponses
) -> None:
    fake.enqueue(Behavior(ending="failed"), Behavior())
    chunks = chat.chat.completions.create(
        model="resp", messages=[{"role": "user", "content": "hi"}], stream=True
    )
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == DEFAULT_TEXT
    assert fake.count == 2


def test_an_error_event_after_text_ends_the_client_stream_with_an_error(
    chat: openai.OpenAI, claude: anthropic.Anthropic, fake: FakeResponses
) -> None:
    fake.default = Behavior(text="one two three four", error_after_chunks=2)
    seen: list[str] = []

    def drain() -> None:
        for chunk in chat.chat.completions.create(
            model="resp", messages=[{"role": "user", "content": "hi"}], stream=True
        ):
            seen.extend(c.delta.content or "" for c in chunk.choices)

    with pytest.raises(openai.APIError):
        drain()
    assert "".join(seen) == "one two"
    with (
        pytest.raises(anthropic.APIStatusError),
        claude.messages.stream(
            model="resp", max_tokens=100, messages=[{"role": "user", "content": "hi"}]
        ) as stream,
    ):
        stream.get_final_message()
    assert fake.count == 2  # committed: never retried


# ---- what gw explain shows -----------------------------------------------------------------


def test_explain_shows_the_notes_and_the_upstreams_response_id(
    chat: openai.OpenAI, gw: GwServer, fake: FakeResponses
) -> None:
    raw = chat.chat.completions.with_raw_response.create(
        model="resp", messages=[{"role": "user", "content": "hi"}], seed=7, stop=["END"]
    )
    trace = gw.wait_for_trace(raw.headers["x-gw-request-id"])
    [attempt] = trace["attempts"]
    assert attempt["provider"] == "resp"
    assert attempt["translation_notes"] == [
        "sampling.seed, stop sequences: not sent (the OpenAI Responses format has none)"
    ]
    assert attempt["upstream_response_id"].startswith("resp_fake")
    shown = gw.cli("explain", raw.headers["x-gw-request-id"]).stdout
    assert "OpenAI Responses" in shown


# ---- a Responses client: its own items and settings pass through ------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_a_responses_client_reaches_the_upstream_verbatim(
    chat: openai.OpenAI, fake: FakeResponses, stream: bool
) -> None:
    fake.enqueue(
        Behavior(reasoning=("Search first.",), web_search="paris weather", text="Sunny."),
        Behavior(text="You're welcome."),
    )
    asked: Any = {
        "model": "resp",
        "input": "Weather in Paris?",
        "tools": [{"type": "web_search"}],
        "include": [ENCRYPTED_INCLUDE],
        "store": True,
        "reasoning": {"effort": "low", "summary": "auto"},
    }
    if stream:
        with chat.responses.stream(**asked) as events:
            first = events.get_final_response()
    else:
        first = chat.responses.create(**asked)
    reasoning, search, _ = first.output
    assert reasoning.type == "reasoning"
    assert reasoning.id.startswith("rs_fake")  # the upstream's own item, not one gw made
    assert reasoning.encrypted_content
    assert [part.text for part in reasoning.summary] == ["Search first."]
    assert search.type == "web_search_call"
    assert first.output_text == "Sunny."
    assert sent(fake)["store"] is True

    echoed: Any = [reasoning.model_dump(exclude_none=True), search.model_dump(exclude_none=True)]
    chat.responses.create(
        model="resp",
        previous_response_id=first.id,
        input=[*echoed, {"role": "user", "content": "Thanks!"}],
        tools=[{"type": "web_search"}],
        include=[ENCRYPTED_INCLUDE],
        store=True,
    )
    body = sent(fake)
    assert body["previous_response_id"].startswith("resp_fake")
    assert body["previous_response_id"] != first.id  # the upstream's id, not gw's
    assert body["tools"] == [{"type": "web_search"}]
    assert body["include"] == [ENCRYPTED_INCLUDE]
    assert body["input"][:2] == echoed
    assert body["input"][0]["encrypted_content"] == reasoning.encrypted_content
    assert body["input"][2] == {
        "type": "message",
        "role": "user",
        "content": [{"type": "input_text", "text": "Thanks!"}],
    }
