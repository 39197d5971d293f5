"""``gw.store.state_migrate`` over generated rows: SQLite to PostgreSQL and back, in
batches smaller than the tables, every table equal at the end (checked outside the
copier too: the two SQLite files hold the same rows)."""

from __future__ import annotations

import asyncio
import math
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import asyncpg
import pytest
from pg import fresh_database

from gw.store.migrations import LATEST_VERSION, MIGRATIONS, SchemaTooNewError
from gw.store.open import open_store
from gw.store.state_migrate import Endpoint, migrate
from gw.store.state_migrate.copy import DestinationNotEmptyError
from gw.store.state_migrate.tables import Kind, fit_rows

USAGE_ROWS = 20_000
BATCH = 1_777  # not a divisor of any table's size: the last batch is a partial one


def _make_source(path: Path) -> None:
    async def create() -> None:
        store = await open_store(None, path)
        await store.close()

    asyncio.run(create())
    conn = sqlite3.connect(path)
    with conn:
        conn.executemany(
            "INSERT INTO usage (request_id, time, day, month, tenant, key_id, route, provider,"
            " model, status, error_code, input_tokens, output_tokens, cached_input_tokens,"
            " cache_write_tokens, reasoning_tokens, cost_usd, usage_source, recovered)"
            " VALUES (?, ?, '2026-12-05', '2026-12', ?, ?, 'chat', 'mock', 'm', ?, ?, ?, ?,"
            " 0, 0, 0, ?, ?, ?)",
            [
                (
                    f"req-{i:06d}",
                    1_764_892_800.0 + i * 0.731,
                    None if i % 7 == 0 else f"tenant-{i % 3}",
                    None if i % 5 == 0 else "key-1",
                    500 if i % 11 == 0 else 200,
                    "upstream_error" if i % 11 == 0 else None,
                    i % 1000,
                    i % 333,
                    None if i % 13 == 0 else i * 1e-7 + 0.1,
                    "estimate" if i % 17 == 0 else "provider",
                    i % 19 == 0,
                )
                for i in range(USAGE_ROWS)
            ],
        )
        conn.executemany(
            "INSERT INTO traces (request_id, time, status, error_code, route, provider, model,"
            " latency_ms, client_request_id, revision, body, size)"
            " VALUES (?, ?, 200, NULL, 'chat', 'mock', 'm', ?, ?, 1, ?, ?)",
            [
                (
                    f"req-{i:06d}",
                    1_764_892_800.0 + i,
                    12.5 + i,
                    None if i % 2 else f"c-{i}",
                    f'{{"request_id":"req-{i:06d}","text":"héllo {i}"}}'.encode(),
                    40 + i,
                )
                for i in range(3_000)
            ],
        )
        conn.execute(
            "INSERT INTO api_keys (id, digest, prefix, suffix, tenant, name, scopes, models,"
            " allowed_ips, created_at, expires_at, revoked_at) VALUES ('key-1', 'sha256:ab',"
            " 'gw_', 'xyz', 'tenant-1', 'ci', '[\"inference\"]', NULL, NULL, 1.5, NULL, NULL)"
        )
        conn.executemany(
            "INSERT INTO config_revisions (revision, time, source, hash, content, redacted)"
            " VALUES (?, ?, 'reload', ?, ?, ?)",
            [(n, 1000.0 + n, f"h{n}", f"models: {n}", None) for n in range(1, 6)],
        )
        conn.execute(
            "INSERT INTO response_jobs (request_id, tenant, key_id, model, status, created_at,"
            " content, request, result) VALUES ('resp_1', NULL, NULL, 'm', 'completed', 1.0,"
            " 'sealed', ?, ?)",
            (bytes(range(256)), b"\x00\xffsealed"),
        )
        conn.executemany(
            "INSERT INTO runs (id, started_at, stopped_at, counted_from) VALUES (?, ?, ?, ?)",
            [(3, 10.0, 20.0, None), (7, 30.0, None, 30.0)],
        )
    conn.close()


def _dump(path: Path) -> dict[str, list[tuple[object, ...]]]:
    conn = sqlite3.connect(path)
    try:
        names = [
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name != 'schema_version'"
            )
        ]
        return {n: sorted(conn.execute(f"SELECT * FROM {n}"), key=repr) for n in names}  # noqa: S608 - names from sqlite_master
    finally:
        conn.close()


def test_sqlite_to_postgres_and_back_keeps_every_row(tmp_path: Path) -> None:
    source, back = tmp_path / "a" / "gw.db", tmp_path / "b" / "gw.db"
    _make_source(source)
    with fresh_database() as url:
        there = asyncio.run(migrate(Endpoint(path=source), Endpoint(url=url), batch=BATCH))
        assert there.ok, there
        rows = {t.name: t.rows for t in there.tables}
        assert rows["usage"] == USAGE_ROWS
        assert rows["traces"] == 3_000
        assert rows["usage_rollup"] > 0
        again = asyncio.run(migrate(Endpoint(url=url), Endpoint(path=back), batch=BATCH))
        assert again.ok, again
        assert [(t.name, t.rows, t.checksum) for t in again.tables] == [
            (t.name, t.rows, t.checksum) for t in there.tables
        ]

        # the copy continues the source's numbering: the next run is 8
        async def next_run() -> int:
            conn = await asyncpg.connect(url)
            try:
                return int(
                    await conn.fetchval("INSERT INTO runs (started_at) VALUES (1.0) RETURNING id")
                )
            finally:
                await conn.close()

        assert asyncio.run(next_run()) == 8
    assert _dump(back) == _dump(source)


def test_a_destination_with_data_is_refused(tmp_path: Path) -> None:
    source, other = tmp_path / "a" / "gw.db", tmp_path / "b" / "gw.db"
    _make_source(source)
    _make_source(other)
    with pytest.raises(DestinationNotEmptyError, match=r"20000 usage rows"):
        asyncio.run(migrate(Endpoint(path=source), Endpoint(path=other)))


def test_postgres_to_postgres(tmp_path: Path) -> None:
    source = tmp_path / "a" / "gw.db"
    _make_source(source)
    with fresh_database() as first, fresh_database() as second:
        assert asyncio.run(migrate(Endpoint(path=source), Endpoint(url=first))).ok
        report = asyncio.run(migrate(Endpoint(url=first), Endpoint(url=second)))
        assert report.ok
        assert {t.name: t.rows for t in report.tables}["usage"] == USAGE_ROWS


def test_an_older_source_is_brought_up_to_date_first(tmp_path: Path) -> None:
    source = tmp_path / "a" / "gw.db"
    source.parent.mkdir()
    older = MIGRATIONS[-2].version  # the one before the latest, whatever its number
    conn = sqlite3.connect(source)
    for migration in MIGRATIONS[:-1]:
        for statement in migration.statements:
            conn.execute(statement)
    conn.execute(
        "INSERT INTO config_revisions (revision, time, source, hash) VALUES (1, 1.0, 'start', 'h')"
    )
    conn.execute(f"PRAGMA user_version = {older}")
    conn.commit()
    conn.close()
    report = asyncio.run(migrate(Endpoint(path=source), Endpoint(path=tmp_path / "b" / "gw.db")))
    assert report.ok
    assert (report.source_version_before, report.schema_version) == (older, LATEST_VERSION)
    assert {t.name: t.rows for t in report.tables}["config_revisions"] == 1


def test_a_newer_source_is_refused(tmp_path: Path) -> None:
    source = tmp_path / "a" / "gw.db"
    _make_source(source)
    conn = sqlite3.connect(source)
    conn.execute(f"PRAGMA user_version = {LATEST_VERSION + 1}")
    conn.close()
    with pytest.raises(SchemaTooNewError, match="newer gw"):
        asyncio.run(migrate(Endpoint(path=source), Endpoint(path=tmp_path / "b" / "gw.db")))


def test_a_copy_that_differs_is_rolled_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "a" / "gw.db"
    _make_source(source)

    def corrupt(
        rows: Sequence[Sequence[object]], kinds: Sequence[Kind]
    ) -> list[tuple[object, ...]]:
        fitted = fit_rows(rows, kinds)
        first = list(fitted[0])
        reals = [n for n, kind in enumerate(kinds) if kind == "real" and first[n] is not None]
        if reals:  # one float of one row, one bit off
            first[reals[0]] = math.nextafter(float(first[reals[0]]), math.inf)  # type: ignore[arg-type]
            fitted[0] = tuple(first)
        return fitted

    monkeypatch.setattr("gw.store.state_migrate.copy.fit_rows", corrupt)
    with fresh_database() as url:
        report = asyncio.run(migrate(Endpoint(path=source), Endpoint(url=url)))
        assert not report.ok
        differ = {t.name for t in report.tables if not t.match}
        assert {"usage", "traces"} <= differ
        assert all(t.rows == t.destination_rows for t in report.tables)

        async def usage_rows() -> int:
            conn = await asyncpg.connect(url)
            try:
                return int(await conn.fetchval("SELECT count(*) FROM usage"))
            finally:
                await conn.close()

        assert asyncio.run(usage_rows()) == 0  # nothing committed
