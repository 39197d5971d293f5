"""A fresh PostgreSQL database per test, on the server the tests are given.

``GW_TEST_POSTGRES_URL`` names a server and a database to connect to for administration
(default: the local server, ``postgresql://postgres@127.0.0.1:5432/postgres``).
``fresh_database`` creates a uniquely named database there, yields its URL and drops it
afterwards. Where no server answers, a test cannot run: in CI (``CI`` set) it FAILS with
the reason, so the suite never passes without having run; elsewhere it is skipped with it.
"""

from __future__ import annotations

import asyncio
import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import pytest

DEFAULT_URL: Final = "postgresql://postgres@127.0.0.1:5432/postgres"


def server_url() -> str:
    return os.environ.get("GW_TEST_POSTGRES_URL") or DEFAULT_URL


def unavailable(reason: str) -> None:
    """Fail in CI, skip elsewhere, saying why."""
    message = f"PostgreSQL is needed and not available: {reason} (set GW_TEST_POSTGRES_URL)"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def database_url(name: str) -> str:
    """The server's URL with ``name`` as the database."""
    return urlunsplit(urlsplit(server_url())._replace(path=f"/{name}"))


async def _admin(statement: str) -> None:
    conn = await asyncpg.connect(server_url(), timeout=10)
    try:
        await conn.execute(statement)
    finally:
        await conn.close()


@contextmanager
def fresh_database() -> Iterator[str]:
    """The URL of a new, empty database, dropped (connections and all) after."""
    name = f"gw_test_{os.getpid()}_{secrets.token_hex(4)}"
    try:
        asyncio.run(_admin(f'CREATE DATABASE "{name}"'))
    except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError) as exc:
        unavailable(f"{type(exc).__name__}: {exc}")
    try:
        yield database_url(name)
    finally:
        asyncio.run(_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
