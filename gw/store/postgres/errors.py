"""The driver's errors a caller reports as "cannot read the store" (gw/store/open.py)."""

from __future__ import annotations

from typing import Final

import asyncpg  # type: ignore[import-untyped]  # asyncpg 0.30 ships no type information

DRIVER_ERRORS: Final[tuple[type[BaseException], ...]] = (
    asyncpg.PostgresError,
    asyncpg.InterfaceError,
)
