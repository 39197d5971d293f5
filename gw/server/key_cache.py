"""API key lookups for the request path, cached in-process for at most a second.

Strategy: an answer from the store (a key, or "no such key") is kept for ``ttl`` seconds,
counted from *before* the read, so no answer outlives the data it was read from by more than
``ttl``: a key created or revoked by ``gw keys`` (another process, same database) takes
effect here within ``ttl`` (1 s at most), and within it a request costs no database read.
Concurrent misses for one digest share one read. Unknown tokens are cached too (so a client
retrying a bad key does not hammer the database), in a bounded table: a flood of random
tokens evicts the oldest entries instead of growing memory. A key's IP allowlist is parsed
into networks when the key is read, so a request only compares addresses.

When the store does not answer (a fleet's PostgreSQL down, or a read past
``LOOKUP_TIMEOUT_S``), requests go on with what the cache holds: a key seen before is
served from its last answer, and the store is asked again at most once per ``ttl`` per
key, in the background, the request not waiting for it. That answer may be older than
``ttl`` then, but no revocation can be written to a store nobody reaches; an expiry still
takes effect, as it is checked on the cached key. A key this gateway has not seen (or
has forgotten, past ``MAX_ENTRIES``) cannot be checked: it is refused with 503
``overloaded`` and a message saying why, retryable, never let in.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final, Generic, Protocol, TypeVar

from gw.errors import GatewayError, OverloadedError
from gw.ports import Clock
from gw.store.api_keys import ApiKey
from gw.store.ip_allowlist import Network, networks_of

MAX_TTL: Final = 1.0  # the promise: a revocation takes effect within a second
MAX_ENTRIES: Final = 10_000
LOOKUP_TIMEOUT_S: Final = 2.0  # a store that hangs must not hold requests longer
STORE_RETRY_AFTER_S: Final = 2.0

ValueT = TypeVar("ValueT")

log = logging.getLogger("gw.auth")


@dataclass(frozen=True, slots=True)
class CachedKey:
    """A stored key and its IP allowlist as networks (None: any address)."""

    key: ApiKey
    networks: tuple[Network, ...] | None


def cached_key(key: ApiKey) -> CachedKey:
    """``key`` with its allowlist parsed. A stored entry that is not a network (the row was
    edited by hand) allows nothing: the key fails closed rather than opening to anyone."""
    if key.allowed_ips is None:
        return CachedKey(key=key, networks=None)
    try:
        return CachedKey(key=key, networks=networks_of(key.allowed_ips))
    except ValueError as error:
        log.warning("API key %s has an unreadable IP allowlist, refused: %s", key.id, error)
        return CachedKey(key=key, networks=())


class KeySource(Protocol):
    """What the cache reads (``SqliteStore`` provides both)."""

    async def find_key_by_digest(self, digest: str) -> ApiKey | None: ...

    async def count_active_keys(self, *, now: float) -> int: ...


class TtlMemo(Generic[ValueT]):
    """``load(name)`` remembered for ``ttl`` seconds of ``monotonic`` time, per name."""

    def __init__(
        self,
        load: Callable[[str], Awaitable[ValueT]],
        monotonic: Callable[[], float],
        *,
        ttl: float,
        max_entries: int = MAX_ENTRIES,
        stale_if_error: bool = False,
    ) -> None:
        """``stale_if_error``: when a load fails, a name loaded before is answered from its
        last value, and loaded again (in the background) at most once per ``ttl``."""
        self._load = load
        self._monotonic = monotonic
        self._ttl = ttl
        self._max_entries = max_entries
        self._stale_if_error = stale_if_error
        self._entries: dict[str, tuple[ValueT, float]] = {}  # name -> (value, fresh until)
        self._pending: dict[str, asyncio.Future[ValueT]] = {}
        self._failing = False  # the last load failed: a stale value is answered at once

    async def get(self, name: str) -> ValueT:
        now = self._monotonic()
        entry = self._entries.get(name)
        if entry is not None and now < entry[1]:
            return entry[0]
        pending = self._pending.get(name)
        if pending is None:
            pending = asyncio.ensure_future(self._refresh(name, read_at=now))
            self._pending[name] = pending
            pending.add_done_callback(lambda done: self._settled(name, done))
        if entry is not None and self._stale_if_error and self._failing:
            return entry[0]  # the store is down: no request waits for its next try
        try:
            # Shielded: a client that hangs up must not cancel the read others wait for.
            return await asyncio.shield(pending)
        except Exception:
            if entry is None or not self._stale_if_error:
                raise
            return entry[0]

    async def _refresh(self, name: str, *, read_at: float) -> ValueT:
        try:
            value = await self._load(name)
        except Exception:
            self._failing = True
            stale = self._entries.get(name)
            if stale is not None and self._stale_if_error:  # asked again in ``ttl``, not now
                self._entries[name] = (stale[0], read_at + self._ttl)
            raise
        self._failing = False
        self._entries.pop(name, None)  # re-inserted last: the oldest entries go first
        self._entries[name] = (value, read_at + self._ttl)
        while len(self._entries) > self._max_entries:
            del self._entries[next(iter(self._entries))]
        return value

    def _settled(self, name: str, done: asyncio.Future[ValueT]) -> None:
        self._pending.pop(name, None)
        if not done.cancelled():
            done.exception()  # retrieved here: when every waiter left, nobody else would


class KeyCache:
    """Keys by digest, and whether any active key exists, each fresh within ``ttl``."""

    def __init__(self, source: KeySource, clock: Clock, *, ttl: float = MAX_TTL) -> None:
        if not 0 <= ttl <= MAX_TTL:
            raise ValueError(f"the key cache ttl must be between 0 and {MAX_TTL} s")
        self._source = source
        self._clock = clock
        self._keys = TtlMemo(self._find, clock.monotonic, ttl=ttl, stale_if_error=True)
        self._active = TtlMemo(
            self._any_active, clock.monotonic, ttl=ttl, max_entries=1, stale_if_error=True
        )

    async def find(self, digest: str) -> CachedKey | None:
        """The key with this digest (revoked and expired ones too), or None; raises
        ``overloaded`` when the store does not answer and the key was not seen before."""
        try:
            return await self._keys.get(digest)
        except GatewayError:
            raise
        except Exception as exc:
            raise _store_down(exc, "this gateway has not seen this API key before") from exc

    async def any_active(self) -> bool:
        """Whether some key is neither revoked nor expired."""
        try:
            return await self._active.get("")
        except GatewayError:
            raise
        except Exception as exc:
            raise _store_down(exc, "whether an API key exists is not known yet") from exc

    async def any_active_now(self) -> bool:
        """``any_active`` read from the store, the memo left alone: a background look must
        not leave requests a "no key yet" up to a second old."""
        return await self._any_active("")

    async def _find(self, digest: str) -> CachedKey | None:
        async with asyncio.timeout(LOOKUP_TIMEOUT_S):
            key = await self._source.find_key_by_digest(digest)
        return None if key is None else cached_key(key)

    async def _any_active(self, _name: str) -> bool:
        async with asyncio.timeout(LOOKUP_TIMEOUT_S):
            return await self._source.count_active_keys(now=self._clock.time()) > 0


def _store_down(exc: Exception, why: str) -> OverloadedError:
    log.warning("API key lookup failed: %s", type(exc).__name__)
    return OverloadedError(
        f"the API key cannot be checked now: the state store does not answer and {why};"
        " retry shortly (keys this gateway has seen keep working meanwhile)",
        retry_after=STORE_RETRY_AFTER_S,
    )
