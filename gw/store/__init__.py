"""State stores. SQLite today (``SqliteStore``); PostgreSQL later behind the same methods."""

from gw.store.migrations import LATEST_VERSION, SchemaTooNewError, StoreError
from gw.store.revisions import RevisionRow
from gw.store.sqlite import SqliteStore
from gw.store.trace_reads import AmbiguousRequestIdError, UnreadableTraceError

__all__ = [
    "LATEST_VERSION",
    "AmbiguousRequestIdError",
    "RevisionRow",
    "SchemaTooNewError",
    "SqliteStore",
    "StoreError",
    "UnreadableTraceError",
]
