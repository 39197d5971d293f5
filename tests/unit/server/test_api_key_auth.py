"""API keys on the request path: the ≤1 s cache (on a fake clock), expiry, revocation,
scopes, model lists, IP allowlists, the provisional open mode, and the start-up exposure
checks."""

from __future__ import annotations

import asyncio
import ipaddress
import re
from collections.abc import Awaitable
from typing import TypeVar

import msgspec
import pytest

from gw.errors import AuthenticationFailedError, PermissionDeniedError
from gw.server.auth import (
    Authenticator,
    Principal,
    exposure_problem,
    is_placeholder,
    require_model,
    require_scope,
)
from gw.server.key_cache import CachedKey, KeyCache, TtlMemo
from gw.store.api_keys import ApiKey, NewKey, new_key
from gw.store.ip_allowlist import parse_allowlist

from e2e.waiting import await_until

T = TypeVar("T")
STRONG_ADMIN = "Zq8rV2mW7kT1xN4pL9sB3dF6hJ0cG5yA"  # 32 characters, random-looking


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
    """An in-memory key store that counts reads."""

    def __init__(self) -> None:
        self.keys: dict[str, ApiKey] = {}
        self.finds = 0
        self.counts = 0

    def add(self, new: NewKey) -> str:
        self.keys[new.key.digest] = new.key
        return new.plaintext

    def revoke(self, key_id: str, at: float) -> None:
        for digest, key in self.keys.items():
            if key.id == key_id:
                self.keys[digest] = msgspec.structs.replace(key, revoked_at=at)

    async def find_key_by_digest(self, digest: str) -> ApiKey | None:
        self.finds += 1
        return self.keys.get(digest)

    async def count_active_keys(self, *, now: float) -> int:
        self.counts += 1
        return sum(key.active(now) for key in self.keys.values())


def run(awaitable: Awaitable[T]) -> T:
    async def main() -> T:
        return await awaitable

    return asyncio.run(main())


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


def make(
    clock: FakeClock,
    store: FakeKeys,
    *,
    mode: str = "keys",
    open_until_keys: bool = False,
    switches: list[str] | None = None,
) -> Authenticator:
    return Authenticator(
        "keys" if mode == "keys" else "open",
        STRONG_ADMIN,
        keys=KeyCache(store, clock),
        clock=clock,
        open_until_keys=open_until_keys,
        on_keys_mode=None if switches is None else lambda: switches.append("keys"),
    )


def test_a_key_authenticates_with_its_tenant_scopes_and_models() -> None:
    clock, store = FakeClock(), FakeKeys()
    token = store.add(
        new_key(tenant="team-a", created_at=clock.wall, scopes=("inference",), models=("chat",))
    )
    auth = make(clock, store)
    principal = run(auth.authenticate(bearer(token)))
    assert principal.tenant == "team-a"
    assert principal.scopes == ("inference",)
    assert principal.models == ("chat",)
    assert principal.key_id is not None
    assert principal.key_id.startswith("key_")
    assert run(auth.authenticate({"x-api-key": token})) == principal
    admin = run(auth.authenticate(bearer(STRONG_ADMIN)))
    assert admin.key_id == "admin"
    assert admin.tenant is None
    assert admin.scopes == ("*",)


def test_unknown_and_foreign_tokens_are_refused() -> None:
    clock, store = FakeClock(), FakeKeys()
    auth = make(clock, store)
    with pytest.raises(AuthenticationFailedError, match="no API key"):
        run(auth.authenticate({}))
    with pytest.raises(AuthenticationFailedError, match="not valid"):
        run(auth.authenticate(bearer("gw-" + "A" * 43)))
    assert store.finds == 1
    with pytest.raises(AuthenticationFailedError, match="not valid"):
        run(auth.authenticate(bearer("sk-not-a-gw-key")))
    assert store.finds == 1  # not shaped like a gw key: no lookup at all


def test_answers_are_cached_for_at_most_a_second_then_read_again() -> None:
    async def scenario() -> None:
        clock, store = FakeClock(), FakeKeys()
        token = store.add(new_key(tenant="t", created_at=clock.wall))
        auth = make(clock, store)
        for _ in range(50):
            await auth.authenticate(bearer(token))
        assert store.finds == 1  # no database read per request within the TTL
        store.revoke(next(iter(store.keys.values())).id, at=clock.wall)
        clock.advance(0.5)
        await auth.authenticate(bearer(token))  # still cached: the revocation is not seen yet
        clock.advance(0.5)  # one second after the read: the entry is stale
        with pytest.raises(AuthenticationFailedError, match="has been revoked"):
            await auth.authenticate(bearer(token))
        assert store.finds == 2

    asyncio.run(scenario())


def test_unknown_keys_are_cached_too_so_a_new_key_works_within_a_second() -> None:
    async def scenario() -> None:
        clock, store = FakeClock(), FakeKeys()
        later = new_key(tenant="t", created_at=clock.wall)
        auth = make(clock, store)
        for _ in range(5):
            with pytest.raises(AuthenticationFailedError):
                await auth.authenticate(bearer(later.plaintext))
        assert store.finds == 1
        store.add(later)
        clock.advance(1.0)
        assert (await auth.authenticate(bearer(later.plaintext))).tenant == "t"
        assert store.finds == 2

    asyncio.run(scenario())


def test_concurrent_misses_share_one_read() -> None:
    reads = 0

    async def slow_load(name: str) -> str:
        nonlocal reads
        reads += 1
        await asyncio.sleep(0.01)
        return name.upper()

    async def scenario() -> list[str]:
        clock = FakeClock()
        memo: TtlMemo[str] = TtlMemo(slow_load, clock.monotonic, ttl=1.0)
        return list(await asyncio.gather(*(memo.get("k") for _ in range(20))))

    assert asyncio.run(scenario()) == ["K"] * 20
    assert reads == 1


def test_the_cache_is_bounded() -> None:
    async def scenario() -> int:
        clock = FakeClock()
        loads: list[str] = []

        async def load(name: str) -> None:
            loads.append(name)

        memo: TtlMemo[None] = TtlMemo(load, clock.monotonic, ttl=1.0, max_entries=3)
        for name in ("a", "b", "c", "d"):
            await memo.get(name)
        await memo.get("d")  # newest: still cached
        await memo.get("a")  # oldest: evicted, read again
        return len(loads)

    assert asyncio.run(scenario()) == 5


def test_a_ttl_above_one_second_is_refused() -> None:
    with pytest.raises(ValueError, match="ttl"):
        KeyCache(FakeKeys(), FakeClock(), ttl=5.0)


def test_an_expired_key_is_refused_saying_it_expired() -> None:
    clock, store = FakeClock(), FakeKeys()
    token = store.add(new_key(tenant="t", created_at=clock.wall, expires_at=clock.wall + 10))
    auth = make(clock, store)
    run(auth.authenticate(bearer(token)))
    clock.advance(10)  # expiry is checked on every request, not only when the cache refreshes
    with pytest.raises(AuthenticationFailedError, match=r"expired at 2026-.*Z"):
        run(auth.authenticate(bearer(token)))


def test_scopes() -> None:
    def key(*scopes: str) -> Principal:
        return Principal(key_id="key_1", tenant="t", scopes=scopes)

    require_scope(key("inference"), "inference")
    require_scope(key("*"), "admin")
    require_scope(key("admin"), "usage:read")  # admin reads usage too
    require_scope(key("usage:read"), "usage:read")
    with pytest.raises(
        PermissionDeniedError, match="needs the 'admin' scope; this API key has: inference"
    ):
        require_scope(key("inference"), "admin")
    with pytest.raises(PermissionDeniedError, match="'inference' scope"):
        require_scope(key("usage:read", "admin"), "inference")
    with pytest.raises(PermissionDeniedError):
        require_scope(key("usage:read"), "admin")


def test_a_key_limited_to_models_may_use_only_those() -> None:
    limited = Principal(
        key_id="key_1", tenant="t", scopes=("inference",), models=("chat", "mock/m")
    )
    require_model(limited, "chat")
    require_model(limited, "mock/m")
    with pytest.raises(
        PermissionDeniedError, match="may not use model 'other'; it is limited to: chat, mock/m"
    ):
        require_model(limited, "other")
    require_model(Principal(), "anything")


def test_provisional_open_mode_turns_keys_once_a_key_exists_and_stays() -> None:
    async def scenario() -> None:
        clock, store, switches = FakeClock(), FakeKeys(), list[str]()
        auth = make(clock, store, mode="open", open_until_keys=True, switches=switches)
        assert auth.provisional
        assert (await auth.authenticate({})).key_id is None  # open: anyone
        new = new_key(tenant="t", created_at=clock.wall)
        token = store.add(new)
        assert (await auth.authenticate({})).key_id is None  # within the second: still open
        assert store.counts == 1
        clock.advance(1.0)
        with pytest.raises(AuthenticationFailedError):
            await auth.authenticate({})
        assert auth.mode == "keys"
        assert not auth.provisional
        assert (await auth.authenticate(bearer(token))).tenant == "t"
        store.revoke(new.key.id, at=clock.wall)
        clock.advance(1.0)
        with pytest.raises(AuthenticationFailedError):  # revoking every key does not reopen
            await auth.authenticate(bearer(token))
        with pytest.raises(AuthenticationFailedError):
            await auth.authenticate({})
        assert switches == ["keys"]  # told once (gw rewrites server.json then)

    asyncio.run(scenario())


def test_explicit_open_mode_ignores_keys() -> None:
    clock, store = FakeClock(), FakeKeys()
    store.add(new_key(tenant="t", created_at=clock.wall))
    auth = make(clock, store, mode="open", open_until_keys=False)
    assert run(auth.authenticate({})).key_id is None
    assert store.counts == 0


def test_plaintext_is_not_in_the_stored_row_or_reprs() -> None:
    new = new_key(tenant="t", created_at=1.0)
    assert new.plaintext.startswith("gw-")
    assert len(new.plaintext) == 3 + 43  # 256 bits, URL-safe base64 without padding
    stored = msgspec.json.encode(new.key).decode()
    assert new.plaintext not in stored
    assert new.plaintext[3:] not in stored
    assert new.plaintext not in repr(new)
    assert new.key.prefix == new.plaintext[:7]
    assert new.key.suffix == new.plaintext[-4:]


@pytest.mark.parametrize(
    ("configured", "host", "admin_key", "problem"),
    [
        (None, "127.0.0.1", None, None),
        ("open", "::1", None, None),
        ("open", "0.0.0.0", STRONG_ADMIN, "open mode is for loopback only"),
        (None, "0.0.0.0", None, "needs an admin key"),
        ("keys", "10.0.0.5", "short-admin-key", "at least 32"),
        (None, "0.0.0.0", "changeme-changeme-changeme-changeme", "placeholder"),
        (None, "0.0.0.0", "x" * 40, "placeholder"),
        (None, "0.0.0.0", "your-admin-key-here-please-fill-this-in", "placeholder"),
        (None, "0.0.0.0", STRONG_ADMIN, None),
    ],
)
def test_exposure_beyond_loopback(
    configured: str | None, host: str, admin_key: str | None, problem: str | None
) -> None:
    mode = "open" if configured == "open" else "keys" if configured else None
    found = exposure_problem(mode, host, admin_key)
    if problem is None:
        assert found is None
    else:
        assert found is not None
        assert problem in found
        if admin_key:
            assert admin_key not in found  # never echo the secret


def test_placeholders() -> None:
    for value in (
        "changeme",
        "CHANGE_ME",
        "xxxxxxxx",
        "sk-xxxx",
        "your-key-here",
        "<admin key>",
        "a" * 40,
        "...",
    ):
        assert is_placeholder(value), value
    assert not is_placeholder(STRONG_ADMIN)


def test_a_key_with_an_ip_allowlist_works_only_from_inside_it() -> None:
    clock, store = FakeClock(), FakeKeys()
    allowed = parse_allowlist(["10.0.0.0/8", "2001:db8::/32"])
    token = store.add(new_key(tenant="t", created_at=clock.wall, allowed_ips=allowed))
    auth = make(clock, store)
    for inside in ("10.1.2.3", "::ffff:10.1.2.3", "2001:db8::7"):
        assert run(auth.authenticate(bearer(token), inside)).tenant == "t"
    with pytest.raises(PermissionDeniedError) as outside:
        run(auth.authenticate(bearer(token), "127.0.0.1"))
    said = outside.value.message
    assert "is not allowed from address 127.0.0.1" in said
    assert "--allow-ip" in said
    assert "trusted_proxies" in said
    assert token not in said
    assert "10.0.0.0" not in said  # the list is not disclosed to whoever holds the key
    assert outside.value.code == "permission_denied"
    assert outside.value.status == 403
    with pytest.raises(PermissionDeniedError, match=re.escape("from address 192.168.0.1")):
        run(auth.authenticate(bearer(token), "::ffff:192.168.0.1"))  # shown in IPv4 form
    with pytest.raises(PermissionDeniedError, match="from an unknown address"):
        run(auth.authenticate(bearer(token)))  # no address known: fails closed
    assert store.finds == 1  # the allowlist came from the cache with the key


def test_keys_without_an_allowlist_and_the_admin_key_work_from_anywhere() -> None:
    clock, store = FakeClock(), FakeKeys()
    token = store.add(new_key(tenant="t", created_at=clock.wall))
    auth = make(clock, store)
    for client in ("203.0.113.7", "2001:db8::1", None):
        assert run(auth.authenticate(bearer(token), client)).tenant == "t"
        assert run(auth.authenticate(bearer(STRONG_ADMIN), client)).key_id == "admin"


def test_a_revoked_key_is_refused_as_revoked_before_its_allowlist_is_looked_at() -> None:
    clock, store = FakeClock(), FakeKeys()
    made = new_key(tenant="t", created_at=clock.wall, allowed_ips=("10.0.0.0/8",))
    token = store.add(made)
    store.revoke(made.key.id, at=clock.wall)
    with pytest.raises(AuthenticationFailedError, match="revoked"):
        run(make(clock, store).authenticate(bearer(token), "127.0.0.1"))


def test_an_allowlist_change_is_seen_within_a_second_and_a_bad_stored_one_allows_nothing() -> None:
    async def scenario() -> None:
        clock, store = FakeClock(), FakeKeys()
        made = new_key(tenant="t", created_at=clock.wall, allowed_ips=("10.0.0.0/8",))
        token = store.add(made)
        auth = make(clock, store)
        with pytest.raises(PermissionDeniedError):
            await auth.authenticate(bearer(token), "127.0.0.1")
        store.keys[made.key.digest] = msgspec.structs.replace(
            made.key, allowed_ips=("127.0.0.1/32",)
        )
        clock.advance(1.0)
        assert (await auth.authenticate(bearer(token), "127.0.0.1")).tenant == "t"
        # A row edited by hand into something that is not a network: refused, not opened.
        store.keys[made.key.digest] = msgspec.structs.replace(
            made.key, allowed_ips=("127.0.0.1/32", "localhost")
        )
        clock.advance(1.0)
        with pytest.raises(PermissionDeniedError):
            await auth.authenticate(bearer(token), "127.0.0.1")

    asyncio.run(scenario())


def test_the_key_cache_carries_the_allowlist_as_networks() -> None:
    async def scenario() -> CachedKey | None:
        clock, store = FakeClock(), FakeKeys()
        made = new_key(tenant="t", created_at=clock.wall, allowed_ips=("10.0.0.0/8",))
        store.add(made)
        return await KeyCache(store, clock).find(made.key.digest)

    found = asyncio.run(scenario())
    assert found is not None
    assert found.networks == (ipaddress.ip_network("10.0.0.0/8"),)


def test_a_provisional_open_mode_switches_by_itself_without_stale_memos() -> None:
    clock, store, switches = FakeClock(), FakeKeys(), []
    auth = make(clock, store, mode="open", open_until_keys=True, switches=switches)

    async def scenario() -> None:
        await auth.start()
        await await_until(lambda: store.counts, "the watch's first look (no key yet)")
        assert auth.mode == "open"
        made = new_key(tenant="t", name="k", created_at=clock.wall)
        store.add(made)
        # A request now sees the key at once: the watch's look left no memo behind.
        with pytest.raises(AuthenticationFailedError):
            await auth.authenticate({})
        assert switches == ["keys"]
        await auth.stop()

    run(scenario())


def test_the_watch_switches_with_no_request_and_stops_cleanly() -> None:
    clock, store, switches = FakeClock(), FakeKeys(), []
    store.add(new_key(tenant="t", name="k", created_at=clock.wall))
    auth = make(clock, store, mode="open", open_until_keys=True, switches=switches)

    async def scenario() -> None:
        await auth.start()
        await await_until(lambda: switches, "the watch's first look to find the key")
        assert auth.mode == "keys"
        await auth.stop()
        await make(clock, store).stop()  # never started: stop is harmless

    run(scenario())
    assert switches == ["keys"]
