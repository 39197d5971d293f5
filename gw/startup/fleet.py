"""A fleet gateway's two background duties (``state.url`` names PostgreSQL): follow the
fleet's config (gw/startup/fleet_config.py) and keep its row in the gateway registry
(gw/startup/fleet_registry.py). The listener, which loads asyncpg, is imported only for
a fleet."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from gw.reload import Reloader
from gw.startup.fleet_registry import Heartbeat, fleet_view, heartbeat_seconds
from gw.startup.plan import ServePlan, SnapshotHolder, SystemClock
from gw.startup.reloading import fleet_newest
from gw.store.port import StateStore

if TYPE_CHECKING:
    from gw.startup.fleet_config import FleetConfig


class FleetDuties:
    def __init__(self, follow: FleetConfig, heartbeat: Heartbeat, now: Callable[[], float]) -> None:
        self.follow = follow
        self.heartbeat = heartbeat
        self._now = now

    async def start(self) -> None:
        await self.follow.start()  # its first act: catch up to the fleet's newest revision
        await self.heartbeat.start()

    async def stop(self) -> None:
        await asyncio.gather(self.follow.stop(), self.heartbeat.stop())

    async def view(self) -> list[dict[str, Any]]:
        """The registry as ``gw status`` shows it (``fleet_view``)."""
        rows = await self.heartbeat.registry.list()
        return fleet_view(rows, now=self._now(), me=self.heartbeat.gateway_id)


def fleet_duties(
    plan: ServePlan,
    store: StateStore,
    reloader: Reloader,
    snapshots: SnapshotHolder,
    *,
    ready: Callable[[], Awaitable[object]],
    gateway_id: str,
    url: str,
    clock: SystemClock,
) -> FleetDuties | None:
    """With state.url; None for a gateway alone (SQLite: no registry). ``ready`` is the
    readiness check of /readyz (gw/server/app.py), which raises while not ready."""
    registry, state_url = store.gateways(), plan.config.state.url
    if registry is None or state_url is None:
        return None
    from gw.startup.fleet_config import FleetConfig  # noqa: PLC0415 - asyncpg only for a fleet

    async def is_ready() -> bool:
        try:
            await ready()
        except Exception:  # noqa: BLE001 -- as /readyz: any failure means not ready
            return False
        return True

    heartbeat = Heartbeat(
        registry,
        gateway_id=gateway_id,
        url=url,
        started_at=clock.time(),
        snapshot=snapshots.get,
        ready=is_ready,
        now=clock.time,
        interval=heartbeat_seconds(plan.environ),
    )
    follow = FleetConfig(state_url, reloader, fleet_newest(store, snapshots.get))
    return FleetDuties(follow, heartbeat, clock.time)
