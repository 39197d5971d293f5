"""The limits contract runs over every ``TenantLimits`` backend: counted in the process,
and shared in Redis (127.0.0.1:6379, or ``GW_TEST_REDIS_URL``). Each Redis test writes
under a key prefix of its own and deletes what it wrote; without a Redis it skips, except
in CI (``CI`` set), where it fails."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Iterator

import pytest
import redis
from redis_service import REDIS_URL, redis_unavailable

from gw.execution.local_limits import LocalLimits
from gw.ports import TenantLimits

BACKENDS = ("local", "redis")

MakeLimits = Callable[[], Awaitable[TenantLimits]]


@pytest.fixture
def transport() -> None:
    """The parent conftest runs each contract test per upstream transport; limits have none."""


def redis_or_skip(url: str = REDIS_URL) -> redis.Redis:
    client = redis.Redis.from_url(url, socket_connect_timeout=2)
    try:
        client.ping()
    except redis.RedisError as exc:
        client.close()
        redis_unavailable(exc)
    return client


@pytest.fixture
def redis_prefix() -> Iterator[str]:
    """A key prefix of this test's own; every key under it is deleted afterwards."""
    client = redis_or_skip()
    prefix = f"gwtest:{uuid.uuid4().hex[:12]}:"
    try:
        yield prefix
    finally:
        keys = list(client.scan_iter(match=f"{prefix}*", count=500))
        if keys:
            client.delete(*keys)
        client.close()


@pytest.fixture(params=BACKENDS)
def make_limits(request: pytest.FixtureRequest) -> MakeLimits:
    """Builds the backend inside the test's event loop (a Redis client belongs to one)."""
    if request.param == "local":

        async def local() -> TenantLimits:
            return LocalLimits()

        return local
    prefix = request.getfixturevalue("redis_prefix")

    async def shared() -> TenantLimits:
        from gw.fleet.redis_limits import RedisLimits  # noqa: PLC0415 - redis tests only

        return await RedisLimits.connect(REDIS_URL, prefix=prefix)

    return shared
