"""/readyz over a shared store (state.url): an outage is reported, the gateway stays ready
while its usage spool has room, and goes unready once the spool is full."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest

from gw.startup.store_health import StoreHealth
from gw.store.file_checks import StoreUnavailableError
from gw.store.port import StateStore


class FakeSharedStore:
    location = "postgresql://db.example/gw"

    def __init__(self) -> None:
        self.down: BaseException | None = None
        self.hang = False

    async def ping(self) -> None:
        if self.hang:
            await asyncio.Event().wait()
        if self.down is not None:
            raise self.down


def _health(store: FakeSharedStore, state: dict[str, Any]) -> StoreHealth:
    return StoreHealth(
        cast(StateStore, store),
        lambda: state["failing"],
        spool_full=lambda: bool(state["full"]),
        ping_timeout=0.01,
    )


def test_an_unreachable_shared_store_is_reported_but_the_gateway_stays_ready() -> None:
    store = FakeSharedStore()
    state: dict[str, Any] = {"failing": None, "full": False}
    health = _health(store, state)

    async def main() -> None:
        assert await health.check() is None
        store.down = ConnectionRefusedError(111, "refused")
        state["failing"] = "ConnectionRefusedError"
        problem = await health.check()
        assert problem is not None
        assert problem.code == "store_unreachable"
        assert "ConnectionRefusedError" in problem.message
        assert health.problem == problem  # gw status shows it
        store.down, store.hang = None, True  # a store that hangs: the probe is bounded
        problem = await health.check()
        assert problem is not None
        assert problem.code == "store_unreachable"
        store.hang = False
        state["full"] = True
        with pytest.raises(StoreUnavailableError) as raised:
            await health.check()
        assert raised.value.problem.code == "usage_spool_full"
        state["full"], state["failing"] = False, None
        assert await health.check() is None
        assert health.problem is None

    asyncio.run(main())
