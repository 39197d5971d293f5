"""Sticky sessions' keys, pins and account preference (gw/execution/sticky_sessions.py)."""

from __future__ import annotations

import asyncio
import re

from unit.execution.test_accounts import snapshot
from unit.execution.test_engine import FakeClock

from gw.config import compile_snapshot, load_config
from gw.execution.accounts import AccountPin, preferred_first
from gw.execution.request_context import RequestContext
from gw.execution.sticky_sessions import (
    LocalSessionPins,
    SessionTicket,
    StickySessions,
    session_key,
)
from gw.ir import ChatRequest, EmbeddingRequest, SystemMessage, TextPart, UserMessage
from gw.record import AttemptRecord
from gw.routing import decide
from gw.routing.decision import TargetRef
from gw.routing.hints import RoutingHints
from gw.routing.sticky import SessionPin

CONFIG = """
providers:
  - {name: a, kind: openai}
  - {name: b, kind: openai}
routes:
  - name: chat
    strategy: weighted
    targets:
      - {provider: a, model: m-a, weight: 1}
      - {provider: b, model: m-b, weight: 1}
policies:
  - {name: sticky, match: {routes: ["*"]}, sticky: {enabled: true, ttl: 10m}}
"""
SNAPSHOT = compile_snapshot(load_config(CONFIG, "t.yaml"), revision=1, source="t")
SYSTEM = SystemMessage(content=(TextPart(text="be brief"),))


def chat(text: str = "hi", **fields: object) -> ChatRequest:
    user = UserMessage(content=(TextPart(text=text),))
    return ChatRequest(model="chat", messages=(SYSTEM, user), **fields)  # type: ignore[arg-type]


def test_the_first_source_present_names_the_session() -> None:
    sources = ("header", "prompt_cache_key", "user", "first_messages")
    request = chat(user="u1", extensions={"openai": {"prompt_cache_key": "pk"}})
    assert session_key(request, RoutingHints(session="s1"), sources) == ("header", b"s1")
    assert session_key(request, None, sources) == ("prompt_cache_key", b"pk")
    assert session_key(chat(user="u1"), None, sources) == ("user", b"u1")
    safety = chat(extensions={"openai_responses": {"safety_identifier": "si"}})
    assert session_key(safety, None, sources) == ("user", b"si")
    found = session_key(chat(), None, sources)
    assert found is not None
    assert found[0] == "first_messages"
    # Later turns of one conversation have the same opening, so the same key.
    assert session_key(chat(), None, ("first_messages",)) == found
    assert session_key(chat("another"), None, ("first_messages",)) != found
    assert session_key(chat(user="u1"), None, ("header",)) is None
    embedding = EmbeddingRequest(model="chat", inputs=("x",))
    assert session_key(embedding, RoutingHints(session="s"), sources) is None


def test_only_a_keyed_digest_is_held_scoped_by_tenant() -> None:
    clock = FakeClock()
    pins = LocalSessionPins(clock)
    sticky = StickySessions(pins, lambda: b"k" * 32)
    policy = SNAPSHOT.config.policies[0]

    async def steer(tenant: str | None) -> SessionTicket:
        ctx = RequestContext(
            request_id="req_1", snapshot=SNAPSHOT, endpoint="chat", started_at=0.0,
            started_mono=0.0, tenant=tenant, hints=RoutingHints(session="secret-conv"),
        )  # fmt: skip
        decision, _ = decide(chat(), SNAPSHOT, request_id="req_1")
        _, ticket = await sticky.steer(ctx, chat(), decision, policy, {})
        assert ticket is not None
        return ticket

    one, other = asyncio.run(steer("t1")), asyncio.run(steer("t2"))
    assert re.fullmatch(r"[0-9a-f]{64}", one.key)
    assert "secret-conv" not in one.key
    assert one.key != other.key
    assert one.ttl == 600.0


def test_pins_expire_and_the_least_recently_used_go_first() -> None:
    clock = FakeClock()
    pins = LocalSessionPins(clock, max_sessions=2)
    pin = SessionPin(provider="a", model="m")

    def get(key: str) -> SessionPin | None:
        return asyncio.run(pins.get(key))

    pins.put("k1", pin, ttl=10)
    pins.put("k2", pin, ttl=10)
    assert get("k1") == pin  # k1 now the most recently used
    pins.put("k3", pin, ttl=10)
    assert (get("k1"), get("k2"), get("k3")) == (pin, None, pin)
    clock.now += 10
    assert get("k1") is None
    assert len(pins) == 1


def test_remember_pins_the_answering_target_and_its_account() -> None:
    clock = FakeClock()
    pins = LocalSessionPins(clock)
    sticky = StickySessions(pins)
    attempt = AttemptRecord(
        number=1, provider="b", model="m-b", account="k2", started_at=0.0, latency_ms=1.0,
        ttft_ms=None, outcome="answered",
    )  # fmt: skip
    sticky.remember(SessionTicket(key="d", ttl=5), TargetRef(provider="b", model="m-b"), [attempt])
    pinned = asyncio.run(pins.get("d"))
    assert pinned == SessionPin(provider="b", model="m-b", account="k2")
    kept = SessionTicket(key="d", ttl=5, kept=pinned)
    assert kept.prefer == AccountPin(provider="b", account="k2")
    assert SessionTicket(key="d", ttl=5).prefer is None


def test_a_preferred_account_goes_first_unless_locked_out() -> None:
    accounts = list(snapshot().accounts["a"])  # one, two, three
    prefer = AccountPin(provider="a", account="three")
    assert [a.name for a in preferred_first(accounts, prefer, "a")] == ["three", "one", "two"]
    assert [a.name for a in preferred_first(accounts[:2], prefer, "a")] == ["one", "two"]
    assert preferred_first(accounts, prefer, "b") == accounts
