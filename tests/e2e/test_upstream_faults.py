"""Injected upstream faults: what the client sees, what the trace says, and when gw fails over.

Route ``chat`` is primary/gpt-a then backup/gpt-b; policy ``fast`` allows 2 attempts per
target and 1.5 s per attempt; route ``strict`` fails over on rate_limited only.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import openai
import pytest

from e2e.gw_process import GwServer
from fakes.openai_upstream import DEFAULT_TEXT, Behavior, FakeOpenAI

HI = [{"role": "user", "content": "hi"}]


def ask(gw: GwServer, model: str = "chat", **extra: Any) -> httpx.Response:
    with gw.client() as http:
        return http.post("/v1/chat/completions", json={"model": model, "messages": HI, **extra})


def outcomes(trace: dict[str, Any]) -> list[tuple[str, str, str | None]]:
    return [(a["provider"], a["outcome"], a["error_code"]) for a in trace["attempts"]]


def test_500_is_retried_then_falls_back(
    gw: GwServer, primary: FakeOpenAI, backup: FakeOpenAI
) -> None:
    primary.enqueue(Behavior(status=500), Behavior(status=500))
    answer = ask(gw)
    assert answer.status_code == 200
    assert answer.headers["x-gw-route"] == "backup/gpt-b"
    assert answer.json()["choices"][0]["message"]["content"] == DEFAULT_TEXT
    assert (primary.count, backup.count) == (2, 1)
    trace = gw.wait_for_trace(answer.headers["x-gw-request-id"])
    assert outcomes(trace) == [
        ("primary", "retried", "upstream_error"),
        ("primary", "fell_back", "upstream_error"),
        ("backup", "answered", None),
    ]
    assert trace["attempts"][0]["upstream_status"] == 500
    assert trace["answered_by"] == {"provider": "backup", "model": "gpt-b"}


def test_429_retry_after_is_honoured_on_the_same_target(
    gw: GwServer, primary: FakeOpenAI, backup: FakeOpenAI
) -> None:
    primary.enqueue(Behavior(status=429, headers={"retry-after": "1"}))
    answer = ask(gw)
    assert answer.status_code == 200
    assert answer.headers["x-gw-route"] == "primary/gpt-a"
    assert (primary.count, backup.count) == (2, 0)
    trace = gw.wait_for_trace(answer.headers["x-gw-request-id"])
    assert outcomes(trace) == [
        ("primary", "retried", "rate_limited"),
        ("primary", "answered", None),
    ]
    assert trace["attempts"][0]["retry_after_s"] == 1
    assert trace["attempts"][1]["backoff_ms"] >= 1000


def test_429_with_a_long_retry_after_falls_back_at_once(
    gw: GwServer, primary: FakeOpenAI, backup: FakeOpenAI
) -> None:
    primary.enqueue(Behavior(status=429, headers={"retry-after": "120"}))
    answer = ask(gw)
    assert answer.status_code == 200
    assert (primary.count, backup.count) == (1, 1)
    trace = gw.wait_for_trace(answer.headers["x-gw-request-id"])
    assert outcomes(trace) == [
        ("primary", "fell_back", "rate_limited"),
        ("backup", "answered", None),
    ]


def test_429_on_the_last_target_reaches_the_client_with_retry_after(
    gw: GwServer, primary: FakeOpenAI
) -> None:
    primary.enqueue(Behavior(status=429, headers={"retry-after": "120"}))
    answer = ask(gw, model="solo")
    assert answer.status_code == 429
    body = answer.json()
    assert body["error"]["code"] == "rate_limited"
    assert body["gw"]["attempts"][0]["upstream_status"] == 429
    assert answer.headers["retry-after"] == "120"
    assert answer.headers["x-gw-route"] == "primary/gpt-a"
    assert answer.headers["x-gw-queue-ms"] == "0"  # admitted, then failed: it says so too


def test_delay_before_headers_beyond_the_attempt_budget_times_out_and_falls_back(
    gw: GwServer, primary: FakeOpenAI, backup: FakeOpenAI
) -> None:
    primary.enqueue(Behavior(delay_before_headers=5.0), Behavior(delay_before_headers=5.0))
    answer = ask(gw)
    assert answer.status_code == 200
    assert answer.headers["x-gw-route"] == "backup/gpt-b"
    trace = gw.wait_for_trace(answer.headers["x-gw-request-id"])
    assert outcomes(trace) == [
        ("primary", "retried", "upstream_timeout"),
        ("primary", "fell_back", "upstream_timeout"),
        ("backup", "answered", None),
    ]


def test_slow_first_chunk_of_a_stream_falls_back_before_anything_is_sent(
    gw: GwServer, primary: FakeOpenAI, backup: FakeOpenAI
) -> None:
    slow = Behavior(delay_before_first_chunk=5.0)
    primary.enqueue(slow, slow)
    client = openai.OpenAI(base_url=gw.base_url, api_key="x", max_retries=0)
    raw = client.chat.completions.with_raw_response.create(model="chat", messages=HI, stream=True)  # type: ignore[arg-type]
    text = "".join(c.choices[0].delta.content or "" for c in raw.parse() if c.choices)
    assert text == DEFAULT_TEXT
    assert raw.headers["x-gw-route"] == "backup/gpt-b"
    trace = gw.wait_for_trace(raw.headers["x-gw-request-id"])
    assert [a["outcome"] for a in trace["attempts"]] == ["retried", "fell_back", "answered"]
    assert trace["attempts"][0]["error_code"] == "upstream_timeout"
    assert trace["attempts"][2]["ttft_ms"] is not None


def test_connection_dropped_mid_stream_ends_with_an_error_event_and_no_second_answer(
    gw: GwServer, primary: FakeOpenAI, backup: FakeOpenAI
) -> None:
    primary.enqueue(Behavior(text="one two three four five six", drop_after_chunks=3))
    client = openai.OpenAI(base_url=gw.base_url, api_key="x", max_retries=0)
    raw = client.chat.completions.with_raw_response.create(model="chat", messages=HI, stream=True)  # type: ignore[arg-type]
    received: list[str] = []

    def consume() -> None:
        for chunk in raw.parse():
            if chunk.choices and chunk.choices[0].delta.content:
                received.append(chunk.choices[0].delta.content)

    with pytest.raises(openai.APIError) as caught:
        consume()
    assert "".join(received) == "one two three"
    assert "upstream" in str(caught.value)
    assert backup.count == 0
    trace = gw.wait_for_trace(raw.headers["x-gw-request-id"])
    assert outcomes(trace) == [("primary", "failed", "upstream_error")]
    assert trace["error"]["code"] == "upstream_error"


def test_malformed_body_is_an_upstream_error_and_falls_back(
    gw: GwServer, primary: FakeOpenAI, backup: FakeOpenAI
) -> None:
    # A malformed answer would come back the same on a retry: the next target answers.
    primary.enqueue(Behavior(malformed=True))
    answer = ask(gw)
    assert answer.status_code == 200
    assert answer.headers["x-gw-route"] == "backup/gpt-b"
    trace = gw.wait_for_trace(answer.headers["x-gw-request-id"])
    assert [a[1:] for a in outcomes(trace)] == [("fell_back", "upstream_error"), ("answered", None)]
    assert primary.count == 1


def test_malformed_stream_chunk_before_content_falls_back(
    gw: GwServer, primary: FakeOpenAI, backup: FakeOpenAI
) -> None:
    primary.enqueue(Behavior(malformed=True))
    answer = ask(gw, stream=True)
    assert answer.status_code == 200
    assert answer.headers["x-gw-route"] == "backup/gpt-b"
    assert "data: [DONE]" in answer.text
    assert primary.count == 1


def test_client_errors_never_fall_back(
    gw: GwServer, primary: FakeOpenAI, backup: FakeOpenAI
) -> None:
    primary.enqueue(Behavior(status=400))
    answer = ask(gw)
    assert answer.status_code == 400
    assert answer.json()["error"]["code"] == "invalid_request"
    assert (primary.count, backup.count) == (1, 0)


def test_on_error_codes_is_exhaustive(
    gw: GwServer, primary: FakeOpenAI, backup: FakeOpenAI
) -> None:
    primary.enqueue(Behavior(status=500))
    answer = ask(gw, model="strict")
    assert answer.status_code == 502
    body = answer.json()
    assert body["error"]["code"] == "upstream_error"
    assert body["gw"]["policy"] == "strict"
    assert [a["outcome"] for a in body["gw"]["attempts"]] == ["failed"]
    assert backup.count == 0

    primary.enqueue(Behavior(status=429))
    answer = ask(gw, model="strict")
    assert answer.status_code == 200
    assert answer.headers["x-gw-route"] == "backup/gpt-b"


def test_upstream_auth_failure_falls_back_and_is_blamed_on_the_upstream(
    gw: GwServer, primary: FakeOpenAI, backup: FakeOpenAI
) -> None:
    primary.enqueue(Behavior(status=401))
    answer = ask(gw)
    assert answer.status_code == 200
    trace = gw.wait_for_trace(answer.headers["x-gw-request-id"])
    first = trace["attempts"][0]
    assert (first["error_code"], first["outcome"], first["blame"]) == (
        "upstream_auth_failed",
        "fell_back",
        "upstream",
    )


def test_every_target_failing_reports_all_attempts(
    gw: GwServer, primary: FakeOpenAI, backup: FakeOpenAI
) -> None:
    primary.enqueue(Behavior(status=503), Behavior(status=503))
    backup.enqueue(Behavior(status=502), Behavior(status=502))
    answer = ask(gw)
    assert answer.status_code == 502
    body = answer.json()
    assert body["error"]["code"] == "upstream_error"
    assert body["gw"]["request_id"] == answer.headers["x-gw-request-id"]
    assert body["gw"]["route"] == "backup/gpt-b"
    assert [(a["provider"], a["outcome"]) for a in body["gw"]["attempts"]] == [
        ("primary", "retried"),
        ("primary", "fell_back"),
        ("backup", "retried"),
        ("backup", "failed"),
    ]
    secret = "sk-test-secret-0123"
    assert secret not in answer.text
    assert secret not in gw.cli("explain", answer.headers["x-gw-request-id"], "--json").stdout


def test_a_stream_that_goes_silent_after_the_commit_ends_with_an_error_event(
    gw: GwServer, primary: FakeOpenAI, backup: FakeOpenAI
) -> None:
    # The first word commits the stream; the next comes long after stream_idle (1.5 s).
    primary.enqueue(Behavior(text="one two", pause_after_chunks=(1, 5.0)))
    answer = ask(gw, model="solo", stream=True)
    assert answer.status_code == 200
    frames = [f.removeprefix("data: ") for f in answer.text.split("\n\n") if f]
    assert "[DONE]" not in frames
    error = json.loads(frames[-1])["error"]
    assert error["code"] == "upstream_timeout"
    assert "stream_idle" in error["message"]
    assert backup.count == 0
    trace = gw.wait_for_trace(answer.headers["x-gw-request-id"])
    assert outcomes(trace) == [("primary", "failed", "upstream_timeout")]


def test_a_provider_hint_pins_the_route_and_is_explained(
    gw: GwServer, primary: FakeOpenAI, backup: FakeOpenAI
) -> None:
    with gw.client() as http:
        answer = http.post(
            "/v1/chat/completions",
            json={"model": "chat", "messages": HI},
            headers={"x-gw-provider": "backup"},
        )
        bad = http.post(
            "/v1/chat/completions",
            json={"model": "chat", "messages": HI},
            headers={"x-gw-strategy": "fastest"},
        )
    assert answer.status_code == 200
    assert answer.headers["x-gw-route"] == "backup/gpt-b"
    assert primary.count == 0
    trace = gw.wait_for_trace(answer.headers["x-gw-request-id"])
    assert "x-gw-provider: only targets on backup" in trace["decision"]["notes"]
    assert bad.status_code == 400
    assert bad.json()["error"]["param"] == "x-gw-strategy"
