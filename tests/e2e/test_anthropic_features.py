"""Anthropic's own features through a real gw, from the SDKs to a fake Anthropic upstream.

- Prompt-cache marks (``cache_control``) reach the upstream where the client put them:
  system blocks, tools, message blocks, tool results and the blocks inside them, from the
  Anthropic SDK and from OpenAI clients' content parts. The fake refuses malformed marks
  and more than four, as Anthropic does, and reports cache usage, which the client sees.
  An OpenAI-format upstream gets no marks, and ``gw explain`` says so.
- Beta features (``anthropic-beta``) reach the upstream, joined with any the provider's
  ``headers`` turn on; an OpenAI-format upstream does not get them, and ``gw explain``
  says so.
- An answer whose blocks interleave (thinking, text, a tool call, more thinking...) comes
  back in that order, streamed or not, and goes back upstream in that order on the next
  turn, as Anthropic requires of thinking blocks.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest

from e2e.gw_process import GwServer
from fakes.anthropic_upstream import Behavior, FakeAnthropic
from fakes.openai_upstream import FakeOpenAI

CONFIG = """
providers:
  - {{name: claude, kind: anthropic, base_url: "{anthropic}", api_key: env:GW_TEST_KEY}}
  - name: claude-1m
    kind: anthropic
    base_url: "{anthropic}"
    api_key: env:GW_TEST_KEY
    headers: {{Anthropic-Beta: context-1m-2025-08-07}}
  - {{name: oai, kind: openai_compatible, base_url: "{openai}"}}
routes:
  - {{name: to-anthropic, targets: [{{provider: claude, model: claude-sonnet-4-5}}]}}
  - {{name: to-anthropic-1m, targets: [{{provider: claude-1m, model: claude-sonnet-4-5}}]}}
  - {{name: to-openai, targets: [{{provider: oai, model: gpt-a}}]}}
"""
BETAS = ["interleaved-thinking-2025-05-14", "context-1m-2025-08-07"]
HI: list[anthropic.types.beta.BetaMessageParam] = [{"role": "user", "content": "hi"}]
MARK: Any = {"type": "ephemeral"}
HOUR: Any = {"type": "ephemeral", "ttl": "1h"}
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}}


@pytest.fixture(scope="module")
def anthropic_fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as upstream:
        yield upstream


@pytest.fixture(scope="module")
def openai_fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as upstream:
        yield upstream


@pytest.fixture(scope="module")
def gw(
    anthropic_fake: FakeAnthropic,
    openai_fake: FakeOpenAI,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[GwServer]:
    home = tmp_path_factory.mktemp("anthropic-features")
    config = home / "gw.yaml"
    config.write_text(CONFIG.format(anthropic=anthropic_fake.base_url, openai=openai_fake.base_url))
    with GwServer(home / "state", config, env={"GW_TEST_KEY": "sk-ant-test"}) as server:
        yield server


@pytest.fixture
def sdk(gw: GwServer) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=gw.url, api_key="x", max_retries=0)


# -- beta features ---------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
def test_the_sdk_s_betas_reach_anthropic(
    sdk: anthropic.Anthropic, anthropic_fake: FakeAnthropic, stream: bool
) -> None:
    if stream:
        with sdk.beta.messages.stream(
            model="to-anthropic", max_tokens=10, messages=HI, betas=BETAS
        ) as events:
            assert events.get_final_message().content
    else:
        sdk.beta.messages.create(model="to-anthropic", max_tokens=10, messages=HI, betas=BETAS)
    assert anthropic_fake.requests[-1].headers["anthropic-beta"] == ",".join(BETAS)


def test_betas_join_the_provider_s_own_once_each(
    sdk: anthropic.Anthropic, anthropic_fake: FakeAnthropic
) -> None:
    sdk.beta.messages.create(model="to-anthropic-1m", max_tokens=10, messages=HI, betas=BETAS)
    assert anthropic_fake.requests[-1].headers["anthropic-beta"] == (
        "context-1m-2025-08-07,interleaved-thinking-2025-05-14"
    )
    sdk.messages.create(model="to-anthropic-1m", max_tokens=10, messages=HI)
    assert anthropic_fake.requests[-1].headers["anthropic-beta"] == "context-1m-2025-08-07"
    sdk.messages.create(model="to-anthropic", max_tokens=10, messages=HI)
    assert "anthropic-beta" not in anthropic_fake.requests[-1].headers


def test_an_openai_upstream_gets_no_betas_and_explain_says_so(
    gw: GwServer, sdk: anthropic.Anthropic, openai_fake: FakeOpenAI
) -> None:
    raw = sdk.beta.messages.with_raw_response.create(
        model="to-openai", max_tokens=10, messages=HI, betas=BETAS
    )
    assert "anthropic-beta" not in openai_fake.requests[-1].headers
    trace = gw.wait_for_trace(raw.headers["x-gw-request-id"])
    assert (
        "anthropic-beta interleaved-thinking-2025-05-14, context-1m-2025-08-07: not sent "
        "(Anthropic beta features; this upstream is openai)"
    ) in trace["attempts"][0]["translation_notes"]


def test_a_malformed_beta_header_is_a_400_naming_it(sdk: anthropic.Anthropic) -> None:
    with pytest.raises(anthropic.BadRequestError) as caught:
        sdk.messages.create(
            model="to-anthropic",
            max_tokens=10,
            messages=[{"role": "user", "content": "hi"}],
            extra_headers={"anthropic-beta": "not a name"},
        )
    assert "anthropic-beta" in caught.value.message


# -- block order -----------------------------------------------------------------------

INTERLEAVED = (
    {"type": "thinking", "thinking": "Paris first.", "signature": "sig-1"},
    {"type": "text", "text": "Checking Paris."},
    {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Paris"}},
    {"type": "thinking", "thinking": "Now Rome.", "signature": "sig-2"},
    {"type": "text", "text": "And Rome."},
    {"type": "tool_use", "id": "toolu_2", "name": "weather", "input": {"city": "Rome"}},
)
TOOLS: list[anthropic.types.ToolParam] = [
    {"name": "weather", "input_schema": {"type": "object", "properties": {}}}
]


@pytest.mark.parametrize("stream", [False, True])
def test_interleaved_blocks_keep_their_order_there_and_back(
    sdk: anthropic.Anthropic, anthropic_fake: FakeAnthropic, stream: bool
) -> None:
    anthropic_fake.enqueue(Behavior(content=INTERLEAVED, stop_reason="tool_use"))
    ask: dict[str, Any] = {"model": "to-anthropic", "max_tokens": 2000, "tools": TOOLS}
    question: list[anthropic.types.MessageParam] = [{"role": "user", "content": "Weather?"}]
    if stream:
        with sdk.messages.stream(messages=question, **ask) as events:
            answer = events.get_final_message()
    else:
        answer = sdk.messages.create(messages=question, **ask)
    assert [block.model_dump(exclude_none=True) for block in answer.content] == list(INTERLEAVED)

    results: list[anthropic.types.ToolResultBlockParam] = [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "18 C"},
        {"type": "tool_result", "tool_use_id": "toolu_2", "content": "21 C"},
    ]
    sdk.messages.create(
        messages=[
            *question,
            {"role": "assistant", "content": answer.content},
            {"role": "user", "content": results},
        ],
        **ask,
    )
    assert anthropic_fake.requests[-1].json["messages"][1] == {
        "role": "assistant",
        "content": list(INTERLEAVED),
    }


# -- prompt-cache marks ---------------------------------------------------------------


def anthropic_conversation() -> dict[str, Any]:
    """A tool loop with a mark on each kind of block (four in all, Anthropic's limit)."""
    return {
        "system": [
            {"type": "text", "text": "You are terse."},
            {"type": "text", "text": "A long style guide.", "cache_control": HOUR},
        ],
        "tools": [{"name": "get_weather", "input_schema": SCHEMA, "cache_control": HOUR}],
        "messages": [
            {"role": "user", "content": "Weather in Paris?"},
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_1",
                        "content": [{"type": "text", "text": "18 C", "cache_control": MARK}],
                    },
                    {"type": "text", "text": "And tomorrow?", "cache_control": MARK},
                ],
            },
        ],
    }


@pytest.mark.parametrize("stream", [False, True])
def test_anthropic_clients_marks_reach_anthropic_where_they_were(
    sdk: anthropic.Anthropic, anthropic_fake: FakeAnthropic, stream: bool
) -> None:
    anthropic_fake.enqueue(Behavior(cache=(1200, 300)))
    conversation = anthropic_conversation()
    if stream:
        with sdk.messages.stream(model="to-anthropic", max_tokens=100, **conversation) as events:
            usage = events.get_final_message().usage
    else:
        usage = sdk.messages.create(model="to-anthropic", max_tokens=100, **conversation).usage
    assert (usage.cache_read_input_tokens, usage.cache_creation_input_tokens) == (1200, 300)

    sent = anthropic_fake.requests[-1].json
    assert sent["system"] == conversation["system"]
    assert sent["tools"][0]["cache_control"] == HOUR
    assert sent["messages"][2]["content"] == conversation["messages"][2]["content"]
    assert "cache_control" not in sent["messages"][1]["content"][0]


def test_more_than_four_marks_get_anthropic_s_own_refusal(sdk: anthropic.Anthropic) -> None:
    block: Any = {"type": "text", "text": "hi", "cache_control": MARK}
    with pytest.raises(anthropic.BadRequestError) as caught:
        sdk.messages.create(
            model="to-anthropic", max_tokens=10, messages=[{"role": "user", "content": [block] * 5}]
        )
    assert "A maximum of 4 blocks with cache_control" in str(caught.value)


def test_openai_clients_marks_reach_anthropic(gw: GwServer, anthropic_fake: FakeAnthropic) -> None:
    """What clients of OpenAI-compatible gateways send to cache a prompt sent to Claude."""
    sdk = openai.OpenAI(base_url=gw.base_url, api_key="x", max_retries=0)
    messages: Any = [
        {"role": "system", "content": [{"type": "text", "text": "Rules.", "cache_control": HOUR}]},
        {"role": "user", "content": [{"type": "text", "text": "Hi", "cache_control": MARK}]},
    ]
    sdk.chat.completions.create(model="to-anthropic", messages=messages, max_tokens=10)
    sent = anthropic_fake.requests[-1].json
    assert sent["system"] == [{"type": "text", "text": "Rules.", "cache_control": HOUR}]
    assert sent["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Hi", "cache_control": MARK}]}
    ]


def test_an_openai_upstream_gets_no_marks_and_explain_says_so(
    gw: GwServer, sdk: anthropic.Anthropic, openai_fake: FakeOpenAI
) -> None:
    raw = sdk.messages.with_raw_response.create(
        model="to-openai", max_tokens=10, **anthropic_conversation()
    )
    assert "cache_control" not in openai_fake.requests[-1].body.decode()
    trace = gw.wait_for_trace(raw.headers["x-gw-request-id"])
    assert (
        "cache_control marks: not sent (the OpenAI format has none; the provider caches long "
        "prompt prefixes by itself, if at all)"
    ) in trace["attempts"][0]["translation_notes"]
