"""The store contract: API keys, on every engine."""

from __future__ import annotations

from store_targets import Target, run

from gw.store.api_keys import new_key
from gw.store.port import StateStore

NOW = 1_800_000_000.0


def test_a_key_is_found_by_its_digest_listed_and_revoked_once(target: Target) -> None:
    made = new_key(tenant="team-a", created_at=NOW, name="app", models=("chat",))
    other = new_key(tenant="team-b", created_at=NOW + 1, allowed_ips=("10.0.0.0/8",))

    async def body(store: StateStore) -> None:
        assert await store.count_active_keys(now=NOW) == 0
        await store.create_key(made.key)
        await store.create_key(other.key)
        assert await store.find_key_by_digest(made.key.digest) == made.key
        assert await store.find_key_by_digest("0" * 64) is None
        assert [k.id for k in await store.list_keys()] == [made.key.id, other.key.id]
        assert await store.count_active_keys(now=NOW + 2) == 2
        revoked = await store.revoke_key(made.key.id, time=NOW + 10)
        assert revoked is not None
        assert revoked.revoked_at == NOW + 10
        again = await store.revoke_key(made.key.id, time=NOW + 20)
        assert again is not None
        assert again.revoked_at == NOW + 10
        assert await store.revoke_key("key_missing", time=NOW) is None
        assert await store.count_active_keys(now=NOW + 30) == 1
        found = await store.find_key_by_digest(other.key.digest)
        assert found is not None
        assert found.allowed_ips == ("10.0.0.0/8",)

    run(target, body)


def test_an_expired_key_is_not_active(target: Target) -> None:
    key = new_key(tenant="t", created_at=NOW, expires_at=NOW + 60).key

    async def body(store: StateStore) -> tuple[int, int]:
        await store.create_key(key)
        return await store.count_active_keys(now=NOW), await store.count_active_keys(now=NOW + 60)

    assert run(target, body) == (1, 0)
