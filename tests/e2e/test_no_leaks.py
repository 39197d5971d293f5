"""A scan after a varied workload through a live gw: no secret (provider key, admin key,
an API key's plaintext) and no prompt or completion text appears in the server's log, its
traces, `gw explain`, the admin API, `gw config show`, `gw keys list`, `gw usage`, or any
file in the state directory (the SQLite database and its WAL included); nor does the
provider key in an error answer whose upstream echoed it."""

from __future__ import annotations

import json
from pathlib import Path

import anthropic
import httpx
import openai

from e2e.gw_process import GwServer
from fakes.openai_upstream import Behavior, FakeOpenAI

PROVIDER_SECRET = "sk-leakcheck-provider-5c1e9a7b3d2f4e60"
HEADER_SECRET = "hdr-leakcheck-portkey-8a6c4e2f0b1d3f57"
ADMIN_SECRET = "gw-leakcheck-admin-2b8d6f4a0c1e3b5d7f9a"
PROMPT = "the secret recipe is seventeen purple turnips"
ANSWER = "a completion that must stay unrecorded, about orange lanterns"
CONFIG = """
auth: {{mode: keys, admin_key: env:LEAK_ADMIN}}
providers:
  - {{name: up, kind: openai_compatible, base_url: "{up}", api_key: env:LEAK_PROVIDER,
     headers: {{x-org: "{org}", x-portkey-api-key: env:LEAK_HEADER}}}}
models:
  - {{provider: up, model: gpt-l, input_per_mtok: 1.0, output_per_mtok: 2.0}}
routes:
  - {{name: chat, targets: [{{provider: up, model: gpt-l}}]}}
policies:
  - {{name: once, match: {{routes: ["*"]}}, retry: {{max_attempts: 1}}}}
tenants: [{{name: team}}]
"""


def test_nothing_secret_or_private_is_recorded_anywhere(tmp_path: Path) -> None:
    with FakeOpenAI() as upstream:
        upstream.default = Behavior(text=ANSWER)
        config = tmp_path / "gw.yaml"
        # Header values are literals kept in the config file and its revision history (for
        # rollback); credentials belong in api_key references, which are what is checked here.
        config.write_text(CONFIG.format(up=upstream.base_url, org="org-leakcheck"))
        env = {
            "LEAK_ADMIN": ADMIN_SECRET,
            "LEAK_PROVIDER": PROVIDER_SECRET,
            "LEAK_HEADER": HEADER_SECRET,
        }
        with GwServer(tmp_path / "state", config, env=env) as gw:
            made = gw.cli_json("keys", "create", "--config", str(config), "--tenant", "team")
            api_key = str(made["key"])
            oa = openai.OpenAI(base_url=gw.base_url, api_key=api_key, max_retries=0)
            ids = []
            whole = oa.chat.completions.with_raw_response.create(
                model="chat", messages=[{"role": "user", "content": PROMPT}]
            )
            assert ANSWER in (whole.parse().choices[0].message.content or "")
            ids.append(whole.headers["x-gw-request-id"])
            with oa.chat.completions.with_streaming_response.create(
                model="chat", messages=[{"role": "user", "content": PROMPT}], stream=True
            ) as streamed:
                assert "orange" in streamed.text()
                ids.append(streamed.headers["x-gw-request-id"])
            ant = anthropic.Anthropic(base_url=gw.url, api_key=api_key, max_retries=0)
            message = ant.messages.with_raw_response.create(
                model="chat", max_tokens=64, messages=[{"role": "user", "content": PROMPT}]
            )
            ids.append(message.headers["x-gw-request-id"])
            upstream.enqueue(Behavior(status=500))
            with httpx.Client(base_url=gw.url, timeout=30) as http:
                failed = http.post(
                    "/v1/chat/completions",
                    json={"model": "chat", "messages": [{"role": "user", "content": PROMPT}]},
                    headers={"authorization": f"Bearer {api_key}"},
                )
                assert failed.status_code == 502
                ids.append(failed.headers["x-gw-request-id"])
                refused = http.post(
                    "/v1/chat/completions",
                    json={"model": "chat", "messages": [{"role": "user", "content": PROMPT}]},
                    headers={
                        "authorization": "Bearer gw-not-a-real-key-" + PROMPT.replace(" ", "")
                    },
                )
                assert refused.status_code == 401
                # An upstream that echoes the key it was sent: the client sees it masked.
                echo = {"message": f"Bad header: Bearer {PROVIDER_SECRET}", "type": "x"}
                upstream.enqueue(Behavior(status=400, error_body={"error": echo}))
                echoed = http.post(
                    "/v1/chat/completions",
                    json={"model": "chat", "messages": [{"role": "user", "content": "hi"}]},
                    headers={"authorization": f"Bearer {api_key}"},
                )
                assert echoed.status_code == 400
                assert "Bad header: Bearer ***" in echoed.json()["error"]["message"]
                admin = {"authorization": f"Bearer {ADMIN_SECRET}"}
                seen = [
                    http.get("/admin/v1/health", headers=admin).text,
                    http.get("/admin/v1/usage?by=tenant", headers=admin).text,
                    refused.text,
                    failed.text,
                    echoed.text,
                ]
            assert upstream.requests[0].headers["authorization"] == f"Bearer {PROVIDER_SECRET}"
            assert upstream.requests[0].headers["x-portkey-api-key"] == HEADER_SECRET
            seen += [json.dumps(gw.wait_for_trace(request_id)) for request_id in ids]
            seen += [
                gw.cli("traces", "--json").stdout,
                gw.cli("config", "show", "--config", str(config)).stdout,
                gw.cli("keys", "list", "--json").stdout,
                gw.cli("usage", "--by", "key", "--json").stdout,
            ]
        seen.append(gw.log())
        for path in (tmp_path / "state").rglob("*"):
            if path.is_file():
                seen.append(path.read_bytes().decode("utf-8", errors="replace"))
    everything = "\n".join(seen)
    secrets = (PROVIDER_SECRET, HEADER_SECRET, ADMIN_SECRET, api_key)
    for private in (*secrets, PROMPT, ANSWER, "turnips", "lanterns"):
        assert private not in everything, f"{private!r} was recorded"
    assert "team" in everything  # the scan did read the records
