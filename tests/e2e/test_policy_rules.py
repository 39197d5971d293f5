"""Policy matching and deny rules against a real gw in keys mode, through the official
openai and anthropic SDKs and the CLI as a user types it.

A policy for one API key beats a `{routes: [chat], streaming: true}` policy of higher
priority; deny rules (by request kind, by prompt size) answer 403 `permission_denied` with
their reason before any upstream call, in each client's error shape, and `gw explain` and
`gw route-preview` name the rule that decided.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from e2e.gw_process import GwServer, run_cli
from fakes.openai_upstream import FakeOpenAI

pytestmark = pytest.mark.e2e

ADMIN = "gw-admin-policy-rules-0123456789"
CONFIG = """
auth: {{mode: keys, admin_key: env:GW_ADMIN_KEY}}
providers:
  - {{name: up, kind: openai_compatible, base_url: "{upstream}"}}
models:
  - {{provider: up, model: gpt-a, capabilities: [embeddings]}}
routes:
  - name: chat
    targets: [{{provider: up, model: gpt-a}}]
tenants: [{{name: team-a}}]
policies:
  - name: chat-streams
    match: {{routes: [chat], streaming: true}}
    priority: 99
  - name: one-key
    match: {{api_keys: [{key_id}]}}
  - name: no-embeddings
    match: {{kinds: [embeddings, count_tokens]}}
    deny: true
    deny_reason: embeddings and token counts are switched off for this team
  - name: no-huge-prompts
    match: {{routes: [chat], min_prompt_tokens: 2000}}
    deny: true
    deny_reason: prompts over 2000 tokens are not allowed here
"""
HI = [{"role": "user", "content": "hi"}]


@pytest.fixture
def keys(tmp_path: Path) -> dict[str, dict[str, Any]]:
    """Two keys of team-a, made before the server starts so the config can name one."""
    config = tmp_path / "gw.yaml"
    config.write_text("tenants: [{name: team-a}]\n")
    made = {}
    for name in ("chosen", "other"):
        out = run_cli(
            "keys", "create", "--tenant", "team-a", "--name", name, "--json",
            "--config", str(config), "--state-dir", str(tmp_path / "state"),
        )  # fmt: skip
        made[name] = json.loads(out.stdout)
    return made


@pytest.fixture
def gw(tmp_path: Path, keys: dict[str, dict[str, Any]], primary: FakeOpenAI) -> Iterator[GwServer]:
    config = tmp_path / "gw.yaml"
    config.write_text(CONFIG.format(upstream=primary.base_url, key_id=keys["chosen"]["id"]))
    # GW_ADMIN_KEY: the server's admin key, and the one the CLI's admin calls send.
    with GwServer(tmp_path / "state", config, env={"GW_ADMIN_KEY": ADMIN}) as server:
        yield server


def sdk(gw: GwServer, key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=gw.base_url, api_key=key, max_retries=0)


def streamed_policy(gw: GwServer, key: str) -> str:
    with sdk(gw, key).chat.completions.with_streaming_response.create(
        model="chat", messages=HI, stream=True
    ) as answer:
        request_id = answer.headers["x-gw-request-id"]
        assert "".join(answer.iter_lines())  # read to the end
    policy: str = gw.wait_for_trace(request_id)["decision"]["policy"]
    return policy


def test_a_policy_for_one_key_beats_route_and_streaming(
    gw: GwServer, keys: dict[str, dict[str, Any]]
) -> None:
    assert streamed_policy(gw, keys["chosen"]["key"]) == "one-key"
    assert streamed_policy(gw, keys["other"]["key"]) == "chat-streams"

    preview = gw.cli_json(
        "route-preview", "--model", "chat", "--stream", "--key", keys["chosen"]["id"]
    )
    assert preview["rule"] == {
        "policy": "one-key",
        "matched_on": ["api_keys"],
        "priority": 0,
        "deny": False,
        "deny_reason": None,
    }
    table = gw.cli("route-preview", "--model", "chat", "--stream").stdout
    assert "Rule: policy chat-streams (matched on model, streaming; priority 99)" in table


def test_deny_rules_answer_403_with_their_reason_before_any_upstream_call(
    gw: GwServer, keys: dict[str, dict[str, Any]], primary: FakeOpenAI
) -> None:
    before = primary.count
    key = keys["other"]["key"]
    with pytest.raises(openai.PermissionDeniedError) as embeddings:
        sdk(gw, key).embeddings.create(model="chat", input="hello")
    error = embeddings.value.body
    assert isinstance(error, dict)
    assert error["code"] == "permission_denied"
    assert error["message"] == (
        "embeddings and token counts are switched off for this team (policy 'no-embeddings')"
    )
    request_id = embeddings.value.response.headers["x-gw-request-id"]

    with pytest.raises(openai.PermissionDeniedError) as huge:
        sdk(gw, key).chat.completions.create(model="chat", messages=[
            {"role": "user", "content": "word " * 3000}
        ])  # fmt: skip
    assert "prompts over 2000 tokens are not allowed here" in str(huge.value)

    claude = anthropic.Anthropic(base_url=gw.url, api_key=key, max_retries=0)
    with pytest.raises(anthropic.PermissionDeniedError) as counted:
        claude.messages.count_tokens(model="chat", messages=HI)  # type: ignore[arg-type]
    body = counted.value.body
    assert isinstance(body, dict)
    assert body["error"]["type"] == "permission_error"
    assert "switched off for this team" in body["error"]["message"]
    assert body["gw"]["code"] == "permission_denied"
    assert primary.count == before  # no upstream was called for any of them

    explained = gw.wait_for_trace(request_id)
    assert explained["decision"]["policy"] == "no-embeddings"
    assert explained["error"]["code"] == "permission_denied"
    assert any("denied by policy no-embeddings" in note for note in explained["decision"]["notes"])

    shown = gw.cli("route-preview", "--model", "chat", "--kind", "embeddings").stdout
    assert "Rule: policy no-embeddings (matched on kinds; priority 0)" in shown
    assert "Denied: 403 permission_denied, embeddings and token counts" in shown
