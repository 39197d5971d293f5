"""A missing provider key is said, not silent: with the config `gw init` writes and no
OPENAI_API_KEY, `gw config validate`, `gw serve` at start and `gw health` name the provider
and the route that falls through to another target because of it; a reload that makes a
route's first target unusable says so in the log. With the key set, none of it is said."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from e2e.gw_process import GwServer, run_cli
from e2e.waiting import wait_until

NO_KEY = {"OPENAI_API_KEY": ""}
MISSING = (
    "provider openai has no usable credentials: providers[0].api_key is env:OPENAI_API_KEY,"
    " and OPENAI_API_KEY is not set"
)
FALLS = (
    "route chat: its first target openai/gpt-4o-mini cannot work (no usable credentials), so"
    " its requests fall through to local/llama3.2, mock/mock-1"
)


def init(tmp_path: Path) -> Path:
    state = tmp_path / "state"
    run_cli("init", "--state-dir", str(state))
    return state


def test_validate_names_the_provider_and_the_route_and_stays_valid(tmp_path: Path) -> None:
    state = init(tmp_path)
    done = run_cli("config", "validate", "--state-dir", str(state), env=NO_KEY)
    assert done.stdout.startswith("ok: ")
    assert f"warning: {MISSING}" in done.stderr
    assert f"warning: {FALLS}" in done.stderr
    assert "this shell's environment" in done.stderr
    report = json.loads(
        run_cli("config", "validate", "--state-dir", str(state), "--json", env=NO_KEY).stdout
    )
    assert report["valid"] is True
    assert report["credentials"]["unusable"] == ["openai"]
    assert [f["route"] for f in report["credentials"]["falls_through"] if f["first"]] == ["chat"]

    quiet = run_cli("config", "validate", "--state-dir", str(state), env={"OPENAI_API_KEY": "sk-x"})
    assert "credentials" not in quiet.stderr
    assert "warning" not in quiet.stderr


def test_serve_and_health_say_what_cannot_work(tmp_path: Path) -> None:
    state = init(tmp_path)
    with GwServer(state, env=NO_KEY) as gw:
        assert f"warning: {MISSING}" in gw.log()
        assert f"warning: {FALLS}" in gw.log()
        # The request is still answered, by a fallback; health says why.
        answer = httpx.post(
            f"{gw.base_url}/chat/completions",
            json={"model": "chat", "messages": [{"role": "user", "content": "hi"}]},
            timeout=60,
        )
        assert answer.status_code == 200
        trace = gw.wait_for_trace(answer.headers["x-gw-request-id"])
        tried = [(a["provider"], a["outcome"]) for a in trace["attempts"]]
        assert tried[0][0] == "openai"
        assert tried[-1] == ("mock", "answered")
        shown = gw.cli("health").stdout
        assert "What cannot work" in shown
        assert "provider openai has no usable credentials" in shown
        assert "route chat: its first target openai/gpt-4o-mini cannot work" in shown
        report = gw.cli_json("health")
        assert report["credentials"]["unusable"] == ["openai"]

        # A reload whose route puts the keyless provider first says so in the log.
        config = state / "gw.yaml"
        text = config.read_text().replace(
            "- name: mock\n    targets:",
            "- name: mock\n    targets:\n      - {provider: openai, model: gpt-4o}",
            1,
        )
        assert text != config.read_text()
        config.write_text(text)
        wait_until(lambda: gw.cli_json("status")["revision"] >= 2, "the reload")
        assert "config revision 2: route mock: its first target openai/gpt-4o cannot work" in (
            gw.log()
        )
