"""The store contract: the response cache's answers at rest (schema version 15), the same
on both engines: a row is kept and replaced by key, read back until it expires, listed
with its expiry and size, deleted by key, and expired rows go."""

from __future__ import annotations

from store_targets import Target, run

from gw.store.port import StateStore

NOW = 1_800_000_000.0


def test_answers_are_kept_read_back_replaced_and_expired(target: Target) -> None:
    async def body(store: StateStore) -> list[object]:
        rows = store.cached_answers()
        await rows.put_many([("k1", NOW + 60, b"sealed-1"), ("k2", NOW + 10, b"sealed-two")])
        await rows.put_many([("k1", NOW + 120, b"sealed-one")])  # replaced
        listed = sorted(await rows.keys(now=NOW))
        read = await rows.get("k1", now=NOW)
        gone_by_then = await rows.get("k2", now=NOW + 10)
        expired = await rows.expire(now=NOW + 10)
        await rows.delete(["k1"])
        left = await rows.keys(now=NOW)
        return [listed, read, gone_by_then, expired, left, await rows.get("nope", now=NOW)]

    listed, read, gone_by_then, expired, left, missing = run(target, body)
    assert listed == [("k1", NOW + 120, 10), ("k2", NOW + 10, 10)]
    assert read == b"sealed-one"
    assert gone_by_then is None
    assert expired == 1
    assert left == []
    assert missing is None
