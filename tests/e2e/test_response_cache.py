"""The response cache against a real gw in keys mode, through the official openai and
anthropic SDKs, with a fake OpenAI upstream that counts its calls.

The same question asked in OpenAI format and then in Anthropic format is one entry,
served in the second format without an upstream call; a cached answer replayed as a
stream reads right in both SDKs; an answer that was streamed is kept too; `no-store`
and `no-cache` are honoured; a tenant never gets another tenant's entry; a hit costs
nothing and says so in `x-gw-cache`, explain and the usage ledger; nothing of the
content reaches a trace, the log or a state file.
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
from fakes.openai_upstream import Behavior, FakeOpenAI

pytestmark = pytest.mark.e2e

ADMIN = "gw-admin-response-cache-0123456789"
ANSWER = "Seventeen purple turnips make a fine stew, according to the recipe."
CONFIG = """
auth: {{mode: keys, admin_key: env:GW_ADMIN_KEY}}
providers:
  - {{name: up, kind: openai_compatible, base_url: "{upstream}"}}
models:
  - {{provider: up, model: gpt-c, input_per_mtok: 1.0, output_per_mtok: 2.0, capabilities: [tools]}}
  - {{provider: up, model: emb, input_per_mtok: 0.02, capabilities: [embeddings]}}
routes:
  - {{name: chat, targets: [{{provider: up, model: gpt-c}}]}}
  - {{name: uncached, targets: [{{provider: up, model: gpt-c}}]}}
  - {{name: faq, targets: [{{provider: up, model: gpt-c}}]}}
  - {{name: embed, targets: [{{provider: up, model: emb}}]}}
policies:
  - name: cached
    match: {{routes: [chat]}}
    cache: {{enabled: true, ttl: 10m}}
  - name: similar
    match: {{routes: [faq]}}
    cache: {{enabled: true, semantic: {{route: embed, threshold: 0.8}}}}
tenants: [{{name: team-a}}, {{name: team-b}}]
"""


@pytest.fixture
def keys(tmp_path: Path) -> dict[str, str]:
    config = tmp_path / "gw.yaml"
    config.write_text("tenants: [{name: team-a}, {name: team-b}]\n")
    made = {}
    for tenant in ("team-a", "team-b"):
        out = run_cli(
            "keys", "create", "--tenant", tenant, "--json",
            "--config", str(config), "--state-dir", str(tmp_path / "state"),
        )  # fmt: skip
        made[tenant] = json.loads(out.stdout)["key"]
    return made


@pytest.fixture
def gw(tmp_path: Path, keys: dict[str, str], primary: FakeOpenAI) -> Iterator[GwServer]:
    primary.default = Behavior(text=ANSWER, word_embeddings=True)
    config = tmp_path / "gw.yaml"
    config.write_text(CONFIG.format(upstream=primary.base_url))
    with GwServer(tmp_path / "state", config, env={"GW_ADMIN_KEY": ADMIN}) as server:
        yield server


def oa(gw: GwServer, key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=gw.base_url, api_key=key, max_retries=0)


def claude(gw: GwServer, key: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=gw.url, api_key=key, max_retries=0)


def ask(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}]


def test_a_question_asked_in_openai_format_is_served_from_cache_in_anthropic_format(
    gw: GwServer, keys: dict[str, str], primary: FakeOpenAI
) -> None:
    question = ask("How many turnips go in the stew?")
    first = oa(gw, keys["team-a"]).chat.completions.with_raw_response.create(
        model="chat", messages=question, max_tokens=200
    )
    assert first.headers["x-gw-cache"] == "miss"
    assert first.parse().choices[0].message.content == ANSWER
    assert primary.count == 1
    second = claude(gw, keys["team-a"]).messages.with_raw_response.create(
        model="chat", messages=question, max_tokens=200
    )
    assert primary.count == 1  # no upstream call
    assert second.headers["x-gw-cache"] == "hit"
    assert second.headers["x-gw-route"] == "-"
    message = second.parse()
    assert [block.text for block in message.content if block.type == "text"] == [ANSWER]
    assert message.stop_reason == "end_turn"
    hit = gw.wait_for_trace(second.headers["x-gw-request-id"])
    assert hit["cache"] == "hit"
    assert hit["cache_of"] == first.headers["x-gw-request-id"]
    assert hit["attempts"] == []
    assert hit["usage"]["source"] == "cache"
    assert hit["cost_usd"] in (None, 0, 0.0)
    assert any("response cache hit" in note for note in hit["decision"]["notes"])
    stored = gw.wait_for_trace(first.headers["x-gw-request-id"])
    assert any("answer kept for 600s" in note for note in stored["decision"]["notes"])
    # A smaller max_tokens the answer still fits is served; a route without the cache
    # is not.
    assert (
        oa(gw, keys["team-a"])
        .chat.completions.with_raw_response.create(model="chat", messages=question, max_tokens=100)
        .headers["x-gw-cache"]
        == "hit"
    )
    raw = oa(gw, keys["team-a"]).chat.completions.with_raw_response.create(
        model="uncached", messages=question
    )
    assert "x-gw-cache" not in raw.headers
    assert primary.count == 2
    with gw.client() as http:
        metrics = http.get("/metrics", headers={"authorization": f"Bearer {ADMIN}"}).text
    assert 'gw_cache_requests_total{outcome="hit",route="chat"} 2.0' in metrics
    assert 'gw_cache_requests_total{outcome="miss",route="chat"} 1.0' in metrics


def test_a_cached_answer_replays_as_a_stream_in_both_sdks_and_a_streamed_answer_is_kept(
    gw: GwServer, keys: dict[str, str], primary: FakeOpenAI
) -> None:
    key = keys["team-a"]
    question = ask("Tell me about the stew.")
    oa(gw, key).chat.completions.create(model="chat", messages=question)
    assert primary.count == 1
    stream = oa(gw, key).chat.completions.create(
        model="chat", messages=question, stream=True, stream_options={"include_usage": True}
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == ANSWER
    assert len([c for c in chunks if c.choices and c.choices[0].delta.content]) > 3
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    with claude(gw, key).messages.stream(model="chat", max_tokens=300, messages=question) as s:
        pieces = list(s.text_stream)
        final = s.get_final_message()
    assert "".join(pieces) == ANSWER
    assert final.stop_reason == "end_turn"
    assert primary.count == 1
    # An answer streamed from the upstream is kept, and served whole afterwards.
    other = ask("And the turnips?")
    with claude(gw, key).messages.stream(model="chat", max_tokens=300, messages=other) as s:
        assert "".join(s.text_stream) == ANSWER
    assert primary.count == 2
    raw = oa(gw, key).chat.completions.with_raw_response.create(model="chat", messages=other)
    assert raw.headers["x-gw-cache"] == "hit"
    assert raw.parse().choices[0].message.content == ANSWER
    assert primary.count == 2


def test_no_store_and_no_cache_are_honoured(
    gw: GwServer, keys: dict[str, str], primary: FakeOpenAI
) -> None:
    client = oa(gw, keys["team-a"])
    question = ask("A private question")
    raw = client.chat.completions.with_raw_response.create(
        model="chat", messages=question, extra_headers={"Cache-Control": "no-store"}
    )
    assert raw.headers["x-gw-cache"] == "bypass"
    raw = client.chat.completions.with_raw_response.create(model="chat", messages=question)
    assert raw.headers["x-gw-cache"] == "miss"  # the no-store answer was not kept
    assert primary.count == 2
    raw = client.chat.completions.with_raw_response.create(
        model="chat", messages=question, extra_headers={"x-gw-cache": "refresh"}
    )
    assert raw.headers["x-gw-cache"] == "bypass"  # asked anew ...
    assert primary.count == 3
    raw = client.chat.completions.with_raw_response.create(model="chat", messages=question)
    assert raw.headers["x-gw-cache"] == "hit"  # ... and kept
    assert primary.count == 3


def test_a_tenant_never_gets_another_tenants_entry_and_no_content_is_recorded(
    gw: GwServer, keys: dict[str, str], primary: FakeOpenAI
) -> None:
    question = ask("What is in team A's stew?")
    oa(gw, keys["team-a"]).chat.completions.create(model="chat", messages=question)
    raw = oa(gw, keys["team-b"]).chat.completions.with_raw_response.create(
        model="chat", messages=question
    )
    assert raw.headers["x-gw-cache"] == "miss"
    assert primary.count == 2
    raw = oa(gw, keys["team-a"]).chat.completions.with_raw_response.create(
        model="chat", messages=question
    )
    assert raw.headers["x-gw-cache"] == "hit"
    rows = gw.cli_json("usage", "--by", "tenant")
    team_a = next(row for row in rows if row["tenant"] == "team-a")
    assert team_a["requests"] == 2
    assert team_a["cost_usd"] == pytest.approx(
        next(r for r in rows if r["tenant"] == "team-b")["cost_usd"]
    )
    traces = gw.cli("traces", "--limit", "50", "--json").stdout
    places = {"traces": traces, "log": gw.log()}
    for path in gw.state_dir.rglob("*"):
        if path.is_file():
            places[str(path)] = path.read_bytes().decode("utf-8", "replace")
    for where, content in places.items():
        assert "turnips make" not in content, where
        assert "team A's stew" not in content, where


def chat_calls(upstream: FakeOpenAI) -> int:
    return sum(request.path.endswith("/chat/completions") for request in upstream.requests)


def test_a_similar_question_is_a_semantic_hit_and_a_different_one_a_miss(
    gw: GwServer, keys: dict[str, str], primary: FakeOpenAI
) -> None:
    """The fake embeds by words: the two turnip questions share 6 of their 7 words
    (similarity 6/7, about 0.857, above the 0.8 threshold); France shares one."""
    client = oa(gw, keys["team-a"])
    first = client.chat.completions.with_raw_response.create(
        model="faq", messages=ask("How many turnips go in the stew?")
    )
    assert first.headers["x-gw-cache"] == "miss"
    assert chat_calls(primary) == 1
    similar = client.chat.completions.with_raw_response.create(
        model="faq", messages=ask("How many turnips are in the stew?")
    )
    assert similar.headers["x-gw-cache"] == "hit"
    assert similar.parse().choices[0].message.content == ANSWER
    assert chat_calls(primary) == 1
    hit = gw.wait_for_trace(similar.headers["x-gw-request-id"])
    assert hit["cache_of"] == first.headers["x-gw-request-id"]
    note = next(n for n in hit["decision"]["notes"] if n.startswith("semantic cache hit"))
    assert "similarity 0.857 (threshold 0.8)" in note
    # Its question was embedded as a request of its own, traced and billed.
    embedded = gw.wait_for_trace(similar.headers["x-gw-request-id"] + "-q")
    assert embedded["endpoint"] == "embeddings"
    assert embedded["answered_by"] == {"provider": "up", "model": "emb"}
    different = client.chat.completions.with_raw_response.create(
        model="faq", messages=ask("What is the capital of France?")
    )
    assert different.headers["x-gw-cache"] == "miss"
    assert chat_calls(primary) == 2
    # The same wording with tools, or on another tenant, is another frame: a miss.
    tools = [{"type": "function", "function": {"name": "count", "parameters": {"type": "object"}}}]
    with_tools = client.chat.completions.with_raw_response.create(
        model="faq", messages=ask("How many turnips are in the stew?"), tools=tools
    )
    assert with_tools.headers["x-gw-cache"] == "miss"
    other = oa(gw, keys["team-b"]).chat.completions.with_raw_response.create(
        model="faq", messages=ask("How many turnips are in the stew?")
    )
    assert other.headers["x-gw-cache"] == "miss"
    assert chat_calls(primary) == 4


def test_a_kept_answer_is_sealed_at_rest_and_served_after_a_restart(
    tmp_path: Path, keys: dict[str, str], primary: FakeOpenAI
) -> None:
    primary.default = Behavior(text=ANSWER)
    config = tmp_path / "gw.yaml"
    config.write_text(CONFIG.format(upstream=primary.base_url))
    question = ask("Is the stew ready yet?")
    env = {"GW_ADMIN_KEY": ADMIN}
    with GwServer(tmp_path / "state", config, env=env) as gw:
        oa(gw, keys["team-a"]).chat.completions.create(model="chat", messages=question)
    assert primary.count == 1
    database = (tmp_path / "state" / "gw.db").read_bytes()
    assert b"turnips make" not in database  # sealed: the answer is not there in the clear
    with GwServer(tmp_path / "state", config, env=env) as gw:
        raw = oa(gw, keys["team-a"]).chat.completions.with_raw_response.create(
            model="chat", messages=question
        )
        assert raw.headers["x-gw-cache"] == "hit"
        assert raw.parse().choices[0].message.content == ANSWER
        assert primary.count == 1
        other = oa(gw, keys["team-b"]).chat.completions.with_raw_response.create(
            model="chat", messages=question
        )
        assert other.headers["x-gw-cache"] == "miss"  # still per tenant
