"""API keys while the state store does not answer (a fleet's PostgreSQL down): keys seen
before keep working from the cache, the store is asked at most once per ttl per key and
no request waits for it; a key never seen is refused with 503 overloaded, not let in."""

from __future__ import annotations

import asyncio

import pytest

from gw.errors import AuthenticationFailedError, OverloadedError
from gw.server.auth import Authenticator
from gw.server.key_cache import KeyCache
from gw.store.api_keys import ApiKey, NewKey, new_key

STRONG_ADMIN = "Zq8rV2mW7kT1xN4pL9sB3dF6hJ0cG5yA"


class FakeClock:
    def __init__(self) -> None:
        self.wall = 1_773_583_323.0
        self.mono = 1000.0

    def time(self) -> float:
        return self.wall

    def monotonic(self) -> float:
        return self.mono

    def advance(self, seconds: float) -> None:
        self.wall += seconds
        self.mono += seconds


class FakeKeys:
    def __init__(self) -> None:
        self.keys: dict[str, ApiKey] = {}
        self.finds = 0

    def add(self, new: NewKey) -> str:
        self.keys[new.key.digest] = new.key
        return new.plaintext

    async def find_key_by_digest(self, digest: str) -> ApiKey | None:
        self.finds += 1
        return self.keys.get(digest)

    async def count_active_keys(self, *, now: float) -> int:
        return sum(key.active(now) for key in self.keys.values())


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


class DownKeys(FakeKeys):
    """``FakeKeys`` whose reads raise while ``down`` (connection refused) or hang."""

    def __init__(self) -> None:
        super().__init__()
        self.down = False
        self.hang = False

    async def find_key_by_digest(self, digest: str) -> ApiKey | None:
        if self.hang:
            self.finds += 1
            await asyncio.Event().wait()
        if self.down:
            self.finds += 1
            raise ConnectionRefusedError(111, "Connect call failed")
        return await super().find_key_by_digest(digest)


def _auth(clock: FakeClock, store: DownKeys) -> Authenticator:
    return Authenticator("keys", STRONG_ADMIN, keys=KeyCache(store, clock), clock=clock)


def test_a_seen_key_keeps_working_and_an_unseen_one_is_refused_with_503() -> None:
    async def scenario() -> None:
        clock, store = FakeClock(), DownKeys()
        seen = store.add(new_key(tenant="team-a", created_at=clock.wall))
        unseen = store.add(new_key(tenant="team-b", created_at=clock.wall))
        auth = _auth(clock, store)
        assert (await auth.authenticate(bearer(seen))).tenant == "team-a"
        store.down = True
        clock.advance(1.5)  # the entry is stale: the store is asked, fails, the key holds
        assert (await auth.authenticate(bearer(seen))).tenant == "team-a"
        reads = store.finds
        for _ in range(20):  # within the next second: answered without asking the store
            assert (await auth.authenticate(bearer(seen))).tenant == "team-a"
        assert store.finds == reads
        with pytest.raises(OverloadedError, match="has not seen this API key") as refused:
            await auth.authenticate(bearer(unseen))
        assert refused.value.status == 503
        assert refused.value.retry_after is not None
        store.down = False
        clock.advance(1.5)  # the store answers again: both keys are read afresh
        await auth.authenticate(bearer(seen))
        assert (await auth.authenticate(bearer(unseen))).tenant == "team-b"

    asyncio.run(scenario())


def test_a_key_that_expires_during_the_outage_stops_working() -> None:
    async def scenario() -> None:
        clock, store = FakeClock(), DownKeys()
        token = store.add(new_key(tenant="t", created_at=clock.wall, expires_at=clock.wall + 60))
        auth = _auth(clock, store)
        await auth.authenticate(bearer(token))
        store.down = True
        clock.advance(120)
        with pytest.raises(AuthenticationFailedError, match="expired"):
            await auth.authenticate(bearer(token))

    asyncio.run(scenario())


def test_a_store_that_hangs_holds_a_seen_key_at_most_the_lookup_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("gw.server.key_cache.LOOKUP_TIMEOUT_S", 0.01)

    async def scenario() -> None:
        clock, store = FakeClock(), DownKeys()
        token = store.add(new_key(tenant="t", created_at=clock.wall))
        auth = _auth(clock, store)
        await auth.authenticate(bearer(token))
        store.hang = True
        clock.advance(1.5)
        principal = await asyncio.wait_for(auth.authenticate(bearer(token)), 5.0)
        assert principal.tenant == "t"

    asyncio.run(scenario())
