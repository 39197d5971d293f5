"""Codex CLI (``codex exec``) works through gw: a custom model provider pointed at gw's
/v1/responses, against every upstream format: chat completions, Anthropic, Gemini and an
OpenAI Responses one (where what Codex sends that only OpenAI runs goes through as sent).

The fake upstream answers a call of Codex's own shell tool (``exec_command``), Codex runs
it in its read-only sandbox, sends the output back through gw, and ends with the fake's
text. Codex needs gw's Responses stream to be right to get there: it takes each item from
``response.output_item.done`` and fails a turn whose stream ends without
``response.completed``. In keys mode it sends its key as a bearer token (``env_key``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from e2e.agent_clients import (
    PROVIDERS,
    SECRET,
    EgressTrap,
    Run,
    Sandbox,
    behavior,
    check_keys_mode,
    jsonl,
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

FINAL = "I read notes.txt for you."
SHELL_CALL = ("exec_command", json.dumps({"cmd": "cat notes.txt"}))


@pytest.fixture(scope="module", autouse=True)
def _installed() -> None:
    """Skip (or fail, in CI) before starting gw when the client is missing."""
    node_client("codex")


def codex_exec(
    sandbox: Sandbox, gw: GwServer, route: str, prompt: str, key: str = "sk-gw-codex"
) -> Run:
    """``codex exec`` with gw as a custom provider, as docs/guides/clients.md shows (plus the
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


@pytest.mark.parametrize("upstream", ["openai", "anthropic", "gemini", "responses"])
def test_codex_exec_tool_round_trip(
    gw: GwServer, fakes: dict[str, Any], sandbox: Sandbox, upstream: str
) -> None:
    fake = fakes[upstream]
    fake.clear()
    sandbox.write("notes.txt", f"the secret word is {SECRET}\n")
    fake.enqueue(behavior(upstream, SHELL_CALL), behavior(upstream, FINAL))
    known = trace_ids(gw)
    run = codex_exec(sandbox, gw, f"via-{upstream}", "What is in notes.txt?").ok()
    commands = events_of(run, "command_execution")
    assert [c["command"] for c in commands] == ["/bin/bash -lc 'cat notes.txt'"], run.describe()
    assert SECRET in commands[0]["aggregated_output"]
    assert [m["text"] for m in events_of(run, "agent_message")] == [FINAL], run.describe()
    traces = new_traces(gw, known, 2)
    assert [(t["endpoint"], t["status"]) for t in traces] == [("responses", 200)] * 2, summary(
        traces
    )
    assert {t["answered_by"]["provider"] for t in traces} == {PROVIDERS[upstream]}
    sent = fake.responses_requests if upstream == "responses" else fake.requests
    first, second = (request.json for request in sent)
    offered = offered_tools(upstream, first)
    assert "exec_command" in offered
    results = tool_results(upstream, second)
    assert len(results) == 1
    assert SECRET in json.dumps(results[0])
    if upstream == "responses":
        # What only OpenAI runs reaches it as Codex sent it: web search, the namespace.
        kinds = [tool["type"] for tool in first["tools"]]
        assert "web_search" in kinds
        assert kinds.count("namespace") == 1
        assert (first["include"], first["store"]) == (["reasoning.encrypted_content"], False)
    else:
        # Its sub-agent tools come in a namespace: offered under joined names.
        assert "multi_agent_v1__spawn_agent" in offered, offered


def test_keys_mode_takes_its_key_and_refuses_a_wrong_one(
    keys_gw: GwServer, fakes: dict[str, Any], tmp_path: Path, egress_trap: EgressTrap
) -> None:
    def said(run: Run) -> str:
        messages = events_of(run.ok(), "agent_message")
        return str(messages[-1]["text"]) if messages else ""

    check_keys_mode(
        keys_gw,
        fakes["openai"],
        "openai",
        run=lambda box, key: codex_exec(box, keys_gw, "via-openai", "Say hello.", key=key),
        said=said,
        root=tmp_path,
        trap=egress_trap,
    )
