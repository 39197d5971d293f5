"""``FleetConfig`` against a real PostgreSQL server: a recorded revision reaches it by
NOTIFY, and one recorded while its connection was down is read when it reconnects."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import cast

import asyncpg
from pg import fresh_database

from gw.config import Snapshot
from gw.reload import Reloader
from gw.startup.fleet_config import FleetConfig
from gw.startup.reloading import fleet_newest
from gw.store.open import open_store
from gw.store.postgres.config_notices import LISTENER_NAME
from gw.store.revisions import StoredRevision

from e2e.waiting import await_until


class Following:
    """What FleetConfig calls on the reloader: ``adopt``; records what it was given."""

    def __init__(self) -> None:
        self.revision = 1
        self.adopted: list[int] = []

    def current(self) -> Snapshot:
        return cast(Snapshot, type("S", (), {"revision": self.revision})())

    async def adopt(self, stored: StoredRevision) -> None:
        if stored.revision > self.revision:
            self.revision = stored.revision
            self.adopted.append(stored.revision)


async def follow(url: str) -> None:
    gate = asyncio.Event()  # the backoff sleep waits here: the test decides when it ends
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)
        await gate.wait()
        gate.clear()

    async with await open_store(url, Path("unused.db")) as store:
        await store.record_revision(config_hash="a", source="start", time=1.0, content="a")
        following = Following()
        newest = fleet_newest(store, following.current)
        fleet = FleetConfig(url, cast(Reloader, following), newest, sleep=sleep)
        await fleet.start()
        try:
            await store.record_revision(config_hash="b", source="admin", time=2.0, content="b")
            await await_until(lambda: following.adopted == [2], "revision 2 by NOTIFY")

            conn = await asyncpg.connect(url)
            try:
                await conn.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                    " WHERE application_name = $1 AND datname = current_database()",
                    LISTENER_NAME,
                )
                await await_until(lambda: slept, "the listener to notice it is gone")
                # Recorded while nobody listens: its NOTIFY reaches no gateway.
                await store.record_revision(config_hash="c", source="admin", time=3.0, content="c")
                gate.set()  # reconnect
                await await_until(lambda: following.adopted == [2, 3], "revision 3 on reconnect")
            finally:
                await conn.close()
        finally:
            await fleet.stop()


def test_revisions_reach_a_follower_by_notify_and_on_reconnect() -> None:
    with fresh_database() as url:
        asyncio.run(follow(url))
