"""Circuit breakers shared through Redis (``state.redis_url``): the ``BreakerChannel`` of
gw/fleet/breaker_mirror.py, and ``redis_breakers`` which builds the mirror over it.

Keys and channel (``<p>`` is the prefix, ``gw:v1:``; a target is ``provider/model``):

- ``<p>breaker:<target>``: the ``Opened`` note of the last opening (JSON,
  gw/fleet/breaker_notes.py), expiring ``cooldown + trial timeout`` after it was written,
  so a gateway starting while the breaker is half-open still learns of it. A successful
  trial deletes it.
- ``<p>trial:<target>``: the gateway id that holds the target's half-open trial, set
  with NX and a PX of the trial timeout: one trial for the whole fleet; a lost trial frees
  it when the key expires. An opening deletes it (a failed trial's reopening frees the
  next one).
- channel ``<p>breaker``: every ``Opened`` and ``Closed`` note.

Each operation is one round trip (a script, or a MULTI); none happens on the request path
except the trial claim, once per half-open period. Scripts run Redis's TIME themselves,
so ``opened_at`` is one clock for the fleet.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any, Final

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from gw.config.state_url import safe_url
from gw.fleet.breaker_mirror import BreakerMirror
from gw.fleet.breaker_notes import (
    KEY_PREFIX,
    BreakerNote,
    Closed,
    Opened,
    decode_note,
    encode_note,
)
from gw.ports import Clock, Sleep

# Fail fast, do not retry: the mirror falls back to local breakers and reconnects itself.
TIMEOUT_S: Final = 1.0
POLL_S: Final = 1.0  # the listener wakes this often, so a dead link is noticed
SCAN_COUNT: Final = 500

# KEYS: breaker key, trial key. ARGV: channel, target, gateway, cooldown, openings, cause,
# hold (ms). The note carries Redis's own TIME as opened_at.
_OPEN: Final = """
local t = redis.call('TIME')
local note = cjson.encode({kind = 'open', target = ARGV[2], gateway = ARGV[3],
  opened_at = tonumber(t[1]) + tonumber(t[2]) / 1000000, cooldown = tonumber(ARGV[4]),
  openings = tonumber(ARGV[5]), cause = ARGV[6]})
redis.call('SET', KEYS[1], note, 'PX', ARGV[7])
redis.call('DEL', KEYS[2])
redis.call('PUBLISH', ARGV[1], note)
return note
"""

# KEYS: trial key. ARGV: gateway, ttl (ms). Returns {holder, ms left}.
_CLAIM: Final = """
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return {ARGV[1], tonumber(ARGV[2])}
end
local holder = redis.call('GET', KEYS[1])
local left = redis.call('PTTL', KEYS[1])
if not holder or left < 0 then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return {ARGV[1], tonumber(ARGV[2])}
end
return {holder, left}
"""


def _client(url: str) -> aioredis.Redis:
    return aioredis.Redis.from_url(
        url,
        socket_timeout=TIMEOUT_S,
        socket_connect_timeout=TIMEOUT_S,
        socket_keepalive=True,
        retry=Retry(NoBackoff(), 0),
        decode_responses=False,
    )


class RedisBreakerChannel:
    """The fleet's breakers in one Redis; see the module docstring."""

    def __init__(self, url: str, *, prefix: str = KEY_PREFIX) -> None:
        self._url = url
        self._prefix = prefix
        self._redis = _client(url)
        self._open = self._redis.register_script(_OPEN)
        self._claim = self._redis.register_script(_CLAIM)
        self.channel = f"{prefix}breaker"

    def breaker_key(self, target: str) -> str:
        return f"{self._prefix}breaker:{target}"

    def trial_key(self, target: str) -> str:
        return f"{self._prefix}trial:{target}"

    async def publish_open(
        self,
        target: str,
        *,
        gateway: str,
        cooldown: float,
        openings: int,
        cause: str,
        hold: float,
    ) -> None:
        keys = [self.breaker_key(target), self.trial_key(target)]
        hold_ms = max(int(hold * 1000), 1)
        args: list[str | int] = [self.channel, target, gateway, repr(cooldown), openings]
        args += [cause, hold_ms]
        await self._open(keys=keys, args=args)

    async def publish_close(self, target: str, *, gateway: str) -> None:
        note = encode_note(Closed(target=target, gateway=gateway))
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.delete(self.breaker_key(target), self.trial_key(target))
            pipe.publish(self.channel, note)
            await pipe.execute()

    async def claim_trial(self, target: str, *, gateway: str, ttl: float) -> tuple[str, float]:
        ttl_ms = max(int(ttl * 1000), 1)
        answer: list[Any] = await self._claim(keys=[self.trial_key(target)], args=[gateway, ttl_ms])
        holder, left_ms = answer
        return _text(holder), int(left_ms) / 1000

    async def open_breakers(self) -> tuple[float, list[Opened]]:
        keys = [key async for key in self._redis.scan_iter(f"{self._prefix}breaker:*", SCAN_COUNT)]
        async with self._redis.pipeline(transaction=False) as pipe:
            pipe.time()
            if keys:
                pipe.mget(keys)
            answers = await pipe.execute()
        seconds, micros = answers[0]
        values: list[bytes | None] = answers[1] if keys else []
        notes = [decode_note(value) for value in values if value is not None]
        return seconds + micros / 1e6, [note for note in notes if isinstance(note, Opened)]

    @contextlib.asynccontextmanager
    async def subscribe(self) -> AsyncIterator[AsyncIterator[BreakerNote]]:
        pubsub = self._redis.pubsub(ignore_subscribe_messages=True)
        try:
            await pubsub.subscribe(self.channel)
            yield self._notes(pubsub)
        finally:
            with contextlib.suppress(Exception):
                await pubsub.aclose()  # type: ignore[no-untyped-call]  # redis-py's stub

    async def _notes(self, pubsub: Any) -> AsyncIterator[BreakerNote]:
        while True:
            # A timed wait, so a link that died silently is noticed (the read fails).
            message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=POLL_S)
            if message is not None and message.get("type") == "message":
                note = decode_note(message["data"])
                if note is not None:
                    yield note

    async def close(self) -> None:
        await self._redis.aclose()

    def __repr__(self) -> str:
        return f"RedisBreakerChannel({safe_url(self._url)!r})"


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def redis_breakers(
    url: str, gateway: str, clock: Clock, sleep: Sleep, *, linger: Callable[[], float]
) -> BreakerMirror:
    """The health book's ``BreakerShare`` for a fleet sharing the Redis at ``url``."""
    return BreakerMirror(
        RedisBreakerChannel(url), gateway, clock, sleep, linger=linger, where=safe_url(url)
    )
