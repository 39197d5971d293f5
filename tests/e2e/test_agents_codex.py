"""Codex CLI (``codex exec``) works through gw: a custom model provider pointed at gw's
/v1/responses, against a chat-completions upstream, an Anthropic one, a Gemini one and
an OpenAI Responses one (where what Codex sends that only OpenAI runs goes through as
sent).

The fake upstream answers a call of Codex's own shell tool (``exec_command``), Codex runs
it in its read-only sandbox, sends the output back through gw, and ends with the fake's
text. Codex needs gw's Responses stream to be right to get there: it takes each item from
``response.output_item.done`` and fails a turn whose stream ends without
``response.completed``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from e2e.agent_clients import (
    SECRET,
    EgressTrap,
    Run,
    Sandbox,
    behavior,
    create_key,
    jsonl,
    new_traces,
    node_client,
    offered_tools,
    serve_gw,
    summary,
    tool_results,
    trace_ids,
)
from e2e.agent_clients import egress_trap as egress_trap  # noqa: PLC0414 (a fixture, used by sandbox)
from e2e.agent_clients import sandbox as sandbox  # noqa: PLC0414 (a fixture)
from e2e.gw_process import GwServer
from fakes import anthropic_upstream, gemini_upstream, openai_upstream
from fakes.anthropic_upstream import FakeAnthropic
from fakes.gemini_upstream import FakeGemini
from fakes.openai_upstream import FakeOpenAI
from fakes.responses_upstream import FakeResponses

FINAL = "I read notes.txt for you."
SHELL_CALL = ("exec_command", json.dumps({"cmd": "cat notes.txt"}))


@pytest.fixture(scope="module", autouse=True)
def _installed() -> None:
    """Skip (or fail, in CI) before starting gw when the client is missing."""
    node_client("codex")


@pytest.fixture(scope="module")
def openai_fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


@pytest.fixture(scope="module")
def anthropic_fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as fake:
        yield fake


@pytest.fixture(scope="module")
def gemini_fake() -> Iterator[FakeGemini]:
    with FakeGemini() as fake:
        yield fake


@pytest.fixture(scope="module")
def responses_fake() -> Iterator[FakeResponses]:
    with FakeResponses() as fake:
        yield fake


@pytest.fixture(scope="module")
def gw(
    tmp_path_factory: pytest.TempPathFactory,
    openai_fake: FakeOpenAI,
    anthropic_fake: FakeAnthropic,
    gemini_fake: FakeGemini,
    responses_fake: FakeResponses,
) -> Iterator[GwServer]:
    state = tmp_path_factory.mktemp("agents-codex") / "state"
    with serve_gw(
        state,
        openai=openai_fake.base_url,
        anthropic=anthropic_fake.base_url,
        gemini=gemini_fake.base_url,
        responses=responses_fake.base_url,
    ) as server:
        yield server


def codex_exec(
    sandbox: Sandbox, gw: GwServer, route: str, prompt: str, key: str = "sk-gw-codex"
) -> Run:
    """``codex exec`` with gw as a custom provider, as the README shows (plus the
    switches that keep a test run on loopback: no analytics, no plugin sync)."""
    codex_home = sandbox.home / ".codex"
    codex_home.mkdir()
    config = {
        "model_providers.gw.name": "gw",
        "model_providers.gw.base_url": json.dumps(gw.base_url),
        "model_providers.gw.wire_api": "responses",
        "model_providers.gw.env_key": "GW_API_KEY",
        "model_provider": "gw",
        "analytics.enabled": "false",
    }
    overrides = [arg for key, value in config.items() for arg in ("-c", f"{key}={value}")]
    argv: list[str | Path] = [
        node_client("codex"),
        "exec",
        "--json",
        "--skip-git-repo-check",
        "--ephemeral",
        "--sandbox",
        "read-only",
        "--disable",
        "plugins",
        *overrides,
        "--model",
        route,
        prompt,
    ]
    return sandbox.run(argv, {"CODEX_HOME": str(codex_home), "GW_API_KEY": key})


def events_of(run: Run, kind: str) -> list[dict[str, Any]]:
    """The items of ``item.completed`` events of one type in ``codex exec --json``."""
    return [
        event["item"]
        for event in jsonl(run.stdout)
        if event.get("type") == "item.completed" and event["item"].get("type") == kind
    ]


def check_round_trip(run: Run, gw: GwServer, known: set[str], provider: str) -> None:
    """Codex ran the shell call, ended with the upstream's text, and both of its
    requests went through gw's /v1/responses to ``provider``."""
    run.ok()
    commands = events_of(run, "command_execution")
    assert [c["command"] for c in commands] == ["/bin/bash -lc 'cat notes.txt'"], run.describe()
    assert SECRET in commands[0]["aggregated_output"]
    assert [m["text"] for m in events_of(run, "agent_message")] == [FINAL], run.describe()
    traces = new_traces(gw, known, 2)
    assert [(t["endpoint"], t["status"]) for t in traces] == [("responses", 200)] * 2, summary(
        traces
    )
    assert {t["answered_by"]["provider"] for t in traces} == {provider}


def test_codex_exec_tool_round_trip_to_chat_upstream(
    gw: GwServer, openai_fake: FakeOpenAI, sandbox: Sandbox
) -> None:
    openai_fake.clear()
    sandbox.write("notes.txt", f"the secret word is {SECRET}\n")
    openai_fake.enqueue(
        openai_upstream.Behavior(tool_call=SHELL_CALL), openai_upstream.Behavior(text=FINAL)
    )
    known = trace_ids(gw)
    run = codex_exec(sandbox, gw, "via-openai", "What is in notes.txt?")
    check_round_trip(run, gw, known, "oai")
    first, second = (r.json for r in openai_fake.requests)
    offered = {t["function"]["name"] for t in first["tools"]}
    assert "exec_command" in offered
    # Its sub-agent tools come in a namespace: offered under joined names.
    assert "multi_agent_v1__spawn_agent" in offered, offered
    assert first["stream"] is True
    results = [m for m in second["messages"] if m["role"] == "tool"]
    assert len(results) == 1
    assert results[0]["tool_call_id"] == "call_fake_1"
    assert SECRET in results[0]["content"]


def test_codex_exec_tool_round_trip_to_anthropic_upstream(
    gw: GwServer, anthropic_fake: FakeAnthropic, sandbox: Sandbox
) -> None:
    anthropic_fake.clear()
    sandbox.write("notes.txt", f"the secret word is {SECRET}\n")
    anthropic_fake.enqueue(
        anthropic_upstream.Behavior(tool_call=SHELL_CALL),
        anthropic_upstream.Behavior(text=FINAL),
    )
    known = trace_ids(gw)
    run = codex_exec(sandbox, gw, "via-anthropic", "What is in notes.txt?")
    check_round_trip(run, gw, known, "claude")
    first, second = (r.json for r in anthropic_fake.requests)
    assert "exec_command" in {t["name"] for t in first["tools"]}
    last_turn = second["messages"][-1]
    assert last_turn["role"] == "user"
    results = [b for b in last_turn["content"] if b["type"] == "tool_result"]
    assert len(results) == 1
    assert SECRET in json.dumps(results[0]["content"])


def test_codex_exec_tool_round_trip_to_gemini_upstream(
    gw: GwServer, gemini_fake: FakeGemini, sandbox: Sandbox
) -> None:
    gemini_fake.clear()
    sandbox.write("notes.txt", f"the secret word is {SECRET}\n")
    gemini_fake.enqueue(
        gemini_upstream.Behavior(tool_calls=(SHELL_CALL,)), gemini_upstream.Behavior(text=FINAL)
    )
    known = trace_ids(gw)
    run = codex_exec(sandbox, gw, "via-gemini", "What is in notes.txt?")
    check_round_trip(run, gw, known, "gem")
    first, second = (r.json for r in gemini_fake.requests)
    declared = {f["name"] for f in first["tools"][0]["functionDeclarations"]}
    assert "exec_command" in declared
    answers = [
        part["functionResponse"]
        for turn in second["contents"]
        for part in turn["parts"]
        if "functionResponse" in part
    ]
    assert len(answers) == 1
    assert answers[0]["name"] == "exec_command"
    assert SECRET in json.dumps(answers[0]["response"])


def test_codex_exec_tool_round_trip_to_a_responses_upstream(
    gw: GwServer, responses_fake: FakeResponses, sandbox: Sandbox
) -> None:
    responses_fake.clear()
    sandbox.write("notes.txt", f"the secret word is {SECRET}\n")
    responses_fake.enqueue(behavior("responses", SHELL_CALL), behavior("responses", FINAL))
    known = trace_ids(gw)
    run = codex_exec(sandbox, gw, "via-responses", "What is in notes.txt?")
    check_round_trip(run, gw, known, "oresp")
    first, second = (r.json for r in responses_fake.responses_requests)
    # What only OpenAI runs reaches it as Codex sent it: web search, the namespace.
    kinds = [tool["type"] for tool in first["tools"]]
    assert "web_search" in kinds
    assert kinds.count("namespace") == 1
    assert "exec_command" in offered_tools("responses", first)
    assert first["include"] == ["reasoning.encrypted_content"]
    assert first["store"] is False
    results = tool_results("responses", second)
    assert len(results) == 1
    assert SECRET in results[0]


# -- keys mode: the client's own way of sending a key reaches gw's auth ----------------


@pytest.fixture(scope="module")
def keys_gw(tmp_path_factory: pytest.TempPathFactory, openai_fake: Any) -> Iterator[GwServer]:
    state = tmp_path_factory.mktemp("agents-codex-keys") / "state"
    with serve_gw(state, keys_mode=True, openai=openai_fake.base_url) as server:
        yield server


def test_keys_mode_takes_its_key_and_refuses_a_wrong_one(
    keys_gw: GwServer, openai_fake: Any, tmp_path: Path, egress_trap: EgressTrap
) -> None:
    openai_fake.clear()
    openai_fake.enqueue(behavior("openai", "Hello from gw."))
    known = trace_ids(keys_gw)
    key = create_key(keys_gw)
    good = codex_exec(
        Sandbox(tmp_path / "good", egress_trap), keys_gw, "via-openai", "Say hello.", key=key
    )
    assert [m["text"] for m in events_of(good.ok(), "agent_message")] == ["Hello from gw."], (
        good.describe()
    )
    [trace] = new_traces(keys_gw, known, 1)
    assert (trace["status"], trace["tenant"]) == (200, "agents"), summary([trace])
    known.add(trace["request_id"])
    bad = codex_exec(
        Sandbox(tmp_path / "bad", egress_trap),
        keys_gw,
        "via-openai",
        "Say hello.",
        key="sk-not-a-gw-key",
    )
    assert bad.returncode != 0, bad.describe()
    refused = new_traces(keys_gw, known, 1)
    assert {(t["status"], (t["error"] or {}).get("code")) for t in refused} == {
        (401, "authentication_failed")
    }, summary(refused)
    assert len(openai_fake.requests) == 1  # the refused one never reached the upstream
