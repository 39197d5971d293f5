"""The store contract: the fleet's gateway registry (PostgreSQL; a SQLite store has none),
the ``gw_config`` notices a new config revision sends, and a revision recorded only while
the one it was edited from is the newest."""

from __future__ import annotations

import asyncio
from pathlib import Path

import asyncpg
import pytest
from pg import fresh_database
from store_targets import Target, run

from gw.store.open import open_store
from gw.store.port import GatewayRow, StateStore
from gw.store.postgres.config_notices import ConfigNotices, NoticesLost
from gw.store.revisions import RevisionMovedError

NOW = 1_800_000_000.0


def row(gateway_id: str, *, at: float, revision: int = 1) -> GatewayRow:
    return GatewayRow(
        id=gateway_id,
        url=f"http://127.0.0.1:{8000 + len(gateway_id)}",
        host="h",
        pid=42,
        started_at=NOW,
        revision=revision,
        config_hash=f"hash-{revision}",
        ready=True,
        heartbeat_at=at,
        heartbeat_s=5.0,
    )


def test_the_registry_keeps_one_row_per_gateway(target: Target) -> None:
    async def body(store: StateStore) -> None:
        registry = store.gateways()
        if target.engine == "sqlite":
            assert registry is None  # one gateway per SQLite database: no fleet
            return
        assert registry is not None
        assert await registry.list() == []
        await registry.beat(row("a", at=NOW))
        await registry.beat(row("bb", at=NOW + 1))
        await registry.beat(row("a", at=NOW + 2, revision=2))  # a heartbeat replaces
        rows = await registry.list()
        assert [(r.id, r.revision, r.heartbeat_at) for r in rows] == [
            ("a", 2, NOW + 2),
            ("bb", 1, NOW + 1),
        ]
        assert rows[0] == row("a", at=NOW + 2, revision=2)
        assert await registry.prune(before=NOW + 1.5) == 1  # bb's last beat is older
        assert [r.id for r in await registry.list()] == ["a"]
        await registry.remove("a")
        assert await registry.list() == []

    run(target, body)


def test_a_new_revision_is_announced_to_listeners_and_a_repeat_is_not() -> None:
    async def main(url: str) -> None:
        async with await open_store(url, Path("unused.db")) as store:
            notices = await ConfigNotices.listen(url)
            try:
                first = await store.record_revision(config_hash="a", source="start", time=1.0)
                assert await asyncio.wait_for(notices.wait(), 10) == first
                await store.record_revision(config_hash="a", source="start", time=2.0)
                second = await store.record_revision(config_hash="b", source="admin", time=3.0)
                # The repeat of "a" recorded nothing, so the next notice is the new one.
                assert await asyncio.wait_for(notices.wait(), 10) == second == first + 1
            finally:
                await notices.close()

    with fresh_database() as url:
        asyncio.run(main(url))


def test_a_listener_whose_connection_ends_is_told() -> None:
    async def main(url: str) -> None:
        notices = await ConfigNotices.listen(url)
        try:
            conn = await asyncpg.connect(url)
            try:
                await conn.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                    " WHERE datname = current_database() AND pid <> pg_backend_pid()"
                )
            finally:
                await conn.close()
            try:
                await asyncio.wait_for(notices.wait(), 10)
            except NoticesLost:
                return
            raise AssertionError("no NoticesLost after the connection was terminated")
        finally:
            await notices.close()

    with fresh_database() as url:
        asyncio.run(main(url))


def test_a_revision_edited_from_one_no_longer_newest_is_refused(target: Target) -> None:
    """Two gateways' admin writes made from one revision: the second is not recorded."""

    async def body(store: StateStore) -> None:
        first = await store.record_revision(config_hash="a", source="start", time=1.0)
        second = await store.record_revision(
            config_hash="b", source="admin", time=2.0, parent=first
        )
        assert second == first + 1
        with pytest.raises(RevisionMovedError) as moved:
            await store.record_revision(config_hash="c", source="admin", time=3.0, parent=first)
        assert moved.value.newest == second
        assert [r.hash for r in await store.list_revisions()] == ["b", "a"]

    run(target, body)
