"""The Vercel AI SDK's default OpenAI provider works through gw: ``openai(model)`` speaks
the Responses API. A tool round trip with ``generateText`` (the SDK runs the tool and
sends its result back) and a ``streamText``, against a chat-completions upstream, an
Anthropic one and a Gemini one.

The SDK is pinned in tests/agents/package.json (installed by ./scripts/test into
build/agents); tests/agents/vercel_ai.mjs runs under node and prints one JSON line.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from e2e.agent_clients import (
    NODE_BIN,
    ROOT,
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

NODE_MODULES = NODE_BIN.parent
SCRIPT = ROOT / "tests" / "agents" / "vercel_ai.mjs"
FINAL = "The secret word is pelican."
HELLO = "Hello from the stream."
CALL = ("lookup_word", json.dumps({"topic": "birds"}))


@pytest.fixture(scope="module", autouse=True)
def _installed() -> None:
    """Skip (or fail, in CI) before starting gw when the client is missing."""
    require(NODE_MODULES / "ai" / "package.json")


@pytest.mark.parametrize("upstream", ["openai", "anthropic", "gemini", "responses"])
def test_default_provider_tool_round_trip_and_stream(
    gw: GwServer, fakes: dict[str, Any], sandbox: Sandbox, upstream: str
) -> None:
    fake = fakes[upstream]
    fake.clear()
    fake.enqueue(behavior(upstream, CALL), behavior(upstream, FINAL), behavior(upstream, HELLO))
    known = trace_ids(gw)
    run = sandbox.run(["node", SCRIPT, NODE_MODULES, gw.base_url, f"via-{upstream}"], {}).ok()
    outcome = json.loads(run.stdout.splitlines()[-1])
    assert outcome["calls"] == ["birds"], run.describe()
    assert outcome["whole"]["text"] == FINAL
    assert outcome["whole"]["finish"] == "stop"
    assert outcome["whole"]["steps"] == [["lookup_word"], []]
    assert outcome["whole"]["inputTokens"] > 0
    assert outcome["stream"] == {"text": HELLO, "finish": "stop"}
    traces = new_traces(gw, known, 3)
    assert [(t["endpoint"], t["status"], t["stream"]) for t in traces] == [
        ("responses", 200, False),
        ("responses", 200, False),
        ("responses", 200, True),
    ], summary(traces)
    second = fake.requests[1].json
    results = tool_results(upstream, second)
    assert len(results) == 1
    assert SECRET in json.dumps(results[0])
