"""What Claude Code asks of the Messages API, through a real gw, from the anthropic SDK.

- Adaptive thinking (``thinking: {type: adaptive}``, the first request of every Claude Code
  session) is accepted and reaches each upstream in its own terms: Anthropic as sent (with
  ``display`` and ``output_config.effort``), OpenAI as ``reasoning_effort``, Gemini as
  dynamic thinking (``thinkingBudget: -1``).
- Anthropic's server tools (web search) pass through to an Anthropic upstream and their
  blocks come back, streamed or not, with citations and ``pause_turn``; sent back on the
  next turn they reach the upstream verbatim. A route with no Anthropic target refuses
  such a request with 400 ``native_feature_unsupported`` naming the tool.
- Structured outputs (``output_config.format``) reach Anthropic as such and OpenAI as its
  ``response_format``; thinking blocks, signed and redacted, go back byte for byte.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import pytest

from e2e.gw_process import GwServer
from fakes.anthropic_server_tools import web_search_content
from fakes.anthropic_upstream import Behavior, FakeAnthropic
from fakes.gemini_upstream import FakeGemini
from fakes.openai_upstream import FakeOpenAI

CONFIG = """
providers:
  - {{name: claude, kind: anthropic, base_url: "{anthropic}", api_key: env:GW_TEST_KEY}}
  - {{name: oai, kind: openai_compatible, base_url: "{openai}"}}
  - {{name: gem, kind: gemini, base_url: "{gemini}", api_key: env:GW_TEST_KEY}}
routes:
  - {{name: to-anthropic, targets: [{{provider: claude, model: claude-opus-4-6}}]}}
  - {{name: to-openai, targets: [{{provider: oai, model: gpt-a}}]}}
  - {{name: to-gemini, targets: [{{provider: gem, model: gemini-2.5-flash}}]}}
"""
HI: list[anthropic.types.MessageParam] = [{"role": "user", "content": "hi"}]
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
WEB_SEARCH: Any = {"type": "web_search_20250305", "name": "web_search", "max_uses": 3}
SEARCH_TURN = web_search_content(
    "capital of France",
    [("https://example.com/paris", "Paris - Wikipedia")],
    [("The capital of France is Paris.", 0)],
)


@pytest.fixture(scope="module")
def fakes() -> Iterator[tuple[FakeAnthropic, FakeOpenAI, FakeGemini]]:
    with FakeAnthropic() as claude, FakeOpenAI() as oai, FakeGemini() as gem:
        yield claude, oai, gem


@pytest.fixture(scope="module")
def gw(
    fakes: tuple[FakeAnthropic, FakeOpenAI, FakeGemini], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[GwServer]:
    claude, oai, gem = fakes
    home = tmp_path_factory.mktemp("claude-code-features")
    config = home / "gw.yaml"
    config.write_text(
        CONFIG.format(anthropic=claude.base_url, openai=oai.base_url, gemini=gem.base_url)
    )
    with GwServer(home / "state", config, env={"GW_TEST_KEY": "sk-test"}) as server:
        yield server


@pytest.fixture
def sdk(gw: GwServer) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=gw.url, api_key="x", max_retries=0)


@pytest.fixture
def claude(fakes: tuple[FakeAnthropic, FakeOpenAI, FakeGemini]) -> FakeAnthropic:
    return fakes[0]


@pytest.fixture
def oai(fakes: tuple[FakeAnthropic, FakeOpenAI, FakeGemini]) -> FakeOpenAI:
    return fakes[1]


@pytest.fixture
def gem(fakes: tuple[FakeAnthropic, FakeOpenAI, FakeGemini]) -> FakeGemini:
    return fakes[2]


def dumped(message: anthropic.types.Message) -> list[dict[str, Any]]:
    return [block.model_dump(exclude_none=True) for block in message.content]


# -- adaptive thinking -------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
def test_adaptive_thinking_reaches_anthropic_as_sent(
    sdk: anthropic.Anthropic, claude: FakeAnthropic, stream: bool
) -> None:
    ask: Any = {
        "model": "to-anthropic",
        "max_tokens": 2000,
        "messages": HI,
        "thinking": {"type": "adaptive", "display": "omitted"},
        "output_config": {"effort": "high"},
    }
    if stream:
        with sdk.messages.stream(**ask) as events:
            assert events.get_final_message().content
    else:
        assert sdk.messages.create(**ask).content
    sent = claude.requests[-1].json
    assert sent["thinking"] == {"type": "adaptive", "display": "omitted"}
    assert sent["output_config"] == {"effort": "high"}


@pytest.mark.parametrize(("effort", "sent"), [(None, "medium"), ("low", "low")])
def test_adaptive_thinking_to_openai_is_a_reasoning_effort(
    sdk: anthropic.Anthropic, oai: FakeOpenAI, effort: str | None, sent: str
) -> None:
    extra: Any = {} if effort is None else {"output_config": {"effort": effort}}
    answer = sdk.messages.create(
        model="to-openai", max_tokens=2000, messages=HI, thinking={"type": "adaptive"}, **extra
    )
    assert answer.content
    assert oai.requests[-1].json["reasoning_effort"] == sent


def test_adaptive_thinking_to_gemini_is_dynamic_thinking(
    sdk: anthropic.Anthropic, gem: FakeGemini
) -> None:
    answer = sdk.messages.create(
        model="to-gemini", max_tokens=2000, messages=HI, thinking={"type": "adaptive"}
    )
    assert answer.content
    config = gem.requests[-1].json["generationConfig"]
    assert config["thinkingConfig"] == {"thinkingBudget": -1, "includeThoughts": True}


# -- server tools ------------------------------------------------------------------------


def test_web_search_passes_through_and_goes_back_verbatim(
    sdk: anthropic.Anthropic, claude: FakeAnthropic
) -> None:
    claude.enqueue(Behavior(content=SEARCH_TURN, stop_reason="pause_turn"))
    question: list[anthropic.types.MessageParam] = [
        {"role": "user", "content": "What is the capital of France?"}
    ]
    answer = sdk.messages.create(
        model="to-anthropic", max_tokens=1000, messages=question, tools=[WEB_SEARCH]
    )
    assert claude.requests[-1].json["tools"] == [WEB_SEARCH]
    assert dumped(answer) == list(SEARCH_TURN)
    assert answer.stop_reason == "pause_turn"

    # pause_turn: the client sends the turn back as it is, for the model to go on.
    sdk.messages.create(
        model="to-anthropic",
        max_tokens=1000,
        messages=[*question, {"role": "assistant", "content": answer.content}],
        tools=[WEB_SEARCH],
    )
    assert claude.requests[-1].json["messages"][1] == {
        "role": "assistant",
        "content": list(SEARCH_TURN),
    }


def test_a_streamed_web_search_accumulates_its_blocks(
    sdk: anthropic.Anthropic, claude: FakeAnthropic
) -> None:
    claude.enqueue(Behavior(content=SEARCH_TURN, stop_reason="pause_turn"))
    with sdk.messages.stream(
        model="to-anthropic", max_tokens=1000, messages=HI, tools=[WEB_SEARCH]
    ) as events:
        answer = events.get_final_message()
    assert claude.requests[-1].json["tools"] == [WEB_SEARCH]
    assert claude.requests[-1].json["stream"] is True
    assert dumped(answer) == list(SEARCH_TURN)
    assert answer.stop_reason == "pause_turn"


def test_web_search_on_a_route_without_anthropic_is_refused_naming_it(
    sdk: anthropic.Anthropic, oai: FakeOpenAI
) -> None:
    before = len(oai.requests)
    with pytest.raises(anthropic.BadRequestError) as caught:
        sdk.messages.create(model="to-openai", max_tokens=100, messages=HI, tools=[WEB_SEARCH])
    assert caught.value.status_code == 400
    body: Any = caught.value.body
    assert body["gw"]["code"] == "native_feature_unsupported"
    assert "web_search" in body["error"]["message"]
    assert "kind: anthropic for Anthropic's server tools" in body["error"]["message"]
    assert len(oai.requests) == before, "no upstream was called"


# -- structured outputs ------------------------------------------------------------------


def test_output_config_format_reaches_anthropic_as_such(
    sdk: anthropic.Anthropic, claude: FakeAnthropic
) -> None:
    output_config: Any = {"format": {"type": "json_schema", "schema": SCHEMA}, "effort": "low"}
    sdk.messages.create(
        model="to-anthropic", max_tokens=100, messages=HI, output_config=output_config
    )
    assert claude.requests[-1].json["output_config"] == output_config


def test_output_config_format_reaches_openai_as_its_response_format(
    sdk: anthropic.Anthropic, oai: FakeOpenAI
) -> None:
    output_config: Any = {"format": {"type": "json_schema", "schema": SCHEMA}}
    sdk.messages.create(model="to-openai", max_tokens=100, messages=HI, output_config=output_config)
    assert oai.requests[-1].json["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "response", "schema": SCHEMA},
    }


# -- thinking blocks go back byte for byte ---------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
def test_signed_and_redacted_thinking_go_back_byte_for_byte(
    sdk: anthropic.Anthropic, claude: FakeAnthropic, stream: bool
) -> None:
    redacted = "EmwKAhgBEgy3va3pzix/LafPsn4aDFvrCAp+Z9Qb8F4r6XG0ow=="
    claude.enqueue(Behavior(thinking="Let me think.", redacted_thinking=redacted))
    ask: Any = {
        "model": "to-anthropic",
        "max_tokens": 2000,
        "thinking": {"type": "enabled", "budget_tokens": 1024},
    }
    if stream:
        with sdk.messages.stream(messages=HI, **ask) as events:
            answer = events.get_final_message()
    else:
        answer = sdk.messages.create(messages=HI, **ask)
    blocks = dumped(answer)
    assert [block["type"] for block in blocks] == ["redacted_thinking", "thinking", "text"]
    assert blocks[0]["data"] == redacted

    sdk.messages.create(
        messages=[
            *HI,
            {"role": "assistant", "content": answer.content},
            {"role": "user", "content": "and?"},
        ],
        **ask,
    )
    assert claude.requests[-1].body.count(redacted.encode()) == 1
    assert claude.requests[-1].json["messages"][1]["content"] == blocks
