"""Where the shared state lives: ``state.url`` (PostgreSQL) and ``state.redis_url`` (Redis).

No URL: the embedded default, SQLite at ``<state-dir>/gw.db`` and limits counted in the
process. A fleet of gateways names one PostgreSQL (``postgresql://`` or ``postgres://``,
libpq's URL form) and one Redis (``redis://``, ``rediss://`` for TLS, ``unix://`` for a
socket). A password belongs in the environment (``PGPASSWORD``, ``~/.pgpass``, or the
whole URL in ``GW_STATE_URL`` / ``GW_REDIS_URL``), not in the file: the file's text is kept
with each config revision. Wherever a URL is shown, its password is hidden (``safe_url``).
"""

from __future__ import annotations

from typing import Final
from urllib.parse import urlsplit, urlunsplit

POSTGRES_SCHEMES: Final = frozenset({"postgresql", "postgres"})
REDIS_SCHEMES: Final = frozenset({"redis", "rediss", "unix"})
HIDDEN: Final = "***"


def state_url_problem(url: str) -> str | None:
    """Why ``url`` cannot name gw's PostgreSQL state store, or None."""
    return _problem(url, POSTGRES_SCHEMES, "postgresql://user@host:5432/dbname")


def redis_url_problem(url: str) -> str | None:
    """Why ``url`` cannot name gw's Redis, or None."""
    return _problem(url, REDIS_SCHEMES, "redis://host:6379/0")


def safe_url(url: str) -> str:
    """``url`` with its password, if any, replaced by ``***``: for logs, status and errors."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return HIDDEN
    if password is None:
        return url
    user = parts.username or ""
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{user}:{HIDDEN}@{host}"))


def _problem(url: str, schemes: frozenset[str], example: str) -> str | None:
    try:
        parts = urlsplit(url)
        _ = parts.port  # raises on a port that is not a number
    except ValueError as exc:
        return f"is not a URL ({exc}); write e.g. {example}"
    if parts.scheme not in schemes:
        names = ", ".join(f"{s}://" for s in sorted(schemes))
        return f"must start with {names} (got {parts.scheme or 'no scheme'!r}); e.g. {example}"
    if parts.scheme != "unix" and not parts.hostname and not parts.query:
        return f"names no host; write e.g. {example}"
    return None
