"""Sticky sessions through a live gw (policies[].sticky): a conversation stays on the
target that first answered it, through a config reload that would now prefer the other
target, and moves when its target's breaker opens; the session key comes from each
client format's own field, and `gw explain` says what became of the session.

Two fake OpenAI upstreams under one weighted route; which one a session lands on first
is the weighted choice of its first request, so the test learns it, then steers the
other way.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from e2e.gw_process import GwServer
from e2e.waiting import wait_until
from fakes.openai_upstream import Behavior, FakeOpenAI

CONFIG = """
providers:
  - {{name: a, kind: openai_compatible, base_url: "{a}"}}
  - {{name: b, kind: openai_compatible, base_url: "{b}"}}
routes:
  - name: chat
    strategy: weighted
    targets:
      - {{provider: a, model: gpt-a, weight: {weight_a}}}
      - {{provider: b, model: gpt-b, weight: {weight_b}}}
policies:
  - name: sticky
    match: {{routes: ["*"]}}
    retry: {{max_attempts: 1}}
    sticky: {{enabled: true, ttl: 1h}}
health:
  degraded_after: 2
  unhealthy_after: 2
  error_rate: 1.0
  cooldown: 10m
  max_cooldown: 10m
"""
TARGETS = {"a": "a/gpt-a", "b": "b/gpt-b"}
HI = [{"role": "user", "content": "hi"}]


@pytest.fixture
def fakes() -> Iterator[dict[str, FakeOpenAI]]:
    with FakeOpenAI() as a, FakeOpenAI() as b:
        yield {"a": a, "b": b}


@pytest.fixture
def sticky_gw(tmp_path: Path, fakes: dict[str, FakeOpenAI]) -> Iterator[tuple[GwServer, Path]]:
    config = tmp_path / "gw.yaml"
    config.write_text(write_config(fakes, weight_a=1, weight_b=1))
    with GwServer(tmp_path / "state", config) as server:
        yield server, config


def write_config(fakes: dict[str, FakeOpenAI], *, weight_a: int, weight_b: int) -> str:
    return CONFIG.format(
        a=fakes["a"].base_url, b=fakes["b"].base_url, weight_a=weight_a, weight_b=weight_b
    )


def ask(gw: GwServer, *, session: str | None = None, provider: str | None = None) -> Any:
    headers = {}
    if session is not None:
        headers["x-gw-session-id"] = session
    if provider is not None:
        headers["x-gw-provider"] = provider
    with gw.client() as http:
        return http.post(
            "/v1/chat/completions",
            json={"model": "chat", "messages": HI},
            headers=headers,
            timeout=60,
        )


def notes(gw: GwServer, request_id: str) -> list[str]:
    return list(gw.cli_json("explain", request_id)["decision"]["notes"])


def live_revision(gw: GwServer) -> int:
    with gw.client() as http:
        return int(http.get("/readyz").json()["revision"])


def test_a_session_survives_a_reload_and_moves_off_an_unhealthy_target(
    sticky_gw: tuple[GwServer, Path], fakes: dict[str, FakeOpenAI]
) -> None:
    gw, config = sticky_gw
    first = ask(gw, session="conv-1")
    assert first.status_code == 200, first.text
    pinned = first.headers["x-gw-route"]
    pinned_provider = pinned.split("/")[0]
    other_provider = "b" if pinned_provider == "a" else "a"
    assert "sticky session (header): new, pinned to the target that answers" in notes(
        gw, first.headers["x-gw-request-id"]
    )
    for _ in range(4):  # weighted 1:1, yet every turn stays put
        again = ask(gw, session="conv-1")
        assert again.headers["x-gw-route"] == pinned
    assert f"sticky session (header): kept on {pinned} (account default)" in notes(
        gw, again.headers["x-gw-request-id"]
    )

    # A reload that weighs the other target 1000:1 keeps the session where it is.
    revision = live_revision(gw)
    weights = {f"weight_{pinned_provider}": 1, f"weight_{other_provider}": 1000}
    config.write_text(write_config(fakes, **weights))
    wait_until(lambda: live_revision(gw) > revision, lambda: f"the reload:\n{gw.log()}")
    after_reload = ask(gw, session="conv-1")
    assert after_reload.headers["x-gw-route"] == pinned
    assert int(after_reload.headers["x-gw-revision"]) > revision
    assert f"sticky session (header): kept on {pinned} (account default)" in notes(
        gw, after_reload.headers["x-gw-request-id"]
    )
    # Without a session, the new weights rule.
    assert ask(gw, session="conv-2").headers["x-gw-route"] == TARGETS[other_provider]

    # The pinned target fails twice (requests held to it by x-gw-provider): its breaker
    # opens, and the session moves to the other target, where it then stays.
    fakes[pinned_provider].enqueue(Behavior(status=500), Behavior(status=500))
    for _ in range(2):
        assert ask(gw, provider=pinned_provider).status_code == 502
    moved = ask(gw, session="conv-1")
    assert moved.status_code == 200, moved.text
    assert moved.headers["x-gw-route"] == TARGETS[other_provider]
    moved_notes = notes(gw, moved.headers["x-gw-request-id"])
    assert any(
        note.startswith(f"sticky session (header): moved from {pinned}: rejected by routing: "
                        "unhealthy")
        for note in moved_notes
    ), moved_notes  # fmt: skip
    calls = fakes[pinned_provider].count
    stayed = ask(gw, session="conv-1")
    assert stayed.headers["x-gw-route"] == TARGETS[other_provider]
    assert f"sticky session (header): kept on {TARGETS[other_provider]} (account default)" in (
        notes(gw, stayed.headers["x-gw-request-id"])
    )
    assert fakes[pinned_provider].count == calls


def test_each_client_format_names_its_session(
    sticky_gw: tuple[GwServer, Path], fakes: dict[str, FakeOpenAI]
) -> None:
    gw, _ = sticky_gw
    oai = openai.OpenAI(base_url=f"{gw.url}/v1", api_key="x", max_retries=0)
    ant = anthropic.Anthropic(base_url=gw.url, api_key="x", max_retries=0)

    def chat(**extra: Any) -> Any:
        return oai.chat.completions.with_raw_response.create(
            model="chat", messages=[{"role": "user", "content": "hi"}], **extra
        )

    answers = {
        "prompt_cache_key": chat(prompt_cache_key="conv-openai"),
        "user": chat(user="end-user-7"),
        "first_messages": chat(),
        "responses": oai.responses.with_raw_response.create(
            model="chat", input="hi", prompt_cache_key="conv-responses"
        ),
        "anthropic": ant.messages.with_raw_response.create(
            model="chat",
            max_tokens=64,
            messages=[{"role": "user", "content": "hi"}],
            metadata={"user_id": "end-user-9"},
        ),
    }
    sources = {
        "prompt_cache_key": "prompt_cache_key",
        "user": "user",
        "first_messages": "first_messages",
        "responses": "prompt_cache_key",
        "anthropic": "user",
    }
    for name, raw in answers.items():
        found = notes(gw, raw.headers["x-gw-request-id"])
        assert any(n.startswith(f"sticky session ({sources[name]}): ") for n in found), (
            name,
            found,
        )

    # The same opening again is the same session, kept where the first one was answered.
    again = chat()
    assert again.headers["x-gw-route"] == answers["first_messages"].headers["x-gw-route"]
    kept = notes(gw, again.headers["x-gw-request-id"])
    assert any(n.startswith("sticky session (first_messages): kept on ") for n in kept), kept

    # Nothing of the session keys is in the traces: only their digests are held.
    traces = gw.cli("traces", "--limit", "50", "--json").stdout
    for secret in ("conv-openai", "end-user-7", "conv-responses", "end-user-9"):
        assert secret not in traces
