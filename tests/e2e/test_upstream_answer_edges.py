"""What real upstreams send at the edges, through a live gw to the official SDKs.

- An answer cut by the output limit inside a tool call (``finish_reason: length``,
  arguments ``{"city": "Par``) is the client's answer, ended at the limit with the cut call
  dropped and noted in the trace; never a retry, never a 502.
- A tool-call turn that an OpenAI-compatible server ends with ``finish_reason: stop`` is a
  tool-call turn (``tool_use`` for Anthropic clients).
- A context-window error worded the LiteLLM way is ``context_length_exceeded``.
- Errors that would repeat (404 model not found, a body that is not JSON) are not retried
  on the same target; they fall back to the next.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest

from e2e.gw_process import GwServer
from fakes.openai_upstream import Behavior, FakeOpenAI

CONFIG = """
providers:
  - {{name: main, kind: openai_compatible, base_url: "{main}"}}
  - {{name: spare, kind: openai_compatible, base_url: "{spare}"}}
routes:
  - {{name: solo, targets: [{{provider: main, model: m1}}]}}
  - name: pair
    targets: [{{provider: main, model: m1, priority: 1}}, {{provider: spare, model: m2, priority: 2}}]
policies:
  - {{name: p, match: {{routes: ["*"]}}, retry: {{max_attempts: 3, initial_backoff: 1ms}}}}
"""
CUT = Behavior(tool_call=("get_weather", '{"city": "Par'), finish_reason="length")
TOOLS_OPENAI: Any = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]
TOOLS_ANTHROPIC: Any = [
    {
        "name": "get_weather",
        "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
    }
]
HI: Any = [{"role": "user", "content": "weather in Paris?"}]


@pytest.fixture(scope="module")
def fakes() -> Iterator[tuple[FakeOpenAI, FakeOpenAI]]:
    with FakeOpenAI() as main, FakeOpenAI() as spare:
        yield main, spare


@pytest.fixture(scope="module")
def gw(
    tmp_path_factory: pytest.TempPathFactory, fakes: tuple[FakeOpenAI, FakeOpenAI]
) -> Iterator[GwServer]:
    home = tmp_path_factory.mktemp("edges")
    config = home / "gw.yaml"
    main, spare = fakes
    config.write_text(CONFIG.format(main=main.base_url, spare=spare.base_url))
    with GwServer(home / "state", config) as server:
        yield server


@pytest.fixture(autouse=True)
def fresh_fakes(fakes: tuple[FakeOpenAI, FakeOpenAI]) -> None:
    for fake in fakes:
        fake.clear()


@pytest.fixture
def anthropic_sdk(gw: GwServer) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=gw.url, api_key="unused", max_retries=0)


@pytest.fixture
def openai_sdk(gw: GwServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=gw.base_url, api_key="unused", max_retries=0)


def notes(gw: GwServer, request_id: str) -> list[str]:
    explained = gw.cli_json("explain", request_id)
    return [note for a in explained["attempts"] for note in a.get("translation_notes", [])]


def test_a_tool_call_cut_by_the_limit_ends_at_the_limit_for_anthropic_clients(
    gw: GwServer, fakes: tuple[FakeOpenAI, FakeOpenAI], anthropic_sdk: anthropic.Anthropic
) -> None:
    main, _ = fakes
    main.enqueue(CUT)
    raw = anthropic_sdk.messages.with_raw_response.create(
        model="solo", max_tokens=20, messages=HI, tools=TOOLS_ANTHROPIC
    )
    message = raw.parse()
    assert message.stop_reason == "max_tokens"
    assert [block.type for block in message.content] == []
    assert len(main.requests) == 1  # never retried
    assert any(
        "cut short by the output limit" in n for n in notes(gw, raw.headers["x-gw-request-id"])
    )


def test_a_streamed_cut_call_ends_at_the_limit_in_one_call(
    gw: GwServer, fakes: tuple[FakeOpenAI, FakeOpenAI], anthropic_sdk: anthropic.Anthropic
) -> None:
    main, _ = fakes
    main.enqueue(CUT)
    with anthropic_sdk.messages.stream(
        model="solo", max_tokens=20, messages=HI, tools=TOOLS_ANTHROPIC
    ) as stream:
        final = stream.get_final_message()
        request_id = stream.response.headers["x-gw-request-id"]
    assert final.stop_reason == "max_tokens"
    assert len(main.requests) == 1
    assert any("cut short by the output limit" in n for n in notes(gw, request_id))


def test_a_cut_call_reaches_openai_clients_as_length_without_the_call(
    fakes: tuple[FakeOpenAI, FakeOpenAI], openai_sdk: openai.OpenAI
) -> None:
    main, _ = fakes
    main.enqueue(CUT)
    completion = openai_sdk.chat.completions.create(
        model="solo", messages=HI, tools=TOOLS_OPENAI, max_tokens=20
    )
    choice = completion.choices[0]
    assert choice.finish_reason == "length"
    assert not choice.message.tool_calls


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_tool_calls_ended_with_stop_are_a_tool_use_turn(
    fakes: tuple[FakeOpenAI, FakeOpenAI], anthropic_sdk: anthropic.Anthropic, stream: bool
) -> None:
    main, _ = fakes
    main.enqueue(Behavior(tool_call=("get_weather", '{"city": "Paris"}'), finish_reason="stop"))
    if stream:
        with anthropic_sdk.messages.stream(
            model="solo", max_tokens=50, messages=HI, tools=TOOLS_ANTHROPIC
        ) as events:
            message = events.get_final_message()
    else:
        message = anthropic_sdk.messages.create(
            model="solo", max_tokens=50, messages=HI, tools=TOOLS_ANTHROPIC
        )
    assert message.stop_reason == "tool_use"
    assert [(b.type, getattr(b, "input", None)) for b in message.content] == [
        ("tool_use", {"city": "Paris"})
    ]


def test_a_litellm_worded_context_window_error_is_context_length_exceeded(
    fakes: tuple[FakeOpenAI, FakeOpenAI], openai_sdk: openai.OpenAI
) -> None:
    main, _ = fakes
    worded = {
        "error": {
            "message": "litellm.ContextWindowExceededError: litellm.BadRequestError: "
            "ContextWindowExceededError: OpenAIException - This model's maximum context "
            "length is 8192 tokens.",
            "type": None,
            "param": None,
            "code": "400",
        }
    }
    main.enqueue(Behavior(status=400, error_body=worded))
    with pytest.raises(openai.BadRequestError) as refused:
        openai_sdk.chat.completions.create(model="solo", messages=HI)
    assert refused.value.code == "context_length_exceeded"


@pytest.mark.parametrize(
    "fault",
    [Behavior(status=404), Behavior(malformed=True)],
    ids=["model-not-found", "not-json"],
)
def test_errors_that_would_repeat_fall_back_without_a_retry(
    gw: GwServer, fakes: tuple[FakeOpenAI, FakeOpenAI], openai_sdk: openai.OpenAI, fault: Behavior
) -> None:
    main, spare = fakes
    main.enqueue(fault, fault, fault)
    raw = openai_sdk.chat.completions.with_raw_response.create(model="pair", messages=HI)
    assert raw.parse().choices[0].message.content
    assert raw.headers["x-gw-route"] == "spare/m2"
    assert len(main.requests) == 1  # max_attempts: 3, yet one call
    assert len(spare.requests) == 1
    explained = gw.cli_json("explain", raw.headers["x-gw-request-id"])
    assert [(a["provider"], a["outcome"], a["error_code"]) for a in explained["attempts"]] == [
        ("main", "fell_back", "upstream_error"),
        ("spare", "answered", None),
    ]
