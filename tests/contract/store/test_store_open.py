"""Choosing the engine: SQLite unless ``state.url`` is set, and asyncpg only then."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest
from pg import fresh_database

from gw.store.migrations import StoreError
from gw.store.open import open_store


def test_without_a_url_asyncpg_is_never_imported(tmp_path: Path) -> None:
    code = (
        "import asyncio, sys\n"
        "from pathlib import Path\n"
        "import gw.wiring, gw.cli.main\n"
        "from gw.store.open import open_store\n"
        "async def main():\n"
        f"    store = await open_store(None, Path({str(tmp_path / 'gw.db')!r}))\n"
        "    await store.close()\n"
        "asyncio.run(main())\n"
        "print('asyncpg' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "False"


def closed_loopback_port() -> int:
    """A port nothing listens on: bound to learn a free one, then released."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_an_unreachable_server_is_named_without_its_password(tmp_path: Path) -> None:
    port = closed_loopback_port()
    url = f"postgresql://gw:hunter2@127.0.0.1:{port}/gw"
    with pytest.raises(StoreError) as caught:
        asyncio.run(open_store(url, tmp_path / "unused.db"))
    message = str(caught.value)
    assert f"postgresql://gw:***@127.0.0.1:{port}/gw" in message
    assert "hunter2" not in message


def test_a_store_names_its_server_without_the_password(tmp_path: Path) -> None:
    with fresh_database() as url:
        parts = urlsplit(url)
        user = parts.username or "postgres"
        secret = urlunsplit(parts._replace(netloc=f"{user}:hunter2@{parts.hostname}:{parts.port}"))

        async def location() -> str:
            async with await open_store(secret, tmp_path / "unused.db") as store:
                return store.location

        shown = asyncio.run(location())
    assert "hunter2" not in shown
    assert shown.startswith(f"postgresql://{user}:***@")


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("SELECT 1", "SELECT 1"),
        ("a = ? AND b IN (?, ?)", "a = $1 AND b IN ($2, $3)"),
        ("?", "$1"),
    ],
)
def test_placeholders_are_numbered_in_order(sql: str, expected: str) -> None:
    from gw.store.postgres.sql import numbered  # noqa: PLC0415 - loads the PostgreSQL package

    assert numbered(sql) == expected


class OldServer:
    """What an older PostgreSQL answers to the version query (and nothing else asked)."""

    async def fetchval(self, sql: str, *params: object) -> str:
        assert "server_version_num" in sql
        return "140011"


def test_a_server_older_than_postgresql_15_is_refused_clearly() -> None:
    from gw.store.postgres.store import PostgresStore  # noqa: PLC0415 - loads the PostgreSQL package

    store = PostgresStore(OldServer(), "postgresql://gw:hunter2@db.example/gw")  # type: ignore[arg-type]  # a stand-in for the pool
    with pytest.raises(StoreError, match="version 14; gw needs PostgreSQL 15 or newer") as caught:
        asyncio.run(store._check_server())  # the check open() runs before migrating
    assert "hunter2" not in str(caught.value)
