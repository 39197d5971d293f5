"""API key rows in SQLite: only digests stored, found by digest, listed, revoked, counted;
IP allowlists stored, and migration 4 adding them to older databases."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import msgspec
import pytest

from gw.store import LATEST_VERSION, SqliteStore
from gw.store.api_keys import ApiKey, new_key, parse_scopes
from gw.store.ip_allowlist import parse_allowlist
from gw.store.migrations import MIGRATIONS


def test_a_key_round_trips_and_only_its_digest_is_stored(tmp_path: Path) -> None:
    path = tmp_path / "gw.db"
    made = new_key(
        tenant="team-a",
        name="app",
        scopes=("inference", "usage:read"),
        models=("chat", "mock/mock-1"),
        created_at=100.0,
        expires_at=200.0,
    )
    plain = new_key(tenant="team-b", created_at=101.0)

    async def scenario() -> None:
        async with await SqliteStore.open(path) as store:
            await store.create_key(made.key)
            await store.create_key(plain.key)
            assert await store.find_key_by_digest(made.key.digest) == made.key
            assert await store.find_key_by_digest(plain.key.digest) == plain.key
            assert await store.find_key_by_digest("0" * 64) is None
            assert [k.id for k in await store.list_keys()] == [made.key.id, plain.key.id]
            found = await store.find_key_by_digest(plain.key.digest)
            assert found is not None
            assert found.models is None
            assert found.scopes == ("inference",)

    asyncio.run(scenario())
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(FULL)")
        rows = conn.execute("SELECT * FROM api_keys").fetchall()
    assert len(rows) == 2
    raw = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.is_file())
    for key in (made, plain):
        assert key.plaintext.encode() not in raw
        assert key.plaintext[3:20].encode() not in raw
        assert key.key.digest.encode() in raw


def test_a_digest_is_unique(tmp_path: Path) -> None:
    made = new_key(tenant="t", created_at=1.0)
    twin = msgspec.structs.replace(made.key, id="key_other")

    async def scenario() -> None:
        async with await SqliteStore.open(tmp_path / "gw.db") as store:
            await store.create_key(made.key)
            with pytest.raises(sqlite3.IntegrityError):
                await store.create_key(twin)
            assert len(await store.list_keys()) == 1

    asyncio.run(scenario())


def test_revoke_keeps_the_first_time_and_unknown_ids_are_none(tmp_path: Path) -> None:
    made = new_key(tenant="t", created_at=1.0)

    async def scenario() -> None:
        async with await SqliteStore.open(tmp_path / "gw.db") as store:
            await store.create_key(made.key)
            first = await store.revoke_key(made.key.id, time=10.0)
            again = await store.revoke_key(made.key.id, time=20.0)
            assert first is not None
            assert again is not None
            assert first.revoked_at == again.revoked_at == 10.0
            assert await store.revoke_key("key_missing", time=30.0) is None
            found = await store.find_key_by_digest(made.key.digest)
            assert found is not None
            assert found.revoked_at == 10.0  # found even when revoked: the server says so

    asyncio.run(scenario())


def test_active_keys_exclude_revoked_and_expired(tmp_path: Path) -> None:
    forever = new_key(tenant="t", created_at=1.0)
    expiring = new_key(tenant="t", created_at=1.0, expires_at=50.0)
    revoked = new_key(tenant="t", created_at=1.0)

    async def scenario() -> tuple[int, int, int]:
        async with await SqliteStore.open(tmp_path / "gw.db") as store:
            empty = await store.count_active_keys(now=10.0)
            for key in (forever, expiring, revoked):
                await store.create_key(key.key)
            await store.revoke_key(revoked.key.id, time=5.0)
            return (
                empty,
                await store.count_active_keys(now=10.0),
                await store.count_active_keys(now=50.0),
            )

    assert asyncio.run(scenario()) == (0, 2, 1)


def test_scopes_parse() -> None:
    assert parse_scopes("inference") == ("inference",)
    assert parse_scopes(" inference , usage:read,inference") == ("inference", "usage:read")
    assert parse_scopes("admin,*") == ("*",)
    with pytest.raises(ValueError, match="unknown scope 'root'"):
        parse_scopes("inference,root")
    with pytest.raises(ValueError, match="no scope"):
        parse_scopes(" , ")


def test_an_ip_allowlist_round_trips_and_none_means_any(tmp_path: Path) -> None:
    limited = new_key(
        tenant="t", created_at=1.0, allowed_ips=parse_allowlist(["10.0.0.0/8", "2001:db8::1"])
    )
    anywhere = new_key(tenant="t", created_at=2.0)

    async def scenario() -> list[ApiKey | None]:
        async with await SqliteStore.open(tmp_path / "gw.db") as store:
            await store.create_key(limited.key)
            await store.create_key(anywhere.key)
            return [
                await store.find_key_by_digest(limited.key.digest),
                await store.find_key_by_digest(anywhere.key.digest),
                *await store.list_keys(),
            ]

    found, plain, *listed = asyncio.run(scenario())
    assert found is not None
    assert found.allowed_ips == ("10.0.0.0/8", "2001:db8::1/128")
    assert found == limited.key
    assert plain is not None
    assert plain.allowed_ips is None
    assert listed == [limited.key, anywhere.key]
    with sqlite3.connect(tmp_path / "gw.db") as conn:
        stored = dict(conn.execute("SELECT id, allowed_ips FROM api_keys").fetchall())
    assert stored == {limited.key.id: '["10.0.0.0/8","2001:db8::1/128"]', anywhere.key.id: None}


def test_a_schema_3_database_migrates_and_its_keys_allow_any_address(tmp_path: Path) -> None:
    """Keys made before allowlists existed keep working from anywhere after the upgrade."""
    path = tmp_path / "gw.db"
    old = new_key(tenant="t", created_at=1.0, scopes=("inference",))
    with sqlite3.connect(path) as conn:
        for migration in MIGRATIONS[:3]:
            for statement in migration.statements:
                conn.execute(statement)
        conn.execute("PRAGMA user_version = 3")
        conn.execute(
            "INSERT INTO api_keys (id, digest, prefix, suffix, tenant, name, scopes, models,"
            " created_at) VALUES (?, ?, ?, ?, 't', NULL, '[\"inference\"]', NULL, 1.0)",
            (old.key.id, old.key.digest, old.key.prefix, old.key.suffix),
        )
    assert "allowed_ips" not in _columns(path)
    new = new_key(tenant="t", created_at=2.0, allowed_ips=("127.0.0.1/32",))

    async def scenario() -> tuple[int, ApiKey | None, ApiKey | None]:
        async with await SqliteStore.open(path) as store:
            await store.create_key(new.key)
            return (
                await store.schema_version(),
                await store.find_key_by_digest(old.key.digest),
                await store.find_key_by_digest(new.key.digest),
            )

    version, migrated, made = asyncio.run(scenario())
    assert version == LATEST_VERSION >= 4
    assert "allowed_ips" in _columns(path)
    assert migrated == old.key
    assert migrated.allowed_ips is None
    assert made is not None
    assert made.allowed_ips == ("127.0.0.1/32",)


def _columns(path: Path) -> set[str]:
    with sqlite3.connect(path) as conn:
        return {row[1] for row in conn.execute("PRAGMA table_info(api_keys)")}
