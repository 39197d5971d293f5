"""Gemini CLI (``gemini -p``) works through gw: GOOGLE_GEMINI_BASE_URL pointed at gw's
/v1beta, against a Gemini, an OpenAI-compatible and an Anthropic upstream.

The fake upstream answers a call of the CLI's own ``read_file`` tool, the CLI reads the
file, sends it back through gw (a ``functionResponse``), and prints the fake's text.
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
    new_traces,
    node_client,
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

FINAL = "I read notes.txt for you."
READ_CALL = ("read_file", json.dumps({"file_path": "notes.txt"}))
# The CLI's settings for a run through a gateway: an API key (not the "gateway" auth type
# GOOGLE_GEMINI_BASE_URL alone selects, which -p refuses), nothing sent to Google.
SETTINGS = {
    "security": {"auth": {"selectedType": "gemini-api-key"}},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
    "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
}


@pytest.fixture(scope="module", autouse=True)
def _installed() -> None:
    """Skip (or fail, in CI) before starting gw when the client is missing."""
    node_client("gemini")


@pytest.fixture(scope="module")
def fakes() -> Iterator[dict[str, Any]]:
    with FakeGemini() as gemini, FakeOpenAI() as openai, FakeAnthropic() as anthropic:
        yield {"gemini": gemini, "openai": openai, "anthropic": anthropic}


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory, fakes: dict[str, Any]) -> Iterator[GwServer]:
    state = tmp_path_factory.mktemp("agents-gemini-cli") / "state"
    with serve_gw(state, **{name: fake.base_url for name, fake in fakes.items()}) as server:
        yield server


def gemini_p(
    sandbox: Sandbox, gw: GwServer, route: str, prompt: str, key: str = "gm-gw-gemini-cli"
) -> Run:
    """``gemini -p`` with gw as its API, as the README shows."""
    settings = sandbox.home / ".gemini" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps(SETTINGS))
    env = {
        "GOOGLE_GEMINI_BASE_URL": gw.url,
        "GEMINI_API_KEY": key,
        "GEMINI_CLI_TRUST_WORKSPACE": "true",
    }
    argv: list[str | Path] = [node_client("gemini"), "-p", prompt, "--model", route]
    return sandbox.run(argv, env)


@pytest.mark.parametrize("upstream", ["gemini", "openai", "anthropic"])
def test_gemini_cli_tool_round_trip(
    gw: GwServer, fakes: dict[str, Any], sandbox: Sandbox, upstream: str
) -> None:
    fake = fakes[upstream]
    fake.clear()
    fake.enqueue(behavior(upstream, READ_CALL), behavior(upstream, FINAL))
    sandbox.write("notes.txt", f"the secret word is {SECRET}\n")
    known = trace_ids(gw)
    run = gemini_p(sandbox, gw, f"via-{upstream}", "What is in notes.txt?").ok()
    assert run.stdout.strip() == FINAL, run.describe()
    traces = new_traces(gw, known, 2)
    assert [(t["endpoint"], t["status"]) for t in traces] == [
        ("gemini.streamGenerateContent", 200)
    ] * 2, summary(traces)
    assert len(fake.requests) == 2
    results = tool_results(upstream, fake.requests[1].json)
    assert len(results) == 1
    assert SECRET in json.dumps(results[0])


# -- keys mode: the client's own way of sending a key reaches gw's auth ----------------


@pytest.fixture(scope="module")
def gemini_fake(fakes: dict[str, Any]) -> Any:
    return fakes["gemini"]


@pytest.fixture(scope="module")
def keys_gw(tmp_path_factory: pytest.TempPathFactory, gemini_fake: Any) -> Iterator[GwServer]:
    state = tmp_path_factory.mktemp("agents-gemini-cli-keys") / "state"
    with serve_gw(state, keys_mode=True, gemini=gemini_fake.base_url) as server:
        yield server


def test_keys_mode_takes_its_key_and_refuses_a_wrong_one(
    keys_gw: GwServer, gemini_fake: Any, tmp_path: Path, egress_trap: EgressTrap
) -> None:
    gemini_fake.clear()
    gemini_fake.enqueue(behavior("gemini", "Hello from gw."))
    known = trace_ids(keys_gw)
    key = create_key(keys_gw)
    good = gemini_p(
        Sandbox(tmp_path / "good", egress_trap), keys_gw, "via-gemini", "Say hello.", key=key
    )
    assert good.ok().stdout.strip() == "Hello from gw.", good.describe()
    [trace] = new_traces(keys_gw, known, 1)
    assert (trace["status"], trace["tenant"]) == (200, "agents"), summary([trace])
    known.add(trace["request_id"])
    bad = gemini_p(
        Sandbox(tmp_path / "bad", egress_trap),
        keys_gw,
        "via-gemini",
        "Say hello.",
        key="sk-not-a-gw-key",
    )
    assert bad.returncode != 0, bad.describe()
    refused = new_traces(keys_gw, known, 1)
    assert {(t["status"], (t["error"] or {}).get("code")) for t in refused} == {
        (401, "authentication_failed")
    }, summary(refused)
    assert len(gemini_fake.requests) == 1  # the refused one never reached the upstream
