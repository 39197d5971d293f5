"""Where a migration reads or writes: ``sqlite:PATH`` or a ``postgresql://`` URL."""

from __future__ import annotations

from pathlib import Path

import msgspec

from gw.config.state_url import POSTGRES_SCHEMES, safe_url, state_url_problem
from gw.store.migrations import StoreError


class Endpoint(msgspec.Struct, frozen=True, kw_only=True):
    """One store: a SQLite file (``path``) or a PostgreSQL database (``url``)."""

    path: Path | None = None
    url: str | None = None

    @property
    def label(self) -> str:
        """For messages: the file, or the URL without its password."""
        if self.url is not None:
            return safe_url(self.url)
        return f"sqlite:{self.path}"


def parse_endpoint(text: str, default_database: Path) -> Endpoint:
    """``sqlite:PATH`` (``sqlite:`` alone: ``default_database``, the state dir's gw.db) or
    ``postgresql://...``; anything else raises ``StoreError`` saying what is accepted."""
    scheme, colon, rest = text.partition(":")
    if colon and scheme.lower() == "sqlite":
        # sqlite:///abs/path (the URL spelling some tools use) names /abs/path
        rest = rest[2:] if rest.startswith("//") else rest
        return Endpoint(path=Path(rest).expanduser() if rest else default_database)
    if colon and scheme.lower() in POSTGRES_SCHEMES:
        problem = state_url_problem(text)
        if problem is not None:
            raise StoreError(f"{safe_url(text)} {problem}")
        return Endpoint(url=text)
    raise StoreError(
        f"cannot migrate {safe_url(text)!r}: name a SQLite file as sqlite:PATH (sqlite: alone"
        " for the state dir's gw.db) or a database as postgresql://user@host:5432/dbname"
    )
