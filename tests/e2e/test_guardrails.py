"""Guardrails against a real gw in open mode, through the official openai, anthropic and
google-genai SDKs (chat, Responses, Messages, Gemini), whole and streamed, with a fake
OpenAI upstream.

Block rules refuse a prompt before any upstream call and an answer after it (a stream is
cut with the client's own error event before the matching text reaches it, even when the
match is split across chunks); mask rules replace PII before the upstream sees it and say
so in `x-gw-warning`; a model blocklist keeps a target from ever being called. Every
refusal is 400 `content_blocked` naming the rule, and the matched text appears in no
error body, trace, explain output, log or state file. A pattern that backtracks forever
fails closed at its timeout; a rule added by a reload applies without a restart.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest
from google import genai
from google.genai import errors, types

from e2e.gw_process import GwServer, run_cli
from e2e.waiting import wait_until
from fakes.openai_upstream import Behavior, FakeOpenAI

pytestmark = pytest.mark.e2e

SECRET_WORD = "zebra9"  # what the word rule refuses, both ways, in any case ...
SAID = "Zebra9"  # ... as the answers say it: the config holds the rule's words, not this
PROJECT = "Project Nightjar"  # a phrase of the same rule, in the config in lower case
CONFIG = """
providers:
  - {{name: up, kind: openai_compatible, base_url: "{upstream}"}}
  - {{name: spare, kind: openai_compatible, base_url: "{upstream}"}}
models:
  - {{provider: up, model: gpt-g, input_per_mtok: 1.0, output_per_mtok: 2.0}}
  - {{provider: spare, model: gpt-banned, input_per_mtok: 0.1, output_per_mtok: 0.2}}
routes:
  - {{name: chat, targets: [{{provider: up, model: gpt-g}}]}}
  - name: mixed
    targets:
      - {{provider: spare, model: gpt-banned, priority: 1}}
      - {{provider: up, model: gpt-g, priority: 2}}
  - {{name: banned, targets: [{{provider: spare, model: gpt-banned}}]}}
  - {{name: slow, targets: [{{provider: up, model: gpt-g}}]}}
guardrails:
  - {{name: secret-words, words: ["{secret}", "project nightjar"]}}
  - {{name: ticket-ids, patterns: ['TICKET-\\d{{6}}'], apply_to: [input]}}
  - {{name: pii, action: mask, pii: [email, phone, card, key], everywhere: true}}
  - {{name: no-banned-models, models: ["*banned*"]}}
  - {{name: backtracker, patterns: ['(a|aa)+$'], timeout: 20ms}}
policies:
  - name: guarded
    match: {{routes: ["*"]}}
    retry: {{max_attempts: 1}}
    guardrails: [secret-words, ticket-ids, no-banned-models]
  - name: slow-checks
    match: {{routes: [slow]}}
    guardrails: [backtracker]
"""


def write_config(path: Path, upstream: str) -> None:
    path.write_text(CONFIG.format(upstream=upstream, secret=SECRET_WORD))


@pytest.fixture
def gw(tmp_path: Path, primary: FakeOpenAI) -> Iterator[GwServer]:
    config = tmp_path / "gw.yaml"
    write_config(config, primary.base_url)
    with GwServer(tmp_path / "state", config) as server:
        yield server


def oa(gw: GwServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=gw.base_url, api_key="unused", max_retries=0)


def claude(gw: GwServer) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=gw.url, api_key="unused", max_retries=0)


def ask(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}]


def explain(gw: GwServer, request_id: str) -> dict[str, Any]:
    gw.wait_for_trace(request_id)
    return dict(gw.cli_json("explain", request_id))


def assert_nowhere(gw: GwServer, *texts: str, bodies: tuple[str, ...] = ()) -> None:
    """None of ``texts`` in the error bodies, the traces, the log or any state file
    (case-sensitive: the config, kept in the state's revisions, holds each rule's words
    in lower case)."""
    traces = gw.cli("traces", "--limit", "100", "--json").stdout
    places = {"traces": traces, "log": gw.log(), **{f"body {i}": b for i, b in enumerate(bodies)}}
    for path in gw.state_dir.rglob("*"):
        if path.is_file():
            places[str(path)] = path.read_bytes().decode("utf-8", "replace")
    for text in texts:
        for where, content in places.items():
            assert text not in content, f"{text!r} found in {where}"


def test_a_prompt_a_block_rule_matches_is_refused_before_any_upstream_call(
    gw: GwServer, primary: FakeOpenAI
) -> None:
    with pytest.raises(openai.BadRequestError) as refused:
        oa(gw).chat.completions.create(model="chat", messages=ask(f"tell me about {PROJECT}"))
    error = refused.value
    assert error.status_code == 400
    body = error.response.text
    assert error.code == "content_blocked"
    assert "guardrail 'secret-words'" in str(error.message)
    assert "policy guarded" in str(error.message)
    with pytest.raises(anthropic.BadRequestError) as streamed:  # the same, as a stream
        read_anthropic_stream(gw, ask("ref TICKET-123456 please"), [])
    anthropic_body = streamed.value.response.text
    assert json.loads(anthropic_body)["gw"]["code"] == "content_blocked"
    assert "guardrail 'ticket-ids'" in anthropic_body
    assert primary.requests == []  # no upstream call for either
    request_id = error.response.headers["x-gw-request-id"]
    shown = explain(gw, request_id)
    assert shown["error"]["code"] == "content_blocked"
    assert shown["attempts"] == []
    assert_nowhere(gw, PROJECT, "TICKET-123456", bodies=(body, anthropic_body))


def test_a_whole_answer_a_rule_matches_is_refused_and_its_usage_recorded(
    gw: GwServer, primary: FakeOpenAI
) -> None:
    primary.enqueue(Behavior(text=f"the code word is {SAID} today"))
    with pytest.raises(openai.BadRequestError) as refused:
        oa(gw).chat.completions.create(model="chat", messages=ask("what is the code word?"))
    assert refused.value.code == "content_blocked"
    assert "answer was blocked by guardrail 'secret-words'" in str(refused.value.message)
    assert len(primary.requests) == 1
    shown = explain(gw, refused.value.response.headers["x-gw-request-id"])
    assert shown["usage"]["output_tokens"] > 0  # the upstream was paid for it
    assert shown["cost_usd"] > 0
    # ticket-ids applies to the input only: an answer holding one goes through.
    primary.enqueue(Behavior(text="your ticket is TICKET-654321"))
    answer = oa(gw).chat.completions.create(model="chat", messages=ask("my ticket?"))
    assert answer.choices[0].message.content == "your ticket is TICKET-654321"
    assert_nowhere(gw, SAID, bodies=(refused.value.response.text,))


def read_openai_stream(gw: GwServer, seen: list[str]) -> None:
    stream = oa(gw).chat.completions.create(model="chat", messages=ask("go on"), stream=True)
    seen.extend(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)


def read_anthropic_stream(gw: GwServer, messages: list[dict[str, Any]], seen: list[str]) -> None:
    with claude(gw).messages.stream(model="chat", max_tokens=50, messages=messages) as stream:
        seen.extend(stream.text_stream)


def test_a_stream_is_cut_with_the_clients_error_event_before_a_match_reaches_it(
    gw: GwServer, primary: FakeOpenAI
) -> None:
    primary.enqueue(Behavior(text=f"alpha beta {SAID} gamma delta"))
    seen: list[str] = []
    with pytest.raises(openai.APIError) as cut:
        read_openai_stream(gw, seen)
    assert "".join(seen) == "alpha beta"
    assert "guardrail 'secret-words'" in str(cut.value.message)
    # Split across chunks ("Ze", "br", "a", "9 "): found when its last piece comes.
    primary.enqueue(Behavior(text=f"xx yy {SAID} zz", chunks=9))
    seen = []
    with pytest.raises(openai.APIError) as cut:
        read_openai_stream(gw, seen)
    assert "".join(seen) == "xx yy Zebra"  # all but the piece that completes it
    assert "guardrail 'secret-words'" in str(cut.value.message)
    # The Anthropic SDK gets an `event: error` and raises it.
    primary.enqueue(Behavior(text=f"one two {SAID} three"))
    seen = []
    with pytest.raises(anthropic.APIStatusError) as failed:
        read_anthropic_stream(gw, ask("go on"), seen)
    assert "".join(seen) == "one two"
    assert "guardrail 'secret-words'" in str(failed.value)
    traces = gw.cli_json("traces", "--limit", "3")
    assert [trace["error_code"] for trace in traces] == ["content_blocked"] * 3
    assert_nowhere(gw, SAID)


def test_responses_and_gemini_streams_are_cut_the_same_way(
    gw: GwServer, primary: FakeOpenAI
) -> None:
    primary.enqueue(Behavior(text=f"alpha beta {SAID} gamma"))
    events = list(oa(gw).responses.create(model="chat", input="go", stream=True))
    deltas = [e.delta for e in events if e.type == "response.output_text.delta"]
    assert "".join(deltas) == "alpha beta"
    error = next(e for e in events if e.type == "error")
    assert error.code == "content_blocked"
    assert "guardrail 'secret-words'" in error.message
    assert events[-1].type == "response.failed"
    primary.enqueue(Behavior(text=f"alpha beta {SAID} gamma"))
    options = types.HttpOptions(base_url=gw.url, retry_options=types.HttpRetryOptions(attempts=1))
    gemini = genai.Client(api_key="unused", http_options=options)
    got: list[str] = []
    stream = gemini.models.generate_content_stream(model="chat", contents="go")
    with pytest.raises(errors.APIError) as failed:
        got.extend(chunk.text or "" for chunk in stream)
    assert "".join(got) == "alpha beta"
    assert failed.value.details["gw"]["code"] == "content_blocked"
    assert_nowhere(gw, SAID)


PII = {
    "jane.doe@example.com": "[EMAIL]",
    "4111 1111 1111 1111": "[CARD]",
    "+1 415-555-0132": "[PHONE]",
    "sk-proj-Abcdefghijklmnopqrstuvwx1234": "[KEY]",
}


def test_pii_is_masked_before_the_upstream_sees_it_and_the_client_is_told(
    gw: GwServer, primary: FakeOpenAI
) -> None:
    prompt = "reach me at " + ", ".join(PII) + "; order 1234 5678 is not a card"
    raw = oa(gw).chat.completions.with_raw_response.create(model="chat", messages=ask(prompt))
    assert raw.parse().choices[0].message.content
    sent = primary.requests[-1].json["messages"][0]["content"]
    assert sent == ("reach me at " + ", ".join(PII.values()) + "; order 1234 5678 is not a card")
    warning = httpx.URL("?w=" + raw.headers["x-gw-warning"]).params["w"]
    assert "guardrail 'pii' masked 4 span(s) of the prompt" in warning
    assert "card 1, email 1, key 1, phone 1" in warning
    shown = explain(gw, raw.headers["x-gw-request-id"])
    assert any("masked 4 span(s)" in note for note in shown["decision"]["notes"])
    # The same rule masks the prompt of an Anthropic-format client, streamed.
    read_anthropic_stream(gw, ask("mail jane.doe@example.com"), [])
    assert primary.requests[-1].json["messages"][0]["content"] == "mail [EMAIL]"
    assert_nowhere(gw, *PII)


def test_a_blocklisted_model_is_never_called(gw: GwServer, primary: FakeOpenAI) -> None:
    raw = oa(gw).chat.completions.with_raw_response.create(model="mixed", messages=ask("hi"))
    assert raw.headers["x-gw-route"] == "up/gpt-g"
    assert [r.json["model"] for r in primary.requests] == ["gpt-g"]
    shown = explain(gw, raw.headers["x-gw-request-id"])
    rejected = {c["model"]: c for c in shown["decision"]["candidates"] if c.get("rejected")}
    assert rejected["gpt-banned"]["rejected"] == "blocked_model"
    assert "no-banned-models" in rejected["gpt-banned"]["detail"]
    for model in ("banned", "spare/gpt-banned"):
        with pytest.raises(openai.PermissionDeniedError) as refused:
            oa(gw).chat.completions.create(model=model, messages=ask("hi"))
        assert refused.value.code == "permission_denied"
        assert "guardrail 'no-banned-models'" in str(refused.value.message)
    assert len(primary.requests) == 1
    preview = gw.cli_json("route-preview", "--model", "mixed")
    assert preview["decision"]["chain"] == ["up/gpt-g"]


def test_a_pattern_that_backtracks_forever_fails_closed_at_its_timeout(
    gw: GwServer, primary: FakeOpenAI
) -> None:
    # (a|aa)+$ on 60 a's and a b takes longer than the universe; the rule has 20ms.
    with pytest.raises(openai.BadRequestError) as refused:
        oa(gw).chat.completions.create(model="slow", messages=ask("a" * 60 + "b"))
    assert refused.value.code == "content_blocked"
    assert "guardrail 'backtracker'" in str(refused.value.message)
    assert "fail closed" in str(refused.value.message)
    assert primary.requests == []
    answer = oa(gw).chat.completions.create(model="slow", messages=ask("hello"))
    assert answer.choices[0].message.content  # the server is fine, and so is a clean prompt


def test_a_rule_added_by_a_reload_applies_without_a_restart(
    gw: GwServer, primary: FakeOpenAI
) -> None:
    assert oa(gw).chat.completions.create(model="chat", messages=ask("say pelican"))
    assert gw.config is not None
    text = (
        gw.config.read_text()
        .replace("guardrails:\n", "guardrails:\n  - {name: birds, words: [pelican]}\n", 1)
        .replace("    guardrails: [secret-words,", "    guardrails: [birds, secret-words,", 1)
    )
    gw.config.write_text(text)

    def refused() -> bool:
        try:
            oa(gw).chat.completions.create(model="chat", messages=ask("say pelican"))
        except openai.BadRequestError as error:
            return "guardrail 'birds'" in str(error.message)
        return False

    wait_until(refused, "the reloaded rule to refuse the prompt")


@pytest.mark.parametrize(
    ("yaml", "said"),
    [
        (
            "guardrails: [{name: broken, patterns: ['(unclosed'], everywhere: true}]",
            "gw.yaml:1: guardrails[0].patterns[0]: not a valid regular expression",
        ),
        (
            "guardrails:\n  - {name: m, action: mask, words: [x], apply_to: [output],"
            " everywhere: true}",
            "guardrails[0].apply_to: mask applies to the input only",
        ),
        (
            "policies: [{name: p, guardrails: [missing]}]",
            "policies[0].guardrails[0]: unknown guardrail 'missing'",
        ),
        (
            "guardrails: [{name: idle, words: [x]}]",
            "guardrails[0]: rule 'idle' applies to no request",
        ),
    ],
)
def test_bad_rules_fail_at_load_with_the_file_the_field_and_the_reason(
    tmp_path: Path, yaml: str, said: str
) -> None:
    config = tmp_path / "gw.yaml"
    config.write_text(yaml + "\n")
    done = run_cli("config", "validate", str(config), check=False)
    assert done.returncode != 0
    assert said in done.stderr
