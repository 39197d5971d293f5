"""Where a contract test's store lives, and how it is opened: as ``gw serve`` opens it
(``open_store``), so both engines are reached the same way."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from gw.store.open import open_store
from gw.store.port import StateStore

T = TypeVar("T")


@dataclass(frozen=True)
class Target:
    engine: str
    url: str | None
    path: Path

    async def open(self) -> StateStore:
        return await open_store(self.url, self.path)


def run(target: Target, body: Callable[[StateStore], Awaitable[T]]) -> T:
    """Open the store, run ``body`` on it, close it."""

    async def main() -> T:
        async with await target.open() as store:
            return await body(store)

    return asyncio.run(main())
