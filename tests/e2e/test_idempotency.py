"""Idempotency-Key through a live gw, with the official SDKs in front of a fake OpenAI
upstream that counts its calls: a retry after the answer is the same answer with no second
upstream call (traced as a replay, without usage or cost); a duplicate while the first is
still running gets 409; the key with another body gets 422; another API key's same key is
its own; a failed answer is not held; streams are refused; the held answer is nowhere in
the clear; the window ends; and two gateways sharing PostgreSQL (and one vault identity)
replay each other's answers and refuse each other's duplicates."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import anthropic
import httpx
import openai
import pytest
from pg import fresh_database

from gw.vault import Identity

from e2e.fleet_processes import running_fleet
from e2e.gw_process import GwServer
from e2e.waiting import wait_until
from fakes.openai_upstream import Behavior, FakeOpenAI

ANSWER = "an idempotent answer about eleven copper kettles"
ADMIN = "gw-idempotency-admin-4d2b8f6a0c1e3b5d7f9a"
CONFIG = """
auth: {{mode: keys, admin_key: env:IDEM_ADMIN}}
server: {{idempotency_ttl: {ttl}, idempotency_max_answer_bytes: {largest}}}
providers:
  - {{name: up, kind: openai_compatible, base_url: "{up}"}}
models:
  - {{provider: up, model: gpt-i, input_per_mtok: 1.0, output_per_mtok: 2.0}}
routes:
  - {{name: chat, targets: [{{provider: up, model: gpt-i}}]}}
  - {{name: embed, targets: [{{provider: up, model: text-embedding-3-small}}]}}
policies:
  - {{name: once, match: {{routes: ["*"]}}, retry: {{max_attempts: 1}}}}
tenants: [{{name: team}}]
"""
MESSAGES = [{"role": "user", "content": "count the kettles"}]


@dataclass
class Setup:
    gw: GwServer
    upstream: FakeOpenAI
    key_a: str
    key_b: str

    def openai(self, key: str | None = None) -> openai.OpenAI:
        return openai.OpenAI(base_url=self.gw.base_url, api_key=key or self.key_a, max_retries=0)


def server(tmp: Path, upstream: FakeOpenAI, ttl: str, largest: str = "1MiB") -> GwServer:
    config = tmp / "gw.yaml"
    config.write_text(CONFIG.format(up=upstream.base_url, ttl=ttl, largest=largest))
    return GwServer(tmp / "state", config, env={"IDEM_ADMIN": ADMIN})


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    tmp = tmp_path_factory.mktemp("idempotency")
    with FakeOpenAI() as upstream:
        upstream.default = Behavior(text=ANSWER)
        gw = server(tmp, upstream, "5m").start()
        try:
            config = str(tmp / "gw.yaml")
            made = [gw.cli_json("keys", "create", "--config", config, "--tenant", "team")]
            made.append(gw.cli_json("keys", "create", "--config", config, "--tenant", "team"))
            yield Setup(gw, upstream, str(made[0]["key"]), str(made[1]["key"]))
        finally:
            gw.stop()


def new_key() -> dict[str, str]:
    return {"Idempotency-Key": f'"{uuid.uuid4()}"'}


def test_a_retry_after_the_answer_gets_it_again_without_an_upstream_call(setup: Setup) -> None:
    client, key = setup.openai(), new_key()
    calls = setup.upstream.count
    first = client.chat.completions.with_raw_response.create(
        model="chat", messages=MESSAGES, extra_headers=key
    )
    again = client.chat.completions.with_raw_response.create(
        model="chat", messages=MESSAGES, extra_headers=key
    )
    assert setup.upstream.count == calls + 1
    assert again.http_response.content == first.http_response.content
    assert again.parse().choices[0].message.content == ANSWER
    original = first.headers["x-gw-request-id"]
    assert "x-gw-idempotent-replay" not in first.headers
    assert again.headers["x-gw-idempotent-replay"] == "true"
    assert again.headers["x-gw-replay-of"] == original
    assert again.headers["x-gw-request-id"] != original
    assert again.headers["x-gw-route"] == first.headers["x-gw-route"] == "up/gpt-i"
    # The replay is traced as one, with no usage or cost: the budget is charged once.
    setup.gw.wait_for_trace(again.headers["x-gw-request-id"])
    explained = setup.gw.cli_json("explain", again.headers["x-gw-request-id"], "--json")
    assert explained["replay_of"] == original
    assert explained["usage"] is None
    assert explained["cost_usd"] is None
    assert explained["attempts"] == []
    assert setup.gw.cli_json("explain", original, "--json")["cost_usd"] > 0


def test_the_anthropic_sdk_gets_the_same_message_again(setup: Setup) -> None:
    client = anthropic.Anthropic(base_url=setup.gw.url, api_key=setup.key_a, max_retries=0)
    key, calls = new_key(), setup.upstream.count
    answers = [
        client.messages.with_raw_response.create(
            model="chat", max_tokens=64, messages=MESSAGES, extra_headers=key
        )
        for _ in range(2)
    ]
    assert setup.upstream.count == calls + 1
    assert answers[1].http_response.content == answers[0].http_response.content
    assert answers[1].parse().id == answers[0].parse().id
    assert answers[1].headers["x-gw-idempotent-replay"] == "true"


def test_a_duplicate_while_the_first_runs_gets_409(setup: Setup) -> None:
    client, key = setup.openai(), new_key()
    calls = setup.upstream.count
    hold = threading.Event()
    setup.upstream.enqueue(Behavior(text=ANSWER, hold=hold))
    with ThreadPoolExecutor(1) as pool:
        first = pool.submit(
            client.chat.completions.with_raw_response.create,
            model="chat",
            messages=MESSAGES,
            extra_headers=key,
        )
        wait_until(lambda: setup.upstream.count == calls + 1, "the first call upstream")
        with pytest.raises(openai.ConflictError) as conflict:
            client.chat.completions.create(model="chat", messages=MESSAGES, extra_headers=key)
        hold.set()
        answered = first.result()
    assert conflict.value.code == "idempotency_key_in_use"
    assert conflict.value.response.headers["retry-after"] == "1"
    after = client.chat.completions.with_raw_response.create(
        model="chat", messages=MESSAGES, extra_headers=key
    )
    assert after.headers["x-gw-replay-of"] == answered.headers["x-gw-request-id"]
    assert setup.upstream.count == calls + 1


def test_the_key_with_another_body_gets_422(setup: Setup) -> None:
    client, key = setup.openai(), new_key()
    client.chat.completions.create(model="chat", messages=MESSAGES, extra_headers=key)
    calls = setup.upstream.count
    with pytest.raises(openai.UnprocessableEntityError) as reused:
        client.chat.completions.create(
            model="chat", messages=[{"role": "user", "content": "other"}], extra_headers=key
        )
    assert reused.value.code == "idempotency_key_reused"
    assert setup.upstream.count == calls


def test_another_api_keys_same_key_is_its_own(setup: Setup) -> None:
    key, calls = new_key(), setup.upstream.count
    setup.openai(setup.key_a).chat.completions.create(
        model="chat", messages=MESSAGES, extra_headers=key
    )
    other = setup.openai(setup.key_b).chat.completions.with_raw_response.create(
        model="chat", messages=MESSAGES, extra_headers=key
    )
    assert "x-gw-idempotent-replay" not in other.headers
    assert setup.upstream.count == calls + 2


def test_a_failed_answer_is_not_held(setup: Setup) -> None:
    client, key = setup.openai(), new_key()
    calls = setup.upstream.count
    setup.upstream.enqueue(Behavior(status=500))
    with pytest.raises(openai.InternalServerError):
        client.chat.completions.create(model="chat", messages=MESSAGES, extra_headers=key)
    retried = client.chat.completions.with_raw_response.create(
        model="chat", messages=MESSAGES, extra_headers=key
    )
    assert retried.parse().choices[0].message.content == ANSWER
    assert "x-gw-idempotent-replay" not in retried.headers
    assert setup.upstream.count == calls + 2


def test_embeddings_and_gemini_are_replayed_too(setup: Setup) -> None:
    auth = {"authorization": f"Bearer {setup.key_a}"}
    gemini_auth = {"x-goog-api-key": setup.key_a}
    calls = setup.upstream.count
    with httpx.Client(base_url=setup.gw.url, timeout=30) as http:
        for path, body, headers in (
            ("/v1/embeddings", {"model": "embed", "input": "kettles"}, auth),
            (
                "/v1beta/models/chat:generateContent",
                {"contents": [{"role": "user", "parts": [{"text": "kettles"}]}]},
                gemini_auth,
            ),
        ):
            key = new_key()
            first = http.post(path, json=body, headers={**headers, **key})
            again = http.post(path, json=body, headers={**headers, **key})
            assert first.status_code == again.status_code == 200
            assert again.content == first.content
            assert again.headers["x-gw-idempotent-replay"] == "true"
    assert setup.upstream.count == calls + 2


def test_streams_and_malformed_keys_are_refused_before_any_call(setup: Setup) -> None:
    client, calls = setup.openai(), setup.upstream.count
    with pytest.raises(openai.BadRequestError) as streamed:
        client.chat.completions.create(
            model="chat", messages=MESSAGES, stream=True, extra_headers=new_key()
        )
    assert "non-streaming" in streamed.value.message
    for malformed in ('"unterminated', "", "a b", "x" * 256, '"a", "b"'):
        with pytest.raises(openai.BadRequestError) as refused:
            client.chat.completions.create(
                model="chat", messages=MESSAGES, extra_headers={"Idempotency-Key": malformed}
            )
        assert refused.value.param == "Idempotency-Key"
    assert setup.upstream.count == calls


def test_the_held_answer_is_nowhere_in_the_clear(setup: Setup) -> None:
    client, key = setup.openai(), new_key()
    marker = f"kettle-marker-{uuid.uuid4().hex}"
    setup.upstream.enqueue(Behavior(text=marker))
    first = client.chat.completions.with_raw_response.create(
        model="chat", messages=MESSAGES, extra_headers=key
    )
    again = client.chat.completions.with_raw_response.create(
        model="chat", messages=MESSAGES, extra_headers=key
    )
    assert again.parse().choices[0].message.content == marker
    request_id = again.headers["x-gw-request-id"]
    setup.gw.wait_for_trace(request_id)
    traces = setup.gw.cli("traces", "--limit", "50", "--json").stdout
    assert first.headers["x-gw-request-id"] in traces
    shown = [traces, setup.gw.cli("explain", request_id, "--json").stdout, setup.gw.log()]
    files = [p.read_bytes() for p in setup.gw.state_dir.rglob("*") if p.is_file()]
    assert any(b"idempotency_keys" in data for data in files)  # the table is there ...
    assert not any(marker in text for text in shown)
    assert not any(marker.encode() in data for data in files)  # ... sealed


def test_the_window_ends(tmp_path: Path) -> None:
    with FakeOpenAI() as upstream:
        upstream.default = Behavior(text=ANSWER)
        with server(tmp_path, upstream, "1s") as gw:
            http = httpx.Client(base_url=gw.url, timeout=30)
            auth = {"authorization": f"Bearer {ADMIN}", **new_key()}
            body = {"model": "chat", "messages": MESSAGES}
            assert http.post("/v1/chat/completions", json=body, headers=auth).status_code == 200

            def ran_again() -> bool:
                answer = http.post("/v1/chat/completions", json=body, headers=auth)
                assert answer.status_code == 200
                return "x-gw-idempotent-replay" not in answer.headers

            wait_until(ran_again, "the held answer to expire (server.idempotency_ttl: 1s)")
            http.close()
        assert upstream.count == 2


def test_an_answer_over_the_bound_is_sent_not_held(tmp_path: Path) -> None:
    with FakeOpenAI() as upstream:
        upstream.default = Behavior(text=ANSWER)
        with server(tmp_path, upstream, "5m", largest="64B") as gw:
            body = {"model": "chat", "messages": MESSAGES}
            auth = {"authorization": f"Bearer {ADMIN}", **new_key()}
            with httpx.Client(base_url=gw.url, timeout=30) as http:
                answers = [
                    http.post("/v1/chat/completions", json=body, headers=auth) for _ in range(2)
                ]
            assert [a.status_code for a in answers] == [200, 200]
            assert ANSWER in answers[0].text
            assert "x-gw-idempotent-replay" not in answers[1].headers
            assert "server.idempotency_max_answer_bytes" in gw.log()
        assert upstream.count == 2


def test_a_fleet_replays_across_gateways(tmp_path: Path) -> None:
    env = {
        "IDEM_ADMIN": ADMIN,
        "GW_VAULT_KEY": Identity.generate().secret_text(),  # one identity for the fleet
        "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
    }
    with FakeOpenAI() as upstream, fresh_database() as database:
        upstream.default = Behavior(text=ANSWER)
        config = tmp_path / "gw.yaml"
        config.write_text(CONFIG.format(up=upstream.base_url, ttl="5m", largest="1MiB"))
        env["GW_STATE_URL"] = database
        with running_fleet(tmp_path, config, 2, env=env) as fleet:
            clients = [
                openai.OpenAI(base_url=gw.base_url, api_key=ADMIN, max_retries=0) for gw in fleet
            ]
            key = new_key()
            first = clients[0].chat.completions.with_raw_response.create(
                model="chat", messages=MESSAGES, extra_headers=key
            )
            again = clients[1].chat.completions.with_raw_response.create(
                model="chat", messages=MESSAGES, extra_headers=key
            )
            assert again.http_response.content == first.http_response.content
            assert again.headers["x-gw-replay-of"] == first.headers["x-gw-request-id"]
            assert upstream.count == 1
            # A duplicate sent to the other gateway while the first runs: 409 there.
            hold, key = threading.Event(), new_key()
            upstream.enqueue(Behavior(text=ANSWER, hold=hold))
            with ThreadPoolExecutor(1) as pool:
                running = pool.submit(
                    clients[0].chat.completions.create,
                    model="chat",
                    messages=MESSAGES,
                    extra_headers=key,
                )
                wait_until(lambda: upstream.count == 2, "the first call upstream")
                with pytest.raises(openai.ConflictError):
                    clients[1].chat.completions.create(
                        model="chat", messages=MESSAGES, extra_headers=key
                    )
                hold.set()
                running.result()
            assert upstream.count == 2
