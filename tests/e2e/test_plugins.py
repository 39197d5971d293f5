"""Plugins against a real gw on loopback, through the openai SDK: a plugin that raises
(skipped, or failing the request, as its on_error says), one that hangs (its timeout ends
it, inside the server), one that rewrites the model (served by the other route), one that
refuses; ``gw explain`` records each outcome. The plugins are tests/e2e/plugin_code, on the
server's PYTHONPATH; the shipped example (examples/plugins) loads the same way."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from e2e.gw_process import GwServer
from e2e.waiting import wait_until

pytestmark = pytest.mark.e2e

HERE = Path(__file__).parent
REPO = HERE.parent.parent
ROUTES = ("chat", "other", "explode", "explode-hard", "slow", "slow-hard", "closed", "late")
CONFIG = """
providers:
  - {name: mock, kind: mock}
routes:
ROUTES
plugins:
  - name: rewrite
    entry_point: gw_e2e_plugins:Rewrite
    settings: {from: chat, to: other}
  - name: raises-skip
    entry_point: gw_e2e_plugins:raises
    on_error: skip
    settings: {when: explode, late: late}
  - name: raises-fail
    entry_point: gw_e2e_plugins:raises
    hooks: [before_routing]
    on_error: fail
    settings: {when: explode-hard}
  - name: hangs-skip
    entry_point: gw_e2e_plugins:hangs
    timeout: 200ms
    settings: {when: slow}
  - name: hangs-fail
    entry_point: gw_e2e_plugins:hangs
    timeout: 200ms
    on_error: fail
    settings: {when: slow-hard}
  - name: weekends
    entry_point: gw_e2e_plugins:refuses
    settings: {when: closed}
  - name: aliases
    entry_point: gw_example_plugins.aliases:ModelAliases
    settings: {aliases: {fast: other}}
"""
HI = [{"role": "user", "content": "hi"}]


def _config() -> str:
    routes = "\n".join(
        f"  - {{name: {name}, targets: [{{provider: mock, model: mock-{name}}}]}}"
        for name in ROUTES
    )
    return CONFIG.replace("ROUTES", routes)


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GwServer]:
    home = tmp_path_factory.mktemp("plugins")
    config = home / "gw.yaml"
    config.write_text(_config())
    path = os.pathsep.join([str(HERE / "plugin_code"), str(REPO / "examples" / "plugins")])
    with GwServer(home / "state", config, env={"PYTHONPATH": path}) as server:
        yield server


def _sdk(gw: GwServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=gw.base_url, api_key="open", max_retries=0)


def _ask(gw: GwServer, model: str) -> tuple[int, str, dict[str, Any]]:
    """Status, x-gw-route and the explained trace of one request for ``model``."""
    try:
        raw = _sdk(gw).chat.completions.with_raw_response.create(model=model, messages=HI)
        status, headers = raw.http_response.status_code, raw.headers
    except openai.APIStatusError as error:
        status, headers = error.status_code, error.response.headers
    return status, headers["x-gw-route"], gw.wait_for_trace(headers["x-gw-request-id"])


def _notes(explained: dict[str, Any]) -> list[str]:
    decision = explained.get("decision") or {}
    return list(decision.get("notes", []))


def test_a_plugin_that_rewrites_the_model_sends_the_request_to_the_other_route(
    gw: GwServer,
) -> None:
    status, route, explained = _ask(gw, "chat")
    assert (status, route) == (200, "mock/mock-other")
    assert explained["decision"]["route"] == "other"
    assert "plugin rewrite: model 'chat' -> 'other' (test rewrite)" in _notes(explained)


def test_a_streamed_request_is_rewritten_too(gw: GwServer) -> None:
    raw = _sdk(gw).chat.completions.with_raw_response.create(model="chat", messages=HI, stream=True)
    assert raw.headers["x-gw-route"] == "mock/mock-other"
    chunks = list(raw.parse())
    assert chunks
    explained = gw.wait_for_trace(raw.headers["x-gw-request-id"])
    assert explained["stream"] is True
    assert "plugin rewrite: model 'chat' -> 'other' (test rewrite)" in _notes(explained)


def test_the_shipped_example_plugin_loads_and_rewrites_its_alias(gw: GwServer) -> None:
    status, route, explained = _ask(gw, "fast")
    assert (status, route) == (200, "mock/mock-other")
    assert "plugin aliases: model 'fast' -> 'other' (alias)" in _notes(explained)


def test_a_plugin_that_raises_with_on_error_skip_is_skipped_and_noted(gw: GwServer) -> None:
    status, route, explained = _ask(gw, "explode")
    assert (status, route) == (200, "mock/mock-explode")
    assert (
        "plugin raises-skip: before_routing raised RuntimeError: the plugin broke; "
        "skipped (on_error: skip)"
    ) in _notes(explained)


def test_a_plugin_that_raises_with_on_error_fail_fails_the_request_naming_it(
    gw: GwServer,
) -> None:
    with pytest.raises(openai.InternalServerError) as failed:
        _sdk(gw).chat.completions.create(model="explode-hard", messages=HI)
    assert failed.value.status_code == 500
    assert failed.value.code == "internal_error"
    assert "plugin raises-fail failed in before_routing" in failed.value.message
    explained = gw.wait_for_trace(failed.value.response.headers["x-gw-request-id"])
    assert explained["error"]["code"] == "internal_error"
    assert "plugin raises-fail" in explained["error"]["message"]


def test_a_plugin_that_hangs_is_cut_at_its_timeout_and_skipped(gw: GwServer) -> None:
    status, route, explained = _ask(gw, "slow")
    assert (status, route) == (200, "mock/mock-slow")
    assert (
        "plugin hangs-skip: before_attempt did not finish within its timeout (200ms); "
        "skipped (on_error: skip)"
    ) in _notes(explained)


def test_a_plugin_that_hangs_with_on_error_fail_fails_the_request_before_the_upstream(
    gw: GwServer,
) -> None:
    status, _, explained = _ask(gw, "slow-hard")
    assert status == 500
    assert explained["error"]["code"] == "internal_error"
    assert "plugin hangs-fail failed in before_attempt" in explained["error"]["message"]
    assert explained["attempts"] == []  # the upstream was never called
    assert any("plugin hangs-fail: before_attempt did not finish" in n for n in _notes(explained))


def test_a_plugin_that_refuses_answers_403_naming_the_plugin_and_its_reason(
    gw: GwServer,
) -> None:
    with pytest.raises(openai.PermissionDeniedError) as refused:
        _sdk(gw).chat.completions.create(model="closed", messages=HI)
    assert refused.value.code == "permission_denied"
    assert "refused by plugin weekends: this model is closed on weekends" in refused.value.message


def test_an_after_answer_that_raises_never_fails_the_answer(gw: GwServer) -> None:
    status, _, explained = _ask(gw, "late")
    assert status == 200
    assert (
        "plugin raises-skip: after_answer raised ValueError: cannot account 200; "
        "skipped (on_error: skip)"
    ) in _notes(explained)


def test_requests_no_plugin_acts_on_carry_no_plugin_notes(gw: GwServer) -> None:
    status, _, explained = _ask(gw, "other")
    assert status == 200
    assert not [note for note in _notes(explained) if note.startswith("plugin ")]


def test_a_reload_loads_a_plugin_the_running_revision_did_not_have(tmp_path: Path) -> None:
    routes = "routes:\n  - {name: chat, targets: [{provider: mock, model: mock-chat}]}\n"
    plain = "providers: [{name: mock, kind: mock}]\n" + routes
    config = tmp_path / "gw.yaml"
    config.write_text(plain)
    env = {"PYTHONPATH": str(REPO / "examples" / "plugins")}
    with GwServer(tmp_path / "state", config, env=env) as server:
        with pytest.raises(openai.NotFoundError):  # no route `fast` yet, and no alias
            _sdk(server).chat.completions.create(model="fast", messages=HI)
        started = _revision(server)
        config.write_text(
            plain + "plugins:\n  - name: aliases\n"
            "    entry_point: gw_example_plugins.aliases:ModelAliases\n"
            "    settings: {aliases: {fast: chat}}\n"
        )
        wait_until(
            lambda: _revision(server) > started,
            lambda: f"the revision with the plugin to go live:\n{server.log()}",
        )
        status, route, explained = _ask(server, "fast")
    assert (status, route) == (200, "mock/mock-chat")
    assert "plugin aliases: model 'fast' -> 'chat' (alias)" in _notes(explained)


def _revision(gw: GwServer) -> int:
    with gw.client() as http:
        return int(http.get("/readyz").json()["revision"])
