"""Sticky-session pins shared through Redis (``state.redis_url``): the ``SessionPins`` of a
fleet, so a conversation a load balancer sends to another gateway stays on its target.

Key: ``<p>sticky:<digest>`` (``<p>`` is ``gw:v1:``; the digest is the keyed HMAC of the
session key, gw/execution/sticky_sessions.py), holding the pin as JSON
(``{"provider", "model", "account"}``) and expiring its ``ttl`` after the last answer.

A pin is a hint: a read that fails or takes longer than ``TIMEOUT_S`` is no pin (the
request routes as if new) and the outage is logged once; writes go out in the background,
at most ``MAX_PENDING`` at a time, the rest dropped (the next answer pins again).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any, Final

import msgspec
import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import RedisError

from gw.config.state_url import safe_url
from gw.fleet.breaker_notes import KEY_PREFIX
from gw.routing.sticky import SessionPin

TIMEOUT_S: Final = 0.25  # a pin read waits this long at most, then the request goes on
MAX_PENDING: Final = 256  # writes in flight; beyond, a write is dropped (pins are hints)
_log = logging.getLogger(__name__)
_DECODER: Final = msgspec.json.Decoder(SessionPin)
_ENCODER: Final = msgspec.json.Encoder()


class RedisSessionPins:
    """``SessionPins`` in one Redis, shared by every gateway that uses it."""

    def __init__(self, url: str, *, prefix: str = KEY_PREFIX) -> None:
        self._where = safe_url(url)
        self._prefix = f"{prefix}sticky:"
        self._redis = aioredis.Redis.from_url(
            url,
            socket_timeout=TIMEOUT_S,
            socket_connect_timeout=TIMEOUT_S,
            retry=Retry(NoBackoff(), 0),
            decode_responses=False,
        )
        self._tasks: set[asyncio.Task[None]] = set()
        self._failing = False

    async def get(self, key: str) -> SessionPin | None:
        try:
            async with asyncio.timeout(TIMEOUT_S):
                raw = await self._redis.get(self._prefix + key)
        except (RedisError, OSError, TimeoutError) as exc:
            self._failed(exc)
            return None
        self._answered()
        if raw is None:
            return None
        try:
            return _DECODER.decode(raw)
        except msgspec.DecodeError:  # written by another version: route as a new session
            return None

    def put(self, key: str, pin: SessionPin, *, ttl: float) -> None:
        self._spawn(self._set(self._prefix + key, _ENCODER.encode(pin), max(int(ttl * 1000), 1)))

    def drop(self, key: str) -> None:
        self._spawn(self._delete(self._prefix + key))

    async def aclose(self) -> None:
        """Let the writes under way finish (at shutdown), then close the connections."""
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=TIMEOUT_S * 4)
        await self._redis.aclose()

    def _spawn(self, write: Coroutine[Any, Any, None]) -> None:
        if len(self._tasks) >= MAX_PENDING:
            write.close()  # never started: nothing to undo
            return
        task = asyncio.ensure_future(write)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _set(self, key: str, value: bytes, millis: int) -> None:
        try:
            async with asyncio.timeout(TIMEOUT_S * 4):
                await self._redis.set(key, value, px=millis)
        except (RedisError, OSError, TimeoutError) as exc:
            self._failed(exc)
        else:
            self._answered()

    async def _delete(self, key: str) -> None:
        try:
            async with asyncio.timeout(TIMEOUT_S * 4):
                await self._redis.delete(key)
        except (RedisError, OSError, TimeoutError) as exc:
            self._failed(exc)

    def _failed(self, error: Exception) -> None:
        if not self._failing:
            self._failing = True
            _log.warning(
                "sticky sessions: Redis at %s did not answer (%s); sessions route as new "
                "until it does",
                self._where,
                type(error).__name__,
            )

    def _answered(self) -> None:
        if self._failing:
            self._failing = False
            _log.warning("sticky sessions: Redis at %s answers again", self._where)
