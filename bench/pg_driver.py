"""Which PostgreSQL driver the state store uses: asyncpg or psycopg 3 (with psycopg_pool).

Measures what the store does most, on a fresh database of the local server, each driver
through its pool (1 to 8 connections, as gw/store/postgres/database.py opens):

- insert batch: 100 usage-like rows in one transaction (``executemany``: asyncpg pipelines
  it; psycopg 3 runs it in pipeline mode), the median per batch;
- point read: one row by primary key (an API key lookup), the median per read, one at a
  time; and reads per second with 8 concurrent readers.

Run it with an interpreter that has both drivers (gw's own venv has asyncpg only)::

    python3 -m venv build/psycopg-venv
    build/psycopg-venv/bin/pip install 'psycopg[binary]' psycopg_pool asyncpg==0.30.0
    build/psycopg-venv/bin/python bench/pg_driver.py [postgresql://postgres@127.0.0.1/postgres]

Without psycopg it measures asyncpg alone and says so.
"""

from __future__ import annotations

import asyncio
import secrets
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import asyncpg  # type: ignore[import-untyped]

BATCHES = 60
BATCH_ROWS = 100
READS = 3000
CONCURRENT = 8
CONCURRENT_READS = 8000

TABLE = """
CREATE TABLE usage (
    request_id text PRIMARY KEY, time double precision NOT NULL, tenant text,
    route text NOT NULL, model text, status integer NOT NULL,
    input_tokens bigint NOT NULL, output_tokens bigint NOT NULL, cost_usd double precision
)
"""
INSERT = "INSERT INTO usage VALUES ({}) ON CONFLICT (request_id) DO NOTHING"
SELECT = "SELECT * FROM usage WHERE request_id = {}"


def rows(batch: int) -> list[tuple[Any, ...]]:
    now = time.time()
    return [
        (f"r{batch}-{i}", now, "team-a", "chat", "gpt-4o-mini", 200, 100 + i, 10, 0.0001)
        for i in range(BATCH_ROWS)
    ]


async def timed(n: int, call: Callable[[int], Awaitable[object]]) -> list[float]:
    times = []
    for i in range(n):
        start = time.perf_counter()
        await call(i)
        times.append(time.perf_counter() - start)
    return times


async def concurrent_rate(call: Callable[[int], Awaitable[object]]) -> float:
    async def worker(offset: int) -> None:
        for i in range(offset, CONCURRENT_READS, CONCURRENT):
            await call(i)

    start = time.perf_counter()
    await asyncio.gather(*(worker(k) for k in range(CONCURRENT)))
    return CONCURRENT_READS / (time.perf_counter() - start)


async def bench_asyncpg(url: str) -> dict[str, float]:
    pool = await asyncpg.create_pool(url, min_size=1, max_size=CONCURRENT)
    await pool.execute(TABLE)
    insert = INSERT.format(", ".join(f"${i}" for i in range(1, 10)))

    async def batch(i: int) -> None:
        async with pool.acquire() as conn, conn.transaction():
            await conn.executemany(insert, rows(i))

    async def read(i: int) -> object:
        return await pool.fetchrow(SELECT.format("$1"), f"r{i % BATCHES}-{i % BATCH_ROWS}")

    result = await measure(batch, read)
    await pool.close()
    return result


async def bench_psycopg(url: str) -> dict[str, float]:
    from psycopg_pool import AsyncConnectionPool  # noqa: PLC0415 - optional

    pool = AsyncConnectionPool(url, min_size=1, max_size=CONCURRENT, open=False)
    await pool.open()
    async with pool.connection() as conn:
        await conn.execute(TABLE)
    insert = INSERT.format(", ".join(["%s"] * 9))

    async def batch(i: int) -> None:
        async with pool.connection() as conn, conn.transaction(), conn.cursor() as cur:
            await cur.executemany(insert, rows(i))

    async def read(i: int) -> object:
        async with pool.connection() as conn:
            cur = await conn.execute(SELECT.format("%s"), (f"r{i % BATCHES}-{i % BATCH_ROWS}",))
            return await cur.fetchone()

    result = await measure(batch, read)
    await pool.close()
    return result


async def measure(
    batch: Callable[[int], Awaitable[object]], read: Callable[[int], Awaitable[object]]
) -> dict[str, float]:
    batches = await timed(BATCHES, batch)
    await timed(200, read)  # warm: prepared statements, pool
    reads = await timed(READS, read)
    return {
        "insert_batch_ms_p50": statistics.median(batches) * 1e3,
        "point_read_us_p50": statistics.median(reads) * 1e6,
        "point_read_us_p99": statistics.quantiles(reads, n=100)[98] * 1e6,
        "reads_per_s_c8": await concurrent_rate(read),
    }


async def with_database(server: str, body: Callable[[str], Awaitable[dict[str, float]]]) -> Any:
    name = f"gw_bench_{secrets.token_hex(4)}"
    admin = await asyncpg.connect(server)
    await admin.execute(f'CREATE DATABASE "{name}"')
    try:
        return await body(urlunsplit(urlsplit(server)._replace(path=f"/{name}")))
    finally:
        await admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
        await admin.close()


async def main(server: str) -> None:
    drivers: dict[str, Callable[[str], Awaitable[dict[str, float]]]] = {"asyncpg": bench_asyncpg}
    try:
        import psycopg_pool  # noqa: F401, PLC0415 - only to know whether it is there
    except ImportError:
        print("psycopg 3 / psycopg_pool not installed here: measuring asyncpg alone")
    else:
        drivers["psycopg3"] = bench_psycopg
    print(f"{BATCH_ROWS} rows per batch, {READS} point reads, {CONCURRENT} concurrent readers")
    for name, body in drivers.items():
        figures = await with_database(server, body)
        shown = ", ".join(f"{key} {value:,.1f}" for key, value in figures.items())
        print(f"{name:9} {shown}")


if __name__ == "__main__":
    asyncio.run(
        main(sys.argv[1] if len(sys.argv) > 1 else "postgresql://postgres@127.0.0.1/postgres")
    )
