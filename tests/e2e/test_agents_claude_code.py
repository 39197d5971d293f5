"""Claude Code (``claude -p``) works through gw: ANTHROPIC_BASE_URL pointed at gw, against
every upstream format: Anthropic, chat completions, Gemini and OpenAI Responses.

Claude Code's first request is what breaks gateways: adaptive thinking, an effort, context
management, beta headers, a ``system`` turn inside ``messages``, tools loaded on demand.
gw must answer it (no 400 in ``gw traces``), and carry a turn in which the model calls one
of Claude Code's own tools (Read, of a file in the run's directory) and the result goes
back upstream; and Claude Code's web search, which rides on Anthropic's server tool.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from e2e.agent_clients import (
    SECRET,
    EgressTrap,
    Run,
    Sandbox,
    behavior,
    check_keys_mode,
    new_traces,
    node_client,
    offered_tools,
    summary,
    tool_results,
    trace_ids,
)
from e2e.agent_clients import egress_trap as egress_trap  # noqa: PLC0414 (a fixture, used by sandbox)
from e2e.agent_clients import fakes as fakes  # noqa: PLC0414 (a fixture)
from e2e.agent_clients import gw as gw  # noqa: PLC0414 (a fixture)
from e2e.agent_clients import keys_gw as keys_gw  # noqa: PLC0414 (a fixture)
from e2e.agent_clients import sandbox as sandbox  # noqa: PLC0414 (a fixture)
from e2e.gw_process import GwServer
from fakes import anthropic_upstream
from fakes.anthropic_server_tools import web_search_content

FINAL = "I read notes.txt for you."
UPSTREAMS = ["anthropic", "openai", "gemini", "responses"]


@pytest.fixture(scope="module", autouse=True)
def _installed() -> None:
    """Skip (or fail, in CI) before starting gw when the client is missing."""
    node_client("claude")


class Upstream:
    """The fake behind one route, scripted the same way whatever its format."""

    def __init__(self, name: str, fakes: dict[str, Any]) -> None:
        self.name = name
        self.route = f"via-{name}"
        self.fake = fakes[name]
        self.fake.clear()

    def answer(self, *turns: str | tuple[str, str]) -> None:
        """Each turn: a text, or a (tool name, input JSON) call."""
        self.fake.enqueue(*(behavior(self.name, turn) for turn in turns))

    def bodies(self) -> list[Any]:
        return [request.json for request in self.fake.requests]


@pytest.fixture(params=UPSTREAMS)
def upstream(request: pytest.FixtureRequest, fakes: dict[str, Any]) -> Upstream:
    return Upstream(request.param, fakes)


def claude_p(
    sandbox: Sandbox,
    gw: GwServer,
    route: str,
    prompt: str,
    *allowed: str,
    key: str = "sk-gw-claude-code",
) -> Run:
    """``claude -p`` with gw as its API, as docs/guides/clients.md shows; ``allowed``: tools it may
    use without asking (reading files in its directory needs no permission); ``key``: the
    gw key it sends (x-api-key)."""
    argv: list[str | Path] = [
        node_client("claude"),
        "-p",
        prompt,
        "--model",
        route,
        "--output-format",
        "json",
    ]
    if allowed:
        argv += ["--allowedTools", ",".join(allowed)]
    env = {
        "ANTHROPIC_BASE_URL": gw.url,
        "ANTHROPIC_API_KEY": key,
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1",
        # No retries: a refused request (a wrong key: 401) would be retried with backoff
        # for minutes, and a gw error must fail the test, not be papered over.
        "CLAUDE_CODE_MAX_RETRIES": "0",
    }
    return sandbox.run(argv, env)


def result_of(run: Run) -> dict[str, Any]:
    """The ``--output-format json`` result object, after checking the run succeeded."""
    run.ok()
    result: dict[str, Any] = json.loads(run.stdout)
    assert result["subtype"] == "success", run.describe()
    assert result["is_error"] is False, run.describe()
    return result


def test_first_request_is_answered(gw: GwServer, upstream: Upstream, sandbox: Sandbox) -> None:
    upstream.answer("Hello from the fake upstream.")
    known = trace_ids(gw)
    result = result_of(claude_p(sandbox, gw, upstream.route, "Say hello."))
    assert result["result"] == "Hello from the fake upstream."
    traces = new_traces(gw, known, 1)
    assert [(t["endpoint"], t["status"]) for t in traces] == [("messages", 200)], summary(traces)
    assert len(upstream.bodies()) == 1


def test_tool_use_turn(gw: GwServer, upstream: Upstream, sandbox: Sandbox) -> None:
    notes = sandbox.write("notes.txt", f"the secret word is {SECRET}\n")
    upstream.answer(("Read", json.dumps({"file_path": str(notes)})), FINAL)
    known = trace_ids(gw)
    result = result_of(claude_p(sandbox, gw, upstream.route, "What is in notes.txt?"))
    assert result["result"] == FINAL
    assert result["num_turns"] == 2
    assert result["permission_denials"] == []
    traces = [t for t in new_traces(gw, known, 2) if t["status"] == 200]
    assert [t["endpoint"] for t in traces] == ["messages", "messages"], summary(traces)
    first, second = upstream.bodies()
    assert "Read" in offered_tools(upstream.name, first)
    results = tool_results(upstream.name, second)
    assert len(results) == 1
    assert SECRET in json.dumps(results[0])


def test_web_search_passes_through_to_anthropic(
    gw: GwServer, fakes: dict[str, Any], sandbox: Sandbox
) -> None:
    """Claude Code's WebSearch tool asks the model again with Anthropic's server tool
    (``web_search_20250305``): gw passes it to the Anthropic upstream verbatim and brings
    its result blocks back, which Claude Code turns into the tool's result."""
    anthropic_fake = fakes["anthropic"]
    anthropic_fake.clear()
    search = web_search_content(
        "gw llm gateway",
        [("https://example.com/gw", "gw, a local-first LLM gateway")],
        [("gw is a local-first LLM gateway.", 0)],
    )
    anthropic_fake.enqueue(
        anthropic_upstream.Behavior(
            tool_call=("WebSearch", json.dumps({"query": "gw llm gateway"}))
        ),
        anthropic_upstream.Behavior(content=search),
        anthropic_upstream.Behavior(text=FINAL),
    )
    known = trace_ids(gw)
    run = claude_p(sandbox, gw, "via-anthropic", "Search the web for gw.", "WebSearch")
    assert result_of(run)["result"] == FINAL
    main, searched, last = (request.json for request in anthropic_fake.requests)
    # Its tools loaded on demand (WebSearch is one) reach Anthropic as Claude Code sent them.
    assert [t["name"] for t in main["tools"] if t.get("defer_loading")], main["tools"]
    assert [tool["type"] for tool in searched["tools"]] == ["web_search_20250305"]
    assert searched["tools"][0]["name"] == "web_search"
    results = [b for b in last["messages"][-1]["content"] if b["type"] == "tool_result"]
    assert len(results) == 1
    assert "https://example.com/gw" in json.dumps(results[0]["content"])
    traces = [t for t in new_traces(gw, known, 3) if t["status"] == 200]
    assert len(traces) == 3, summary(traces)


# -- keys mode: Claude Code sends its key as x-api-key ------------------------------------


def test_keys_mode_takes_its_key_and_refuses_a_wrong_one(
    keys_gw: GwServer, fakes: dict[str, Any], tmp_path: Path, egress_trap: EgressTrap
) -> None:
    def said(run: Run) -> str:
        return str(result_of(run)["result"])

    check_keys_mode(
        keys_gw,
        fakes["anthropic"],
        "anthropic",
        run=lambda box, key: claude_p(box, keys_gw, "via-anthropic", "Say hello.", key=key),
        said=said,
        root=tmp_path,
        trap=egress_trap,
    )
