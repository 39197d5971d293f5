"""State stores behind one port (``gw.store.port.StateStore``): SQLite (``SqliteStore``, the
embedded default) and PostgreSQL (gw/store/postgres/, when ``state.url`` names one);
``gw.store.open.open_store`` picks the engine."""

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
