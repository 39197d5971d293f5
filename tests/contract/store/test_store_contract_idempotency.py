"""The store contract: keys held for Idempotency-Key retries (schema version 13), the same
on both engines: one claim wins, a done key hands back its answer, an expired row (a
pending one a killed gw left, or an answer past its window) gives way, a failed request
lets its key go, and answers together stay within their bound."""

from __future__ import annotations

import asyncio

from store_targets import Target, run

from gw.store.idempotency_keys import HeldKey, StoredAnswer
from gw.store.port import StateStore

NOW = 1_800_000_000.0
SCOPE = "t:-/k:-"
KEY = "a" * 64
ANSWER = StoredAnswer(status=200, route="mock/m", media_type="application/json", answer=b"S" * 10)


async def claim(
    store: StateStore, request_id: str, *, now: float = NOW, key: str = KEY, scope: str = SCOPE
) -> HeldKey | None:
    return await store.idempotency_keys().claim(
        scope, key, fingerprint="fp-" + request_id[:1], request_id=request_id, now=now,
        until=now + 60,
    )  # fmt: skip


async def complete(
    store: StateStore, request_id: str, *, key: str = KEY, max_total: int = 1000
) -> bool:
    return await store.idempotency_keys().complete(
        SCOPE, key, request_id=request_id, stored=ANSWER, now=NOW, expires_at=NOW + 300,
        max_total=max_total,
    )  # fmt: skip


def test_one_claim_wins_and_the_answer_is_handed_back(target: Target) -> None:
    async def body(store: StateStore) -> list[object]:
        first = await claim(store, "a1")
        running = await claim(store, "b2")
        kept = await complete(store, "a1")
        done = await claim(store, "c3")
        other_scope = await claim(store, "d4", scope="t:team/k:key_2")
        return [first, running, kept, done, other_scope]

    first, running, kept, done, other_scope = run(target, body)
    assert first is None
    assert other_scope is None
    assert isinstance(running, HeldKey)
    assert (running.state, running.request_id, running.fingerprint) == ("pending", "a1", "fp-a")
    assert running.answer is None
    assert kept is True
    assert done == HeldKey(
        fingerprint="fp-a", request_id="a1", state="done", expires_at=NOW + 300, status=200,
        route="mock/m", media_type="application/json", answer=b"S" * 10,
    )  # fmt: skip


def test_claims_at_once_leave_exactly_one_holder(target: Target) -> None:
    async def body(store: StateStore) -> list[HeldKey | None]:
        return list(await asyncio.gather(*(claim(store, f"r{n}") for n in range(8))))

    results = run(target, body)
    assert results.count(None) == 1
    assert {held.request_id for held in results if held is not None} == {f"r{results.index(None)}"}


def test_an_expired_row_gives_way(target: Target) -> None:
    """A pending row a killed gw left, and an answer past its window, no longer hold."""

    async def body(store: StateStore) -> list[object]:
        await claim(store, "a1")  # pending until NOW + 60, then its gw died
        taken_over = await claim(store, "b2", now=NOW + 61)
        await complete(store, "b2")  # held until NOW + 300
        still = await claim(store, "c3", now=NOW + 299)
        after = await claim(store, "c3", now=NOW + 301)
        expired = await store.idempotency_keys().expire(now=NOW + 1000)
        return [taken_over, still, after, expired]

    taken_over, still, after, expired = run(target, body)
    assert taken_over is None
    assert isinstance(still, HeldKey)
    assert still.request_id == "b2"
    assert after is None
    assert expired == 1  # c3's pending row


def test_a_released_key_runs_again_and_only_its_holder_releases(target: Target) -> None:
    async def body(store: StateStore) -> list[object]:
        keys = store.idempotency_keys()
        await claim(store, "a1")
        await keys.release(SCOPE, KEY, request_id="zz")  # not the holder: nothing
        held = await claim(store, "b2")
        await keys.release(SCOPE, KEY, request_id="a1")
        again = await claim(store, "c3")
        late = await complete(store, "a1")  # a1 no longer holds the key
        return [held, again, late]

    held, again, late = run(target, body)
    assert isinstance(held, HeldKey)
    assert held.request_id == "a1"
    assert again is None
    assert late is False


def test_answers_together_stay_within_their_bound(target: Target) -> None:
    async def body(store: StateStore) -> list[object]:
        await claim(store, "a1", key="1" * 64)
        await claim(store, "b2", key="2" * 64)
        first = await complete(store, "a1", key="1" * 64, max_total=15)
        second = await complete(store, "b2", key="2" * 64, max_total=15)
        # The answer that did not fit left no pending row: a retry runs again.
        retry = await claim(store, "c3", key="2" * 64)
        return [first, second, retry]

    assert run(target, body) == [True, False, None]
