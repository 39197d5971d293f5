"""The OpenAI Agents SDK works through gw: an Agent with a function tool, its default
client an ``AsyncOpenAI`` pointed at gw (the default Responses model), run whole and
streamed, against a chat-completions upstream, an Anthropic one and a Gemini one.

The SDK runs in its own venv (build/tools-agents), so tests/agents/sdk_agent.py runs as
a subprocess; it prints what the run produced as one JSON line.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from e2e.agent_clients import (
    AGENTS_PYTHON,
    SDK_AGENT,
    SECRET,
    Sandbox,
    behavior,
    new_traces,
    require,
    serve_gw,
    summary,
    tool_results,
    trace_ids,
)
from e2e.agent_clients import egress_trap as egress_trap  # noqa: PLC0414 (a fixture, used by sandbox)
from e2e.agent_clients import sandbox as sandbox  # noqa: PLC0414 (a fixture)
from e2e.gw_process import GwServer
from fakes.anthropic_upstream import FakeAnthropic
from fakes.gemini_upstream import FakeGemini
from fakes.openai_upstream import FakeOpenAI
from fakes.responses_upstream import FakeResponses

FINAL = "The secret word is pelican."
CALL = ("lookup_word", json.dumps({"topic": "birds"}))


@pytest.fixture(scope="module", autouse=True)
def _installed() -> None:
    """Skip (or fail, in CI) before starting gw when the client is missing."""
    require(AGENTS_PYTHON)


@pytest.fixture(scope="module")
def fakes() -> Iterator[dict[str, Any]]:
    with (
        FakeOpenAI() as openai,
        FakeAnthropic() as anthropic,
        FakeGemini() as gemini,
        FakeResponses() as responses,
    ):
        yield {"openai": openai, "anthropic": anthropic, "gemini": gemini, "responses": responses}


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory, fakes: dict[str, Any]) -> Iterator[GwServer]:
    state = tmp_path_factory.mktemp("agents-openai-sdk") / "state"
    with serve_gw(state, **{name: fake.base_url for name, fake in fakes.items()}) as server:
        yield server


@pytest.mark.parametrize("mode", ["run", "stream"])
@pytest.mark.parametrize("upstream", ["openai", "anthropic", "gemini", "responses"])
def test_agent_with_function_tool(
    gw: GwServer, fakes: dict[str, Any], sandbox: Sandbox, upstream: str, mode: str
) -> None:
    fake = fakes[upstream]
    fake.clear()
    fake.enqueue(behavior(upstream, CALL), behavior(upstream, FINAL))
    known = trace_ids(gw)
    argv = [require(AGENTS_PYTHON), SDK_AGENT, gw.base_url, f"via-{upstream}", mode]
    run = sandbox.run(argv, {}).ok()
    outcome = json.loads(run.stdout.splitlines()[-1])
    assert outcome == {
        "final_output": FINAL,
        "calls": ["birds"],
        "items": ["tool_call_item", "tool_call_output_item", "message_output_item"],
    }, run.describe()
    traces = new_traces(gw, known, 2)
    assert [(t["endpoint"], t["status"], t["stream"]) for t in traces] == [
        ("responses", 200, mode == "stream")
    ] * 2, summary(traces)
    sent = fake.requests
    if upstream == "gemini":  # Gemini streams at its own path
        assert ("streamGenerateContent" in sent[0].path) is (mode == "stream")
    else:
        assert sent[0].json["stream"] is (mode == "stream")
    second = sent[1].json
    results = tool_results(upstream, second)
    assert len(results) == 1
    assert SECRET in json.dumps(results[0])
