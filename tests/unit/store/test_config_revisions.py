"""Config revisions in SQLite: stored file text and redacted copy, and migration 3."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

from gw.store import LATEST_VERSION, SqliteStore
from gw.store.migrations import MIGRATIONS
from gw.store.revisions import StoredRevision

TEXT = "# the team's config\nproviders: [{name: mock, kind: mock}]\n"


def make_v2_database(path: Path) -> None:
    """A database as gw left it at schema version 2, with one revision row."""
    with sqlite3.connect(path) as conn:
        for migration in MIGRATIONS[:2]:
            for statement in migration.statements:
                conn.execute(statement)
        conn.execute("PRAGMA user_version = 2")
        conn.execute(
            "INSERT INTO config_revisions (revision, time, source, hash) VALUES (1, 1.0, 'x', 'h1')"
        )


def test_migration_3_keeps_old_rows_and_fills_them_on_the_same_config(tmp_path: Path) -> None:
    path = tmp_path / "gw.db"
    make_v2_database(path)

    async def body() -> tuple[int, StoredRevision | None, StoredRevision | None, int]:
        async with await SqliteStore.open(path) as store:
            version = await store.schema_version()
            before = await store.get_revision(1)
            again = await store.record_revision(
                config_hash="h1", source="start", time=2.0, content=TEXT, redacted="{}"
            )
            return version, before, await store.get_revision(1), again

    version, before, after, again = asyncio.run(body())
    assert version == LATEST_VERSION >= 3
    assert before is not None
    assert (before.content, before.redacted, before.source) == (None, None, "x")
    assert again == 1  # same config: no new revision ...
    assert after is not None
    assert (after.content, after.redacted, after.time) == (TEXT, "{}", 1.0)  # ... filled in


def test_each_revision_keeps_its_text_and_redacted_copy(tmp_path: Path) -> None:
    async def body() -> list[StoredRevision | None]:
        async with await SqliteStore.open(tmp_path / "gw.db") as store:
            await store.record_revision(config_hash="h1", source="start", time=1.0)
            await store.record_revision(
                config_hash="h2", source="file", time=2.0, content=TEXT, redacted='{"a": 1}'
            )
            # a same-hash record never overwrites what a row already holds
            await store.record_revision(
                config_hash="h2", source="file", time=3.0, content="other", redacted="{}"
            )
            return [await store.get_revision(n) for n in (1, 2, 3)]

    first, second, missing = asyncio.run(body())
    assert first is not None
    assert first.content is None  # the built-in default: no file
    assert second is not None
    assert (second.revision, second.source, second.hash) == (2, "file", "h2")
    assert (second.content, second.redacted) == (TEXT, '{"a": 1}')
    assert missing is None
