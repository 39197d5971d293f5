"""Which store a CLI command reads: the one ``gw serve`` uses with the same settings.

``state.url`` (from the config file, or ``GW_STATE_URL`` over it) names PostgreSQL; with
none, the state directory's SQLite database. A config file that does not load is no
reason to refuse reading state (``gw traces`` helps most when something is broken): then
``GW_STATE_URL`` alone decides. Errors name the store by its path, or by its URL with the
password hidden.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from gw.cli.console import fail
from gw.cli.options import load_effective, resolve_config
from gw.config import ConfigError
from gw.config.state_url import safe_url
from gw.environment import database_path, process_environ
from gw.store.open import open_store, store_errors
from gw.store.port import StateStore

T = TypeVar("T")


@dataclass(frozen=True)
class StateTarget:
    url: str | None  # state.url: PostgreSQL; None: SQLite at ``path``
    path: Path

    @property
    def label(self) -> str:
        return str(self.path) if self.url is None else safe_url(self.url)

    @property
    def shared(self) -> bool:
        """Whether the state is PostgreSQL's (a fleet's), not a file of this machine."""
        return self.url is not None

    def exists(self) -> bool:
        """Whether there is anything to read yet (a server database always is)."""
        return self.url is not None or self.path.exists()

    async def open(self) -> StateStore:
        return await open_store(self.url, self.path)

    def errors(self) -> tuple[type[BaseException], ...]:
        return store_errors(self.url)

    def run(self, work: Callable[[StateStore], Awaitable[T]], *, doing: str = "read") -> T:
        """``work`` on the opened store (closed after); a store error ends the command
        with "cannot <doing> <store>: <error>"."""

        async def main() -> T:
            async with await self.open() as store:
                return await work(store)

        try:
            return asyncio.run(main())
        except self.errors() as error:
            fail(f"cannot {doing} {self.label}: {error}")


def state_target(home: Path, config: Path | None = None) -> StateTarget:
    """The store of the state dir ``home`` under the effective config (see above)."""
    path, explicit = resolve_config(config, home)
    try:
        url = load_effective(path, explicit=explicit).config.state.url
    except (ConfigError, OSError):
        url = process_environ().get("GW_STATE_URL") or None
    return StateTarget(url=url, path=database_path(home))
