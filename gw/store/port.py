"""The state store port: what the server and the CLI call on a store, whichever engine.

``SqliteStore`` (gw/store/sqlite.py, the embedded default) and ``PostgresStore``
(gw/store/postgres/, a fleet's shared state) both implement ``StateStore``; callers type
against it, and ``gw.store.open.open_store`` picks the engine from ``state.url``. The
objects a store hands out for one concept (background jobs, runs, the usage journal's
recovery, trace reads of the request path) have small ports of their own here.

One contract suite (tests/contract/store/) runs the same tests against both engines.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import TracebackType
from typing import Protocol, Self

import msgspec

from gw.config.schema import TenantBudget
from gw.ports import CachedAnswerRows, UsageRow
from gw.record import TraceRecord
from gw.store.api_keys import ApiKey
from gw.store.file_checks import StoreProblem
from gw.store.idempotency_keys import HeldKey, StoredAnswer
from gw.store.response_jobs import Job, JobStatus, SealedContent
from gw.store.revisions import RevisionRow, StoredRevision
from gw.store.runs import RunRow
from gw.store.usage import UsageGroup, UsageTotals
from gw.store.usage_recovery import RecoveredRows


class UsageRecoveryPort(Protocol):
    """Journal rows back into the ledger at start-up (gw/store/usage_recovery.py)."""

    async def insert(self, rows: Sequence[UsageRow]) -> RecoveredRows: ...


class TraceLookup(Protocol):
    """Trace reads of the request path (``previous_response_id``)."""

    async def get_trace(self, request_id: str) -> TraceRecord | None: ...


class RunLog(Protocol):
    """Each run of ``gw serve`` and the traces it lost (gw/store/runs.py)."""

    async def begin(
        self, started_at: float, *, gateway: str | None = None
    ) -> tuple[int, RunRow | None]: ...

    async def record_lost(
        self, run: int, *, routed: int, unrouted: int, stopped_at: float | None = None
    ) -> None: ...

    async def record_counted(self, run: int, *, routed_lost: int, counted_from: float) -> None: ...

    async def count_routed_lost(
        self, since: float, until: float, *, gateway: str | None
    ) -> tuple[int, float]:
        """The usage rows of ``gateway`` (None: rows that name none, written before gw
        recorded it) timed in ``[since, until)`` without a trace, counted from the oldest
        trace kept when later; (count, counted from). May read every row of the period:
        the SQLite store runs it in a thread."""
        ...


class ResponseJobStore(Protocol):
    """The background Responses jobs (gw/store/response_jobs.py documents each call)."""

    async def enqueue(self, job: Job, request: bytes, *, limit: int) -> int | None: ...

    async def get(self, request_id: str) -> Job | None: ...

    async def content(self, request_id: str) -> SealedContent | None: ...

    async def claim(self, *, now: float) -> tuple[Job, bytes] | None: ...

    async def finish(
        self,
        request_id: str,
        status: JobStatus,
        *,
        now: float,
        expires_at: float,
        result: bytes | None = None,
        error: tuple[str, str] | None = None,
    ) -> bool: ...

    async def cancel(self, request_id: str, *, now: float) -> bool: ...

    async def take_result(self, request_id: str) -> bytes | None: ...

    async def delete(self, request_id: str) -> bool: ...

    async def interrupted(self, *, now: float, message: str) -> int: ...

    async def expire(self, *, now: float, forget_before: float) -> tuple[int, int]: ...

    async def waiting(self) -> int: ...


class IdempotencyStore(Protocol):
    """Keys held for ``Idempotency-Key`` retries (gw/store/idempotency_keys.py documents
    each call)."""

    async def claim(
        self,
        scope: str,
        key_digest: str,
        *,
        fingerprint: str,
        request_id: str,
        now: float,
        until: float,
    ) -> HeldKey | None: ...

    async def complete(
        self,
        scope: str,
        key_digest: str,
        *,
        request_id: str,
        stored: StoredAnswer,
        now: float,
        expires_at: float,
        max_total: int,
    ) -> bool: ...

    async def release(self, scope: str, key_digest: str, *, request_id: str) -> None: ...

    async def expire(self, *, now: float) -> int: ...


class StateStore(Protocol):
    """A state store: API keys, traces, the usage ledger and its rollup, config
    revisions, runs, background jobs, retention. Each method is documented on
    ``SqliteStore``; both engines give the same answers (the contract suite checks)."""

    @property
    def location(self) -> str:
        """Where the state lives, for people: the database's path, or its URL with the
        password hidden (``gw.config.state_url.safe_url``)."""
        ...

    async def close(self) -> None: ...

    async def __aenter__(self) -> Self: ...

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...

    async def schema_version(self) -> int: ...

    async def size_bytes(self) -> int | None:
        """Bytes the state takes on disk; None where the store cannot tell (PostgreSQL:
        the server's business)."""
        ...

    # -- health ---------------------------------------------------------------------------

    async def writable(self) -> None:
        """Raise ``StoreUnavailableError`` while a write could not succeed (a store that
        can recover, recovers here)."""
        ...

    async def local_problem(self) -> StoreProblem | None:
        """What this machine sees wrong with the store now (a file gone, a disk full);
        None for a server-side store, whose health ``ping`` tells."""
        ...

    async def ping(self) -> None: ...

    # -- traces ---------------------------------------------------------------------------

    async def write_traces(self, traces: Sequence[TraceRecord]) -> None: ...

    async def list_traces(
        self, *, limit: int = 20, client_request_id: str | None = None
    ) -> list[TraceRecord]: ...

    async def traces_written_after(
        self, cursor: int | None, *, limit: int
    ) -> tuple[list[TraceRecord], int]: ...

    async def traces_between(
        self, since: float, until: float, *, limit: int
    ) -> list[TraceRecord]: ...

    async def get_trace(self, request_id: str) -> TraceRecord | None: ...

    def request_path_traces(self) -> TraceLookup: ...

    # -- what the store hands out per concept ---------------------------------------------

    def response_jobs(self) -> ResponseJobStore: ...

    def idempotency_keys(self) -> IdempotencyStore: ...

    def cached_answers(self) -> CachedAnswerRows: ...

    def runs(self) -> RunLog: ...

    def usage_recovery(self) -> UsageRecoveryPort: ...

    def gateways(self) -> GatewayRegistry | None:
        """The fleet's gateway registry (PostgreSQL); None for a gateway alone (SQLite)."""
        ...

    # -- config revisions -----------------------------------------------------------------

    async def record_revision(
        self,
        *,
        config_hash: str,
        source: str,
        time: float,
        content: str | None = None,
        redacted: str | None = None,
        parent: int | None = None,
        actor: str | None = None,
        reason: str | None = None,
    ) -> int: ...

    async def list_revisions(self, *, limit: int | None = None) -> list[RevisionRow]: ...

    async def get_revision(self, revision: int) -> StoredRevision | None: ...

    # -- api keys -------------------------------------------------------------------------

    async def create_key(self, key: ApiKey) -> None: ...

    async def list_keys(self) -> list[ApiKey]: ...

    async def revoke_key(self, key_id: str, *, time: float) -> ApiKey | None: ...

    async def set_key_budget(self, key_id: str, budget: TenantBudget) -> ApiKey | None: ...

    async def find_key_by_digest(self, digest: str) -> ApiKey | None: ...

    async def count_active_keys(self, *, now: float) -> int: ...

    # -- usage ledger ---------------------------------------------------------------------

    async def write_usage(self, rows: Sequence[UsageRow]) -> None: ...

    async def usage_report(
        self, by: UsageGroup, since: float | None = None, tenant: str | None = None
    ) -> list[UsageTotals]: ...

    async def budget_spend(self, wall: float) -> list[tuple[str, str, float]]: ...

    # -- retention ------------------------------------------------------------------------

    async def trace_volume(self) -> tuple[int, int]: ...

    async def delete_traces_before(self, cutoff: float, *, limit: int) -> tuple[int, int]: ...

    async def delete_oldest_traces(self, *, limit: int) -> tuple[int, int]: ...

    async def delete_usage_before(self, cutoff: float, *, limit: int) -> int: ...

    async def reclaim_space(self) -> int: ...


# -- the fleet's gateway registry (PostgreSQL) ----------------------------------------------


class GatewayRow(msgspec.Struct, frozen=True, kw_only=True):
    """One running ``gw serve`` as it last reported itself (``gw status --json``'s
    ``fleet`` adds ``age_s`` and ``gone`` to these fields)."""

    id: str  # gw/fleet/gateway_id.py: host-pid-random, one per run
    url: str
    host: str
    pid: int
    started_at: float
    revision: int  # the config revision it serves
    config_hash: str
    ready: bool  # what its /readyz says
    heartbeat_at: float  # wall clock of its last heartbeat
    heartbeat_s: float  # its heartbeat interval


class GatewayRegistry(Protocol):
    """Each gateway of a fleet writes its row at start and with every heartbeat."""

    async def beat(self, row: GatewayRow) -> None:
        """Insert or replace ``row`` (by ``id``)."""
        ...

    async def list(self) -> list[GatewayRow]:
        """Every registered gateway, oldest start first."""
        ...

    async def remove(self, gateway_id: str) -> None: ...

    async def prune(self, *, before: float) -> int:
        """Forget gateways whose last heartbeat is older than ``before``; how many."""
        ...
