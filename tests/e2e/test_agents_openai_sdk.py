"""The OpenAI Agents SDK works through gw: an Agent with a function tool, its default
client an ``AsyncOpenAI`` pointed at gw (the default Responses model), run whole and
streamed, against a chat-completions upstream, an Anthropic one and a Gemini one.

The SDK runs in its own venv (build/tools-agents), so tests/agents/sdk_agent.py runs as
a subprocess; it prints what the run produced as one JSON line.
"""

from __future__ import annotations

import json
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
    summary,
    tool_results,
    trace_ids,
)
from e2e.agent_clients import egress_trap as egress_trap  # noqa: PLC0414 (a fixture, used by sandbox)
from e2e.agent_clients import fakes as fakes  # noqa: PLC0414 (a fixture)
from e2e.agent_clients import gw as gw  # noqa: PLC0414 (a fixture)
from e2e.agent_clients import sandbox as sandbox  # noqa: PLC0414 (a fixture)
from e2e.gw_process import GwServer

FINAL = "The secret word is pelican."
CALL = ("lookup_word", json.dumps({"topic": "birds"}))


@pytest.fixture(scope="module", autouse=True)
def _installed() -> None:
    """Skip (or fail, in CI) before starting gw when the client is missing."""
    require(AGENTS_PYTHON)


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
