"""Streams to OpenAI-shaped upstreams always ask for usage, so stream usage is exact."""

from __future__ import annotations

import json

from gw.codecs.openai_chat import decode_chat_request, encode_upstream_request


def upstream_body(client_body: dict[str, object], *, stream: bool) -> dict[str, object]:
    request = decode_chat_request(json.dumps(client_body).encode())
    return json.loads(encode_upstream_request(request, model="gpt-4o-mini", stream=stream))  # type: ignore[no-any-return]


def test_a_stream_asks_for_usage_even_when_the_client_turned_it_off() -> None:
    client = {
        "model": "chat",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
        "stream_options": {"include_usage": False, "include_obfuscation": False},
    }
    body = upstream_body(client, stream=True)
    assert body["stream_options"] == {"include_usage": True, "include_obfuscation": False}


def test_a_stream_without_options_asks_for_usage() -> None:
    client = {"model": "chat", "messages": [{"role": "user", "content": "hi"}], "stream": True}
    assert upstream_body(client, stream=True)["stream_options"] == {"include_usage": True}


def test_a_whole_answer_sends_no_stream_options() -> None:
    client = {"model": "chat", "messages": [{"role": "user", "content": "hi"}]}
    assert "stream_options" not in upstream_body(client, stream=False)
