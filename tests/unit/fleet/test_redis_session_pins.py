"""RedisSessionPins against the real Redis at 127.0.0.1:6379: one gateway's pin is another's,
with its TTL; an unreachable Redis is no pin, never an error. Each test uses its own key
prefix and deletes its keys after."""

from __future__ import annotations

import asyncio
import uuid

import pytest
import redis.asyncio as aioredis
from redis_service import REDIS_URL, redis_unavailable

from gw.fleet.redis_sessions import RedisSessionPins
from gw.routing.sticky import SessionPin

PIN = SessionPin(provider="a", model="m-a", account="k2")


@pytest.fixture
def prefix() -> str:
    async def ping() -> None:
        client = aioredis.Redis.from_url(REDIS_URL, socket_connect_timeout=1.0)
        try:
            await client.ping()
        finally:
            await client.aclose()

    try:
        asyncio.run(ping())
    except (OSError, aioredis.ConnectionError) as error:
        redis_unavailable(error)
    return f"gwtest:{uuid.uuid4().hex[:12]}:"


def test_a_pin_written_by_one_gateway_is_read_by_another(prefix: str) -> None:
    async def main() -> None:
        writer = RedisSessionPins(REDIS_URL, prefix=prefix)
        writer.put("digest1", PIN, ttl=60)
        await writer.aclose()  # waits for the background write
        reader = RedisSessionPins(REDIS_URL, prefix=prefix)
        client = aioredis.Redis.from_url(REDIS_URL)
        try:
            assert await reader.get("digest1") == PIN
            assert await reader.get("digest2") is None
            assert 0 < await client.pttl(f"{prefix}sticky:digest1") <= 60_000
            reader.drop("digest1")
        finally:
            await reader.aclose()
            assert await client.exists(f"{prefix}sticky:digest1") == 0
            keys = [key async for key in client.scan_iter(f"{prefix}*")]
            if keys:
                await client.delete(*keys)
            await client.aclose()

    asyncio.run(main())


def test_an_unreachable_redis_is_no_pin() -> None:
    async def main() -> None:
        pins = RedisSessionPins("redis://127.0.0.1:1/0")
        assert await pins.get("digest") is None
        pins.put("digest", PIN, ttl=60)  # dropped with a logged warning, never raised
        await pins.aclose()

    asyncio.run(main())
