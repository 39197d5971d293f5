"""Each provider's own error shapes through a live gw: the gw code, and whether it falls back.

Routes put an Anthropic or a Gemini fake first and an OpenAI fake second, with one
attempt per target, so every fault either falls back (the backup answers) or ends the
request with the mapped code (the backup is never called).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest

from e2e.gw_process import GwServer
from fakes import anthropic_upstream, gemini_upstream
from fakes.anthropic_upstream import FakeAnthropic
from fakes.gemini_upstream import FakeGemini, google_error, invalid_key_body
from fakes.openai_upstream import DEFAULT_TEXT, FakeOpenAI

CONFIG = """
providers:
  - {{name: claude, kind: anthropic, base_url: "{anthropic}", api_key: env:GW_TEST_KEY}}
  - {{name: gem, kind: gemini, base_url: "{gemini}", api_key: env:GW_TEST_KEY}}
  - {{name: backup, kind: openai_compatible, base_url: "{backup}"}}
routes:
  - name: claude-first
    targets: [{{provider: claude, model: claude-sonnet-4-5, priority: 1}},
              {{provider: backup, model: gpt-b, priority: 2}}]
  - name: gemini-first
    targets: [{{provider: gem, model: gemini-2.5-flash, priority: 1}},
              {{provider: backup, model: gpt-b, priority: 2}}]
policies:
  - name: once
    match: {{routes: ["*"]}}
    retry: {{max_attempts: 1}}
# Each case scripts its own fault against one shared gw: a 401 or 429 must not lock the
# account for the cases after it (tests/e2e/test_accounts.py covers locks).
health: {{lock_accounts: false}}
"""
HELLO = [{"role": "user", "content": "hello"}]
CONTEXT_TOO_LONG = google_error(
    400,
    "INVALID_ARGUMENT",
    "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
)


@pytest.fixture(scope="module")
def fakes() -> Iterator[dict[str, Any]]:
    with FakeAnthropic() as claude, FakeGemini() as gem, FakeOpenAI() as backup:
        yield {"anthropic": claude, "gemini": gem, "backup": backup}


@pytest.fixture(scope="module")
def faults_gw(
    tmp_path_factory: pytest.TempPathFactory, fakes: dict[str, Any]
) -> Iterator[GwServer]:
    home = tmp_path_factory.mktemp("provider-faults")
    config = home / "gw.yaml"
    config.write_text(
        CONFIG.format(
            anthropic=fakes["anthropic"].base_url,
            gemini=fakes["gemini"].base_url,
            backup=fakes["backup"].base_url,
        )
    )
    with GwServer(home / "state", config, env={"GW_TEST_KEY": "k-test"}) as server:
        yield server


@pytest.fixture(autouse=True)
def _fresh(fakes: dict[str, Any]) -> None:
    for fake in fakes.values():
        fake.clear()


ANTHROPIC_FALLBACKS = [
    (anthropic_upstream.Behavior(status=529), "overloaded"),
    (anthropic_upstream.Behavior(status=429, headers={"retry-after": "3"}), "rate_limited"),
    (anthropic_upstream.Behavior(status=401), "upstream_auth_failed"),
    (anthropic_upstream.Behavior(status=500), "upstream_error"),
]


@pytest.mark.parametrize(("behavior", "code"), ANTHROPIC_FALLBACKS, ids=lambda v: str(v)[:40])
def test_anthropic_faults_fall_back(
    faults_gw: GwServer, fakes: dict[str, Any], behavior: Any, code: str
) -> None:
    fakes["anthropic"].enqueue(behavior)
    sdk = anthropic.Anthropic(base_url=faults_gw.url, api_key="x", max_retries=0)
    raw = sdk.messages.with_raw_response.create(model="claude-first", max_tokens=32, messages=HELLO)  # type: ignore[arg-type]
    assert raw.parse().content[0].text == DEFAULT_TEXT  # type: ignore[union-attr]
    assert raw.headers["x-gw-route"] == "backup/gpt-b"
    trace = faults_gw.wait_for_trace(raw.headers["x-gw-request-id"])
    assert [(a["outcome"], a["error_code"]) for a in trace["attempts"]] == [
        ("fell_back", code),
        ("answered", None),
    ]


def test_anthropic_prompt_too_long_is_the_clients_error_and_never_falls_back(
    faults_gw: GwServer, fakes: dict[str, Any]
) -> None:
    fakes["anthropic"].enqueue(
        anthropic_upstream.Behavior(status=400, error_message=anthropic_upstream.PROMPT_TOO_LONG)
    )
    sdk = anthropic.Anthropic(base_url=faults_gw.url, api_key="x", max_retries=0)
    with pytest.raises(anthropic.BadRequestError) as caught:
        sdk.messages.create(model="claude-first", max_tokens=32, messages=HELLO)  # type: ignore[arg-type]
    body: Any = caught.value.body
    assert body["gw"]["code"] == "context_length_exceeded"
    assert body["error"]["type"] == "invalid_request_error"
    assert fakes["backup"].count == 0


GEMINI_FALLBACKS = [
    (gemini_upstream.Behavior(status=429), "rate_limited"),
    (gemini_upstream.Behavior(status=503), "overloaded"),
    (gemini_upstream.Behavior(status=400, error_body=invalid_key_body()), "upstream_auth_failed"),
    (gemini_upstream.Behavior(status=500), "upstream_error"),
]


@pytest.mark.parametrize(("behavior", "code"), GEMINI_FALLBACKS, ids=lambda v: str(v)[:40])
def test_gemini_faults_fall_back(
    faults_gw: GwServer, fakes: dict[str, Any], behavior: Any, code: str
) -> None:
    fakes["gemini"].enqueue(behavior)
    sdk = openai.OpenAI(base_url=faults_gw.base_url, api_key="x", max_retries=0)
    raw = sdk.chat.completions.with_raw_response.create(model="gemini-first", messages=HELLO)  # type: ignore[arg-type]
    assert raw.parse().choices[0].message.content == DEFAULT_TEXT
    trace = faults_gw.wait_for_trace(raw.headers["x-gw-request-id"])
    assert [(a["outcome"], a["error_code"]) for a in trace["attempts"]] == [
        ("fell_back", code),
        ("answered", None),
    ]


@pytest.mark.parametrize(
    ("behavior", "code"),
    [
        (
            gemini_upstream.Behavior(status=400, error_body=CONTEXT_TOO_LONG),
            "context_length_exceeded",
        ),
        (gemini_upstream.Behavior(block_reason="SAFETY"), "content_blocked"),
    ],
    ids=["context", "safety"],
)
def test_gemini_request_faults_are_the_clients_and_never_fall_back(
    faults_gw: GwServer, fakes: dict[str, Any], behavior: Any, code: str
) -> None:
    fakes["gemini"].enqueue(behavior)
    sdk = openai.OpenAI(base_url=faults_gw.base_url, api_key="x", max_retries=0)
    with pytest.raises(openai.BadRequestError) as caught:
        sdk.chat.completions.create(model="gemini-first", messages=HELLO)  # type: ignore[arg-type]
    assert caught.value.code == code
    assert fakes["backup"].count == 0


def test_an_overload_mid_stream_ends_the_anthropic_stream_with_an_error_event(
    faults_gw: GwServer, fakes: dict[str, Any]
) -> None:
    behavior = anthropic_upstream.Behavior(text="one two three four", error_after_chunks=2)
    fakes["anthropic"].enqueue(behavior)
    sdk = anthropic.Anthropic(base_url=faults_gw.url, api_key="x", max_retries=0)

    def read_all() -> None:
        with sdk.messages.stream(model="claude-first", max_tokens=32, messages=HELLO) as stream:  # type: ignore[arg-type]
            for _ in stream.text_stream:
                pass

    with pytest.raises(anthropic.APIStatusError) as caught:
        read_all()
    assert "overloaded" in str(caught.value).lower()
    assert fakes["backup"].count == 0
