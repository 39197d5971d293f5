"""Streams as the wire sees them: SSE framing, headers at commit, and a client hanging up."""

from __future__ import annotations

import json

from e2e.gw_process import GwServer


def test_sse_frames_are_well_formed_and_end_with_done(gw: GwServer) -> None:
    payload = {
        "model": "mock",
        "messages": [{"role": "user", "content": "stream please"}],
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    with gw.client() as http:
        answer = http.post("/v1/chat/completions", json=payload)
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/event-stream")
    assert answer.headers["x-gw-route"] == "mock/mock-1"
    assert answer.headers["x-gw-queue-ms"] == "0"
    frames = [f for f in answer.text.split("\n\n") if f]
    assert all(f.startswith("data: ") for f in frames)
    assert frames[-1] == "data: [DONE]"
    chunks = [json.loads(f.removeprefix("data: ")) for f in frames[:-1]]
    assert {c["object"] for c in chunks} == {"chat.completion.chunk"}
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    assert chunks[-1]["choices"] == []
    assert chunks[-1]["usage"]["completion_tokens"] > 0
    assert all(c["usage"] is None for c in chunks[:-1])


def test_client_hanging_up_mid_stream_is_traced_as_client_aborted(gw: GwServer) -> None:
    payload = {"model": "slow", "messages": [{"role": "user", "content": "long"}], "stream": True}
    with gw.client() as http, http.stream("POST", "/v1/chat/completions", json=payload) as answer:
        request_id = answer.headers["x-gw-request-id"]
        lines = answer.iter_lines()
        first = next(line for line in lines if line.startswith("data: "))
        assert json.loads(first.removeprefix("data: "))["object"] == "chat.completion.chunk"
    trace = gw.wait_for_trace(request_id)
    assert trace["status"] == 499
    assert trace["error"]["code"] == "client_aborted"
    assert [a["outcome"] for a in trace["attempts"]] == ["aborted"]
    assert trace["usage"]["source"] == "estimate"
