"""The response cache's rules (gw/execution/response_cache.py, cache_use.py,
cache_replay.py): one key for the same question in either client format, other keys for
what changes an answer; max_tokens checked, not keyed; LRU, size and expiry bounds; the
client's headers; an answer told as a stream and gathered back whole."""

from __future__ import annotations

import json

import pytest

from gw.codecs.anthropic_messages.client_request import decode_messages_request
from gw.codecs.openai_chat.client_request import decode_chat_request
from gw.execution.cache_replay import StreamCollector, answer_events
from gw.execution.cache_use import cache_mode
from gw.execution.response_cache import CachedAnswer, ResponseCache, cache_key
from gw.ir import ChatResponse, TextDelta, ToolCall, Usage
from gw.routing.decision import TargetRef

OPENAI = {"model": "chat", "messages": [{"role": "system", "content": "be brief"},
                                        {"role": "user", "content": "hi"}]}  # fmt: skip
ANTHROPIC = {"model": "chat", "system": "be brief", "max_tokens": 64,
             "messages": [{"role": "user", "content": "hi"}]}  # fmt: skip


def openai_key(**extra: object) -> str:
    return cache_key(decode_chat_request(json.dumps(OPENAI | extra).encode()), "t")


def test_the_same_question_in_either_format_is_one_key() -> None:
    anthropic = decode_messages_request(
        json.dumps(ANTHROPIC | {"metadata": {"user_id": "u"}, "stream": True}).encode()
    )
    assert cache_key(anthropic, "t") == openai_key()
    assert openai_key(stream=True, max_tokens=5, user="x") == openai_key()
    cached = ANTHROPIC | {
        "system": [{"type": "text", "text": "be brief", "cache_control": {"type": "ephemeral"}}]
    }
    assert cache_key(decode_messages_request(json.dumps(cached).encode()), "t") == openai_key()


def test_what_changes_an_answer_changes_the_key() -> None:
    plain = openai_key()
    assert openai_key(temperature=0.5) != plain
    assert openai_key(model="other") != plain
    assert openai_key(service_tier="flex") != plain  # a format's own option is kept
    assert cache_key(decode_chat_request(json.dumps(OPENAI).encode()), "u") != plain


def entry(finish: str = "stop", max_tokens: int | None = 100, output: int = 30) -> CachedAnswer:
    response = ChatResponse(
        id="r", model="m", text="x", finish_reason=finish,  # type: ignore[arg-type]
        usage=Usage(input_tokens=5, output_tokens=output),
    )  # fmt: skip
    return CachedAnswer(
        response=response, request_id="req", target=TargetRef(provider="p", model="m"),
        expires_at=10.0, size=100, max_tokens=max_tokens, cost_usd=0.01,
    )  # fmt: skip


def test_max_tokens_is_checked_against_what_the_answer_used() -> None:
    finished = entry()
    assert finished.serves(None)
    assert finished.serves(30)
    assert finished.serves(100)
    assert not finished.serves(29)
    cut = entry(finish="length", max_tokens=30)
    assert cut.serves(30)
    assert not cut.serves(100)
    assert not cut.serves(None)


def test_entries_expire_and_the_least_recently_used_go_first() -> None:
    cache = ResponseCache(max_bytes=250, max_entry_bytes=150)
    assert cache.put("a", entry())
    assert cache.put("b", entry())
    assert cache.get("a", now=0) is not None  # a is now the most recent
    assert cache.put("c", entry())
    assert cache.get("b", now=0) is None  # evicted
    assert cache.get("a", now=0) is not None
    assert cache.get("c", now=0) is not None
    assert cache.get("a", now=10.0) is None  # expired
    assert cache.bytes == 100
    big = CachedAnswer(
        **{**{f: getattr(entry(), f) for f in CachedAnswer.__struct_fields__}, "size": 151}
    )
    assert not cache.put("d", big)
    cache.reconfigure(max_bytes=50, max_entry_bytes=50)
    assert len(cache) == 0


@pytest.mark.parametrize(
    ("headers", "mode"),
    [
        ({}, "use"),
        ({"cache-control": "no-store"}, "off"),
        ({"cache-control": "max-age=0, no-cache"}, "refresh"),
        ({"x-gw-cache": "off"}, "off"),
        ({"x-gw-cache": "refresh"}, "refresh"),
        ({"x-gw-cache": "refresh", "cache-control": "no-store"}, "off"),
    ],
)
def test_the_clients_headers_say_what_the_cache_may_do(headers: dict[str, str], mode: str) -> None:
    assert cache_mode(headers) == mode


def test_an_answer_streams_in_pieces_and_gathers_back_whole() -> None:
    response = ChatResponse(
        id="r", model="m", text="one two three four five six seven",
        tool_calls=(ToolCall(id="c1", name="f", arguments='{"a": "' + "x" * 70 + '"}'),),
        finish_reason="tool_calls", usage=Usage(input_tokens=3, output_tokens=9),
    )  # fmt: skip
    events = answer_events(response)
    assert len([e for e in events if isinstance(e, TextDelta)]) == 3
    collector = StreamCollector()
    for event in events:
        collector.take(event)
    assert collector.complete() == response
