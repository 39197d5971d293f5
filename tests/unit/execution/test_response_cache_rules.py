"""The response cache's rules (gw/execution/response_cache.py, cache_use.py,
cache_replay.py): one key for the same question in either client format, other keys for
what changes an answer; max_tokens checked, not keyed; LRU, size and expiry bounds; the
client's headers; an answer told as a stream and gathered back whole."""

from __future__ import annotations

import json

import msgspec
import pytest

from gw.codecs.anthropic_messages.client_request import decode_messages_request
from gw.codecs.openai_chat.client_request import decode_chat_request
from gw.config.schema import PolicyCache, PolicyConfig
from gw.execution.cache_keys import cache_key
from gw.execution.cache_replay import StreamCollector, answer_events
from gw.execution.cache_use import cache_mode, may_serve, request_key
from gw.execution.response_cache import CachedAnswer, ResponseCache
from gw.execution.semantic_cache import Probe, question_and_frame, similarity, unit_vector
from gw.ir import (
    ChatRequest,
    ChatResponse,
    Finish,
    StreamStart,
    TextDelta,
    TextPart,
    ToolCall,
    ToolCallDelta,
    Usage,
    UserMessage,
)
from gw.routing.decision import RouteDecision, TargetRef

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
    big = CachedAnswer(**{**_fields(entry()), "size": 151})
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


def chat(*texts: str) -> ChatRequest:
    return ChatRequest(
        model="m", messages=tuple(UserMessage(content=(TextPart(text=t),)) for t in texts)
    )


def test_a_question_is_split_from_its_frame() -> None:
    split = question_and_frame(chat("earlier", "how many?"), "t")
    assert split is not None
    question, frame = split
    assert question == "how many?"
    assert frame == question_and_frame(chat("earlier", "something else"), "t")[1]  # type: ignore[index]
    assert frame != question_and_frame(chat("other", "how many?"), "t")[1]  # type: ignore[index]
    assert frame != question_and_frame(chat("earlier", "how many?"), "u")[1]  # type: ignore[index]
    assert question_and_frame(ChatRequest(model="m", messages=()), "t") is None


def probe(frame: str, *values: float) -> Probe:
    return Probe(frame=frame, vector=unit_vector(list(values)))


def test_the_most_similar_kept_question_of_the_same_frame_serves() -> None:
    assert similarity(unit_vector([1.0, 0.0]), unit_vector([1.0, 1.0])) == pytest.approx(
        0.7071, abs=1e-4
    )
    cache = ResponseCache(max_bytes=10_000, max_entry_bytes=1_000)
    close = CachedAnswer(
        **{**_fields(entry()), "probe": probe("f", 1.0, 0.1), "request_id": "close"}
    )
    far = CachedAnswer(**{**_fields(entry()), "probe": probe("f", 0.0, 1.0), "request_id": "far"})
    cache.put("a", far)
    cache.put("b", close)
    found = cache.similar(probe("f", 1.0, 0.0), threshold=0.9, now=0)
    assert found is not None
    assert found[0].request_id == "close"
    assert cache.similar(probe("f", 1.0, 0.0), threshold=0.999, now=0) is None
    assert cache.similar(probe("g", 1.0, 0.1), threshold=0.5, now=0) is None  # another frame
    assert cache.similar(probe("f", 1.0, 0.1), threshold=0.5, now=10.0) is None  # expired


def _fields(answer: CachedAnswer) -> dict[str, object]:
    return {name: getattr(answer, name) for name in CachedAnswer.__struct_fields__}


def test_an_answer_is_served_only_under_its_policy_and_from_a_target_routing_would_call() -> None:
    request = decode_chat_request(json.dumps(OPENAI).encode())
    on = PolicyCache(enabled=True)
    one, other = PolicyConfig(name="a", cache=on), PolicyConfig(name="b", cache=on)
    keys = {
        request_key(request, policy, endpoint="chat.completions", tenant="t", mode="use")
        for policy in (one, other)
    }
    assert len(keys) == 2
    kept = entry()  # answered by p/m
    chain = (TargetRef(provider="p", model="m"),)
    decision = RouteDecision(
        route="r", direct=False, policy="a", strategy="priority", chain=chain,
        candidates=(), estimated_input_tokens=1, max_output_tokens=None,
    )  # fmt: skip
    assert may_serve(kept, request, decision)
    moved = msgspec.structs.replace(decision, chain=(TargetRef(provider="q", model="m"),))
    assert not may_serve(kept, request, moved)  # p/m switched off, blocked, or hinted away


def test_a_stream_cut_inside_a_tool_call_is_kept_without_that_call() -> None:
    collector = StreamCollector()
    for event in (
        StreamStart(id="r", model="m"),
        ToolCallDelta(index=0, id="c", name="f", arguments='{"city": "Par'),
        Finish(reason="length"),
    ):
        collector.take(event)
    whole = collector.complete()
    assert whole is not None
    assert whole.tool_calls == ()
