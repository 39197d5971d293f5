"""The store contract suite runs every test against each engine: SQLite and PostgreSQL.

``target`` is where a test's store lives (a fresh SQLite file, or a fresh PostgreSQL
database from tests/pg.py); ``store_targets.run(target, body)`` opens it with
``open_store``, as ``gw serve`` does, runs ``body`` and closes it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pg import fresh_database
from store_targets import Target


@pytest.fixture
def transport() -> None:
    """The upstream transports of tests/contract/conftest.py mean nothing to a store."""


@pytest.fixture(params=["sqlite", "postgres"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Target]:
    if request.param == "sqlite":
        yield Target("sqlite", None, tmp_path / "gw.db")
        return
    with fresh_database() as url:
        yield Target("postgres", url, tmp_path / "unused.db")
