"""The README's five-minute tour, run exactly as a user types it: no config at all."""

from __future__ import annotations

import json
from pathlib import Path

from e2e.gw_process import GwServer, run_cli


def test_first_request_works_with_no_config_and_is_explained(tmp_path: Path) -> None:
    with GwServer(tmp_path / "state") as gw, gw.client() as http:
        answer = http.post(
            "/v1/chat/completions",
            json={"model": "mock", "messages": [{"role": "user", "content": "hi"}]},
        )
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert body["object"] == "chat.completion"
        assert body["choices"][0]["message"]["content"].startswith("Mock answer")
        assert body["usage"]["completion_tokens"] > 0
        request_id = answer.headers["x-gw-request-id"]
        assert answer.headers["x-gw-route"] == "mock/mock-1"
        assert int(answer.headers["x-gw-revision"]) >= 1

        explained = gw.wait_for_trace(request_id)
        assert explained["status"] == 200
        assert explained["decision"]["route"] == "mock"
        assert explained["decision"]["chain"] == ["mock/mock-1"]
        assert [a["outcome"] for a in explained["attempts"]] == ["answered"]

        listed = gw.cli_json("traces", "--limit", "5")
        assert listed[0]["request_id"] == request_id
        assert listed[0]["route"] == "mock"

        table = gw.cli("traces").stdout
        assert request_id[:12] in table
        text = gw.cli("explain", request_id).stdout
        assert "mock/mock-1" in text
        assert "answered" in text


def test_same_request_gets_the_same_mock_answer(tmp_path: Path) -> None:
    payload = {"model": "mock", "messages": [{"role": "user", "content": "same words"}]}
    with GwServer(tmp_path / "state") as gw, gw.client() as http:
        first = http.post("/v1/chat/completions", json=payload).json()
        second = http.post("/v1/chat/completions", json=payload).json()
    assert first["choices"][0]["message"] == second["choices"][0]["message"]


def test_revision_survives_restart_and_grows_on_a_new_config(tmp_path: Path) -> None:
    state = tmp_path / "state"
    config = tmp_path / "gw.yaml"
    config.write_text("routes: []\nproviders: [{name: mock, kind: mock}]\n")
    with GwServer(state, config) as gw, gw.client() as http:
        first = int(http.get("/v1/models").headers["x-gw-revision"])
    with GwServer(state, config) as gw, gw.client() as http:
        assert int(http.get("/v1/models").headers["x-gw-revision"]) == first
    config.write_text(
        "providers: [{name: mock, kind: mock}]\nroutes: [{name: m, targets: [{provider: mock, model: x}]}]\n"
    )
    with GwServer(state, config) as gw, gw.client() as http:
        assert int(http.get("/v1/models").headers["x-gw-revision"]) == first + 1


def test_version_prints_gw_and_version_on_the_first_line() -> None:
    for args in (["version"], ["--version"]):
        first_line = run_cli(*args).stdout.splitlines()[0]
        assert first_line.startswith("gw ")


def test_sigterm_flushes_every_trace_before_exit(tmp_path: Path) -> None:
    state = tmp_path / "state"
    with GwServer(state) as gw, gw.client() as http:
        ids = [
            http.post(
                "/v1/chat/completions",
                json={"model": "mock", "messages": [{"role": "user", "content": f"n{i}"}]},
            ).headers["x-gw-request-id"]
            for i in range(40)
        ]
    # The server is stopped (SIGTERM) before anyone waited for the traces to land.
    assert not (state / "server.json").exists()
    listed = run_cli("traces", "--limit", "100", "--json", "--state-dir", str(state)).stdout
    assert {t["request_id"] for t in json.loads(listed)} == set(ids)
