"""Prompt-cache breakpoints (``cache_control``) through a real gw, from both SDKs.

An Anthropic upstream gets every mark where the client put it: system blocks, tools,
message blocks, tool results and the blocks inside them. The fake Anthropic refuses
malformed marks and more than four, as Anthropic does, and reports cache usage, which the
client sees. An OpenAI-format upstream has no such marks: it gets none, and ``gw explain``
says so.
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
  - {{name: oai, kind: openai_compatible, base_url: "{openai}"}}
routes:
  - {{name: to-anthropic, targets: [{{provider: claude, model: claude-sonnet-4-5}}]}}
  - {{name: to-openai, targets: [{{provider: oai, model: gpt-a}}]}}
"""
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
    home = tmp_path_factory.mktemp("cache-marks")
    config = home / "gw.yaml"
    config.write_text(CONFIG.format(anthropic=anthropic_fake.base_url, openai=openai_fake.base_url))
    with GwServer(home / "state", config, env={"GW_TEST_KEY": "sk-ant-test"}) as server:
        yield server


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
    gw: GwServer, anthropic_fake: FakeAnthropic, stream: bool
) -> None:
    anthropic_fake.clear()
    anthropic_fake.enqueue(Behavior(cache=(1200, 300)))
    sdk = anthropic.Anthropic(base_url=gw.url, api_key="x", max_retries=0)
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


def test_more_than_four_marks_get_anthropic_s_own_refusal(
    gw: GwServer, anthropic_fake: FakeAnthropic
) -> None:
    sdk = anthropic.Anthropic(base_url=gw.url, api_key="x", max_retries=0)
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
    gw: GwServer, openai_fake: FakeOpenAI
) -> None:
    sdk = anthropic.Anthropic(base_url=gw.url, api_key="x", max_retries=0)
    raw = sdk.messages.with_raw_response.create(
        model="to-openai", max_tokens=10, **anthropic_conversation()
    )
    assert "cache_control" not in openai_fake.requests[-1].body.decode()
    trace = gw.wait_for_trace(raw.headers["x-gw-request-id"])
    assert (
        "cache_control marks: not sent (the OpenAI format has none; the provider caches long "
        "prompt prefixes by itself, if at all)"
    ) in trace["attempts"][0]["translation_notes"]
