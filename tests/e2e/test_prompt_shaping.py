"""Prompt shaping against a real gw, through the official openai and anthropic SDKs, whole
and streamed, with a fake OpenAI upstream that records what it was sent.

A conversation too long for the first target's window is trimmed (oldest whole turns
first; the system prompt, the last user turn and tool call/result pairs kept) under a
``trim`` policy, or moved to the larger window under ``larger_window``; either way the
client is told in ``x-gw-warning`` and ``gw explain`` shows it. A conversation whose last
turn alone is too long for every window gets 400 ``context_length_exceeded`` naming the
windows and the estimate, before any upstream call.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import anthropic
import openai
import pytest

from e2e.gw_process import GwServer
from fakes.openai_upstream import FakeOpenAI

pytestmark = pytest.mark.e2e

CONFIG = """
providers:
  - {{name: up, kind: openai_compatible, base_url: "{upstream}"}}
models:
  - {{provider: up, model: small, context_window: 1000, capabilities: [tools]}}
  - {{provider: up, model: large, context_window: 3000, capabilities: [tools]}}
routes:
  - name: trimmed
    targets: [{{provider: up, model: small, priority: 1}}, {{provider: up, model: large, priority: 2}}]
  - name: moved
    targets: [{{provider: up, model: small, priority: 1}}, {{provider: up, model: large, priority: 2}}]
  - {{name: plain, targets: [{{provider: up, model: small}}]}}
policies:
  - {{name: trim-long, match: {{routes: [trimmed]}}, shaping: {{mode: trim}}}}
  - {{name: move-long, match: {{routes: [moved]}}, shaping: {{mode: larger_window}}}}
"""
WORDS = "lorem ipsum " * 33  # about 100 tokens a message
TOOLS = [{"type": "function", "function": {"name": "look", "parameters": {"type": "object"}}}]


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


@pytest.fixture(scope="module")
def gw(upstream: FakeOpenAI, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GwServer]:
    home: Path = tmp_path_factory.mktemp("shaping")
    config = home / "gw.yaml"
    config.write_text(CONFIG.format(upstream=upstream.base_url))
    with GwServer(home / "state", config) as server:
        yield server


def conversation(turns: int, *, last: str = "and now, in one line?") -> list[dict[str, Any]]:
    """A system prompt, ``turns`` earlier turns (every third with a tool call and its
    result), then the last user message."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": "be brief"}]
    for n in range(turns):
        messages.append({"role": "user", "content": f"q{n} {WORDS}"})
        if n % 3 == 1:
            call = {"id": f"call_{n}", "type": "function"}
            call["function"] = {"name": "look", "arguments": "{}"}
            messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
            messages.append({"role": "tool", "tool_call_id": f"call_{n}", "content": WORDS})
        messages.append({"role": "assistant", "content": f"a{n} {WORDS}"})
    messages.append({"role": "user", "content": last})
    return messages


def warning(headers: Any) -> str:
    return unquote(headers["x-gw-warning"])


def explain(gw: GwServer, request_id: str) -> dict[str, Any]:
    gw.wait_for_trace(request_id)
    return dict(gw.cli_json("explain", request_id))


def oa(gw: GwServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=gw.base_url, api_key="unused", max_retries=0)


def claude(gw: GwServer) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=gw.url, api_key="unused", max_retries=0)


def ask_openai(gw: GwServer, route: str, messages: list[dict[str, Any]], *, stream: bool) -> Any:
    """The response headers of one chat completion, whole or streamed to its end."""
    sdk = oa(gw)
    if stream:
        with sdk.chat.completions.with_streaming_response.create(
            model=route, messages=messages, tools=TOOLS, max_tokens=100, stream=True
        ) as response:
            assert any("[DONE]" in line for line in response.iter_lines())
            return response.headers
    raw = sdk.chat.completions.with_raw_response.create(
        model=route, messages=messages, tools=TOOLS, max_tokens=100
    )
    assert raw.parse().choices[0].message.content
    return raw.headers


def assert_trimmed(sent: list[dict[str, Any]], original: list[dict[str, Any]]) -> int:
    """The rule held: system first, the last user turn last, the oldest turns gone whole,
    every tool result beside its call; returns how many messages were dropped."""
    dropped = len(original) - len(sent)
    assert dropped > 0
    assert sent[0] == {"role": "system", "content": "be brief"}
    assert sent[-1]["content"] == original[-1]["content"]
    assert sent[1]["role"] == "user"
    assert sent[1]["content"] == original[1 + dropped]["content"]  # the newest of the rest
    calls = {c["id"] for m in sent if m["role"] == "assistant" for c in m.get("tool_calls") or ()}
    results = {m["tool_call_id"] for m in sent if m["role"] == "tool"}
    assert calls == results
    return dropped


@pytest.mark.parametrize("stream", [False, True])
def test_a_too_long_conversation_is_trimmed_and_the_client_is_told(
    gw: GwServer, upstream: FakeOpenAI, stream: bool
) -> None:
    messages = conversation(10)  # about 2,700 tokens: over small's 1,000-token window
    headers = ask_openai(gw, "trimmed", messages, stream=stream)
    sent = upstream.requests[-1].json
    assert sent["model"] == "small"  # kept on the first choice
    dropped = assert_trimmed(sent["messages"], messages)
    said = warning(headers)
    assert said.startswith(
        f"shaped: dropped {dropped} of {len(messages)} messages (oldest turns) to fit "
        "up/small's 1000-token window (about "
    )
    assert "policy trim-long, shaping.mode trim" in said
    assert headers["x-gw-route"] == "up/small"
    shown = explain(gw, headers["x-gw-request-id"])
    assert said in shown["decision"]["notes"]
    assert shown["decision"]["warnings"] == [said]
    assert shown["decision"]["estimated_input_tokens"] + 100 <= 1000
    assert shown["decision"]["policy"] == "trim-long"
    assert f"Note: {said}" in gw.cli("explain", headers["x-gw-request-id"]).stdout


@pytest.mark.parametrize("stream", [False, True])
def test_an_anthropic_client_is_trimmed_alike(
    gw: GwServer, upstream: FakeOpenAI, stream: bool
) -> None:
    turns = [m for m in conversation(10) if m["role"] in ("user", "assistant") and m["content"]]
    messages = [{"role": m["role"], "content": m["content"]} for m in turns]
    sdk = claude(gw)
    if stream:
        with sdk.messages.with_streaming_response.create(
            model="trimmed", system="be brief", messages=messages, max_tokens=100, stream=True
        ) as response:
            assert any("message_stop" in line for line in response.iter_lines())
            headers = response.headers
    else:
        raw = sdk.messages.with_raw_response.create(
            model="trimmed", system="be brief", messages=messages, max_tokens=100
        )
        assert raw.parse().content
        headers = raw.headers
    sent = upstream.requests[-1].json["messages"]
    dropped = assert_trimmed(sent, [{"role": "system", "content": "be brief"}, *messages])
    assert warning(headers).startswith(
        f"shaped: dropped {dropped} of {len(messages) + 1} messages (oldest turns)"
    )


def test_larger_window_moves_the_request_and_says_so(gw: GwServer, upstream: FakeOpenAI) -> None:
    messages = conversation(8)
    headers = ask_openai(gw, "moved", messages, stream=False)
    sent = upstream.requests[-1].json
    assert sent["model"] == "large"
    assert len(sent["messages"]) == len(messages)  # nothing dropped
    said = warning(headers)
    assert said.startswith("shaped: routed to up/large (3000-token window) instead of up/small")
    assert said.endswith("exceed its 1000-token window (shaping.mode larger_window)")
    shown = explain(gw, headers["x-gw-request-id"])
    assert said in shown["decision"]["notes"]


@pytest.mark.parametrize("route", ["trimmed", "moved", "plain"])
def test_a_conversation_that_cannot_be_shaped_is_refused_before_any_upstream_call(
    gw: GwServer, upstream: FakeOpenAI, route: str
) -> None:
    upstream.clear()
    messages = conversation(4, last="and this: " + "very long " * 1500)  # ~3,750 tokens
    with pytest.raises(openai.BadRequestError) as refused:
        ask_openai(gw, route, messages, stream=False)
    error = refused.value
    assert error.code == "context_length_exceeded"
    text = str(error.message)
    assert "more than the context window of every target" in text
    assert "1000-token context window" in text
    shown = explain(gw, error.response.headers["x-gw-request-id"])
    assert f"about {shown['decision']['estimated_input_tokens']} input tokens" in text
    assert shown["attempts"] == []
    if route == "trimmed":
        assert any("could not help" in note for note in shown["decision"]["notes"])
    last = [{"role": "user", "content": messages[-1]["content"]}]
    with (  # the same, streamed to an Anthropic client
        pytest.raises(anthropic.BadRequestError) as streamed,
        claude(gw).messages.stream(
            model=route, system="be brief", max_tokens=100, messages=last
        ) as stream,
    ):
        list(stream.text_stream)
    assert streamed.value.body["gw"]["code"] == "context_length_exceeded"  # type: ignore[index]
    assert upstream.requests == []  # no upstream call, for either


def test_the_route_preview_api_shows_what_shaping_would_do(
    gw: GwServer, upstream: FakeOpenAI
) -> None:
    calls = upstream.count
    with gw.client() as http:
        shown = http.post(
            "/admin/v1/route-preview",
            json={"model": "trimmed", "messages": conversation(12), "max_tokens": 100},
        ).json()
    assert shown["decision"]["chain"][0] == "up/small"
    assert any(note.startswith("shaped: dropped") for note in shown["decision"]["notes"])
    assert upstream.count == calls  # a preview calls nothing
