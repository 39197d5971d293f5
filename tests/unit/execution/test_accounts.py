"""Accounts per provider: the book's locks and selection, and the engine's two-level fallback."""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec
import pytest
from unit.execution.test_engine import Directory, FakeClock, ScriptedUpstream, answer

from gw.config import compile_snapshot, load_config
from gw.config.schema import HealthConfig
from gw.config.units import Duration
from gw.errors import RateLimitedError, UpstreamAuthFailedError, UpstreamError
from gw.execution.accounts import AccountBook
from gw.execution.attempt_log import AttemptLog
from gw.execution.engine import Engine
from gw.execution.execution_plan import ExecutionFailedError, ExecutionPlan
from gw.execution.gateway import Gateway
from gw.ir import ChatRequest, TextPart, UserMessage
from gw.routing.router import decide

CONFIG = """
providers:
  - name: a
    kind: openai_compatible
    base_url: http://127.0.0.1:1/v1
    api_key: env:A_DEFAULT
    account_selection: {selection}
    accounts:
      - {{name: one, api_key: env:A_ONE}}
      - {{name: two, base_url: "http://127.0.0.1:2/v1"}}
      - {{name: three, api_key: env:A_THREE, headers: {{x-org: three}}}}
  - {{name: b, kind: mock}}
routes:
  - name: r
    targets: [{{provider: a, model: m1, priority: 1}}, {{provider: b, model: m2, priority: 2}}]
policies:
  - name: p
    match: {{routes: [r]}}
    retry: {{max_attempts: {max_attempts}, initial_backoff: 100ms}}
"""


def snapshot(selection: str = "fill_first", *, max_attempts: int = 2) -> Any:
    text = CONFIG.format(selection=selection, max_attempts=max_attempts)
    config = load_config(text, "t.yaml")
    return compile_snapshot(config, revision=1, source="t")


def test_accounts_inherit_what_they_do_not_set() -> None:
    one, two, three = snapshot().accounts["a"]
    assert (one.name, one.provider.api_key, one.provider.base_url) == (
        "one", "env:A_ONE", "http://127.0.0.1:1/v1",
    )  # fmt: skip
    assert (two.provider.api_key, two.provider.base_url) == (
        "env:A_DEFAULT",
        "http://127.0.0.1:2/v1",
    )
    assert three.provider.headers == {"x-org": "three"}
    assert [a.name for a in snapshot().accounts["b"]] == ["default"]


def test_fill_first_keeps_order_and_skips_locked_accounts() -> None:
    snap = snapshot()
    book = AccountBook(HealthConfig())
    provider, accounts = snap.providers["a"], snap.accounts["a"]
    assert [a.name for a in book.order(provider, accounts, "m1", now=0)] == ["one", "two", "three"]
    lock = book.lock_after("a", "one", "m1", RateLimitedError("429", retry_after=7.0), now=0)
    assert lock is not None
    assert lock.until == 7.0
    assert [a.name for a in book.order(provider, accounts, "m1", now=1)] == ["two", "three"]
    # Locks are per model: another model of the same account is free.
    assert next(a.name for a in book.order(provider, accounts, "m9", now=1)) == "one"
    assert next(a.name for a in book.order(provider, accounts, "m1", now=7)) == "one"


def test_round_robin_rotates_the_first_account() -> None:
    snap = snapshot("round_robin")
    book = AccountBook(HealthConfig())
    provider, accounts = snap.providers["a"], snap.accounts["a"]
    firsts = [book.order(provider, accounts, "m1", now=0)[0].name for _ in range(4)]
    assert firsts == ["one", "two", "three", "one"]


def test_every_account_locked_tries_the_one_freed_first_and_flags_the_target() -> None:
    snap = snapshot()
    book = AccountBook(HealthConfig(rate_limit_cooldown=Duration(30)))
    provider, accounts = snap.providers["a"], snap.accounts["a"]
    book.lock_after("a", "one", "m1", RateLimitedError("429"), now=0)
    book.lock_after("a", "two", "m1", RateLimitedError("429", retry_after=5.0), now=0)
    assert book.fully_locked(snap.accounts, now=1) == {}
    book.lock_after("a", "three", "m1", UpstreamAuthFailedError("401"), now=0)
    assert [a.name for a in book.order(provider, accounts, "m1", now=1)] == ["two"]
    flagged = book.fully_locked(snap.accounts, now=1)
    assert list(flagged) == ["a/m1"]
    assert "every account is locked" in flagged["a/m1"]
    assert book.fully_locked(snap.accounts, now=6) == {}


def test_only_rate_limits_and_refused_credentials_lock() -> None:
    book = AccountBook(HealthConfig())
    assert book.lock_after("a", "one", "m1", UpstreamError("502"), now=0) is None
    auth = book.lock_after("a", "one", "m1", UpstreamAuthFailedError("401"), now=0)
    assert auth is not None
    assert auth.until == HealthConfig().auth_failure_cooldown.seconds
    off = AccountBook(HealthConfig(lock_accounts=False))
    assert off.lock_after("a", "one", "m1", RateLimitedError("429"), now=0) is None


def test_retry_after_is_capped_by_max_cooldown() -> None:
    book = AccountBook(HealthConfig(max_cooldown=Duration(60)))
    lock = book.lock_after("a", "one", "m1", RateLimitedError("429", retry_after=3600.0), now=0)
    assert lock is not None
    assert lock.until == 60


def run(
    a: list[Any], b: list[Any], book: AccountBook | None = None, *, max_attempts: int = 2
) -> Any:
    snap = snapshot(max_attempts=max_attempts)
    request = ChatRequest(model="r", messages=(UserMessage(content=(TextPart(text="hi"),)),))
    decision, policy = decide(request, snap, request_id="req_accounts")
    plan = ExecutionPlan(
        request_id="req_accounts", request=request, decision=decision, policy=policy,
        providers=snap.providers, accounts=snap.accounts,
    )  # fmt: skip
    upstreams = {"a": ScriptedUpstream(a), "b": ScriptedUpstream(b)}
    clock = FakeClock()
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    book = book or AccountBook(HealthConfig())
    engine = Engine(Directory(upstreams), clock, sleep, accounts=book)

    async def go() -> Any:
        return await engine.complete(plan, AttemptLog(clock))

    return asyncio.run(go()), upstreams, slept, book


def test_a_rate_limited_account_hands_over_to_the_next_before_the_next_target() -> None:
    result, upstreams, slept, book = run([RateLimitedError("429", retry_after=2.0), answer()], [])
    assert [(a.provider, a.account, a.outcome) for a in result.attempts] == [
        ("a", "one", "next_account"), ("a", "two", "answered"),
    ]  # fmt: skip
    assert slept == []  # another account needs no wait
    calls = upstreams["a"].calls
    assert [c.account for c in calls] == ["one", "two"]
    assert calls[1].provider.base_url == "http://127.0.0.1:2/v1"  # handed the account's endpoint
    assert [lock.account for lock in book.locks(now=1000.5)] == ["one"]


def test_rotating_accounts_does_not_spend_max_attempts() -> None:
    """DESIGN: rotation within a provider comes before fallback and does not spend the
    retry budget; with every account rate limited the next target takes over."""
    limited = [RateLimitedError("429") for _ in range(4)]
    result, upstreams, _, _ = run(limited, [answer("b")])
    assert [(a.account, a.outcome) for a in result.attempts] == [
        ("one", "next_account"), ("two", "next_account"),
        ("three", "retried"), ("three", "fell_back"),  # max_attempts: 2 on the last account
        ("default", "answered"),
    ]  # fmt: skip
    assert len(upstreams["a"].calls) == 4


def test_one_attempt_per_target_still_rotates_accounts() -> None:
    """With ``retry.max_attempts: 1`` a rate-limited account hands over to the next one
    (the outside run found gw fell through to the next target instead)."""
    result, upstreams, _, _ = run([RateLimitedError("429"), answer()], [], max_attempts=1)
    assert [(a.provider, a.account, a.outcome) for a in result.attempts] == [
        ("a", "one", "next_account"), ("a", "two", "answered"),
    ]  # fmt: skip
    assert upstreams["b"].calls == []


def test_a_server_error_retries_the_same_account_and_does_not_lock() -> None:
    result, _upstreams, slept, book = run([UpstreamError("502"), answer()], [])
    assert [(a.account, a.outcome) for a in result.attempts] == [
        ("one", "retried"), ("one", "answered"),
    ]  # fmt: skip
    assert len(slept) == 1
    assert book.locks(now=1000) == []


def test_calls_to_one_target_stay_bounded() -> None:
    """Retries count on every account; a rotation adds at most one call per account."""
    steps = [UpstreamError("502"), RateLimitedError("429"), UpstreamError("502")] + [
        UpstreamError("502") for _ in range(3)
    ]
    with pytest.raises(ExecutionFailedError) as failed:
        run(steps, [UpstreamError("b"), UpstreamError("b"), answer()])
    assert [(a.provider, a.account, a.outcome) for a in failed.value.attempts] == [
        ("a", "one", "retried"), ("a", "one", "next_account"), ("a", "two", "fell_back"),
        ("b", "default", "retried"), ("b", "default", "failed"),
    ]  # fmt: skip


def test_an_answer_unlocks_the_account_and_a_gateway_side_auth_error_locks_nothing() -> None:
    book = AccountBook(HealthConfig())
    for name, wait in (("one", 5.0), ("two", 10.0), ("three", 10.0)):
        book.lock_after("a", name, "m1", RateLimitedError("429", retry_after=wait), now=1000)
    # Every account is locked: the one freed soonest is tried anyway, and answers.
    result, *_ = run([answer()], [], book=book)
    assert [(a.account, a.outcome) for a in result.attempts] == [("one", "answered")]
    assert [lock.account for lock in book.locks(now=1000)] == ["two", "three"]
    unset_env = UpstreamAuthFailedError("env:A_ONE is not set", blame="gateway")
    assert book.lock_after("a", "one", "m1", unset_env, now=0) is None


def test_a_longer_lock_is_not_shortened() -> None:
    book = AccountBook(HealthConfig(auth_failure_cooldown=Duration(300)))
    book.lock_after("a", "one", "m1", UpstreamAuthFailedError("401"), now=0)
    lock = book.lock_after("a", "one", "m1", RateLimitedError("429", retry_after=1.0), now=0)
    assert lock is not None
    assert lock.until == 300


def test_the_gateway_routes_around_a_fully_locked_target() -> None:
    snap = snapshot()
    book = AccountBook(HealthConfig())
    for name in ("one", "two", "three"):
        book.lock_after("a", name, "m1", RateLimitedError("429"), now=1000)
    clock = FakeClock()
    gateway = Gateway(Engine(Directory({}), clock, asyncio.sleep), _Traces(), clock, accounts=book)
    view = gateway._health_view(snap)
    assert view["a/m1"].status == "unhealthy"
    request = ChatRequest(model="r", messages=(UserMessage(content=(TextPart(text="hi"),)),))
    decision, _ = decide(request, snap, request_id="req_x", health=view)
    assert [t.key for t in decision.chain] == ["b/m2"]
    rejected = {f"{c.provider}/{c.model}": c.rejected for c in decision.candidates if c.rejected}
    assert rejected == {"a/m1": "unhealthy"}


class _Traces:
    def submit(self, trace: Any) -> None:
        del trace


def test_the_locked_account_is_named_in_the_trace_copy() -> None:
    result, *_ = run([RateLimitedError("429"), answer()], [])
    encoded = msgspec.json.encode(result.attempts)
    assert b'"next_account"' in encoded
