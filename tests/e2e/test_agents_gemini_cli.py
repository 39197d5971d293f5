"""Gemini CLI (``gemini -p``) works through gw: GOOGLE_GEMINI_BASE_URL pointed at gw's
/v1beta, against every upstream format: Gemini, chat completions, Anthropic and OpenAI
Responses. In keys mode it sends its key as ``x-goog-api-key``.

The fake upstream answers a call of the CLI's own ``read_file`` tool, the CLI reads the
file, sends it back through gw (a ``functionResponse``), and prints the fake's text.
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


def gemini_p(
    sandbox: Sandbox, gw: GwServer, route: str, prompt: str, key: str = "gm-gw-gemini-cli"
) -> Run:
    """``gemini -p`` with gw as its API, as docs/guides/clients.md shows."""
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


@pytest.mark.parametrize("upstream", ["gemini", "openai", "anthropic", "responses"])
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


# -- keys mode: Gemini CLI sends its key as x-goog-api-key -------------------------------


def test_keys_mode_takes_its_key_and_refuses_a_wrong_one(
    keys_gw: GwServer, fakes: dict[str, Any], tmp_path: Path, egress_trap: EgressTrap
) -> None:
    def said(run: Run) -> str:
        return run.ok().stdout.strip()

    check_keys_mode(
        keys_gw,
        fakes["gemini"],
        "gemini",
        run=lambda box, key: gemini_p(box, keys_gw, "via-gemini", "Say hello.", key=key),
        said=said,
        root=tmp_path,
        trap=egress_trap,
    )
