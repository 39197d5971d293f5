"""The schema as an ordered list of versioned migrations (data only, no I/O), for SQLite
and PostgreSQL.

A database records the version it is at in ``PRAGMA user_version`` (the source of truth,
updated in the same transaction as the migration) and, for people reading the file, one
row per applied migration in the ``schema_version`` table. ``SqliteStore.open`` applies
``pending_migrations(current)`` in order; a database at a version newer than this code
is refused rather than misread.

PostgreSQL joined at version ``POSTGRES_BASELINE``: that migration's ``postgres`` form is
the whole schema as of that version (gw/store/postgres/schema.py), which a fresh
PostgreSQL database gets in one step; the migrations after it carry a ``postgres`` form
of their own, applied like SQLite's (``postgres_pending``). The PostgreSQL store records
its version in its ``schema_version`` table and applies them under an advisory lock, so
gateways starting together apply each once.

Rules for adding a migration: append, never edit or reorder a released one; give it the
next version number and both forms, ``statements`` (SQLite) and ``postgres``; only
statements valid inside a transaction (no ``VACUUM``, no ``PRAGMA journal_mode``).
"""

from __future__ import annotations

from typing import Final

import msgspec

from gw.store.budget_tables import V14_POSTGRES, V14_SQLITE
from gw.store.postgres.schema import BASELINE, GATEWAYS_TABLE


class StoreError(Exception):
    """Base of the errors a state store reports to its operator (not to API clients)."""


class SchemaTooNewError(StoreError):
    """The database was written by a newer gw; reading it could misinterpret its data."""


class Migration(msgspec.Struct, frozen=True, kw_only=True):
    version: int
    description: str
    statements: tuple[str, ...]  # SQLite
    # PostgreSQL; None before POSTGRES_BASELINE, which holds the whole schema (see above)
    postgres: tuple[str, ...] | None = None


SCHEMA_VERSION_TABLE: Final = """
CREATE TABLE IF NOT EXISTS schema_version (
    version INTEGER PRIMARY KEY,
    applied_at REAL NOT NULL,
    description TEXT NOT NULL
)
"""

# Version 8's statements, made from one text per period (never edit: released SQL).
_V8_GROUP: Final = (
    "period, period_start, day, month, ifnull(tenant, x''), ifnull(key_id, x''), route,"
    " ifnull(provider, x''), ifnull(model, x'')"
)
_V8_COLUMNS: Final = (
    "period, period_start, day, month, tenant, key_id, route, provider, model, requests,"
    " errors, input_tokens, cached_input_tokens, output_tokens, reasoning_tokens, cost_usd,"
    " unpriced, estimated, recovered"
)


def _v8_start(time: str, seconds: int) -> str:
    """The start of the UTC period holding ``time``: the division may round up just below
    a boundary, and the second term takes that back, so start <= time < start + seconds."""
    cut = f"CAST({time} / {seconds} AS INTEGER) * {seconds}"
    return f"{cut} - {seconds} * ({cut} > {time})"


def _v8_upsert(period: str, seconds: int) -> str:
    """The trigger's statement adding the new row to its group of ``period``."""
    measures = (
        "requests", "errors", "input_tokens", "cached_input_tokens", "output_tokens",
        "reasoning_tokens", "cost_usd", "unpriced", "estimated", "recovered",
    )  # fmt: skip
    adds = ", ".join(f"{m} = {m} + excluded.{m}" for m in measures)
    return (
        f"INSERT INTO usage_rollup ({_V8_COLUMNS}) VALUES ("  # noqa: S608 - fixed text
        f"'{period}', {_v8_start('NEW.time', seconds)}, NEW.day, NEW.month, NEW.tenant,"
        " NEW.key_id, NEW.route, NEW.provider, NEW.model, 1, NEW.error_code IS NOT NULL,"
        " NEW.input_tokens, NEW.cached_input_tokens, NEW.output_tokens,"
        " NEW.reasoning_tokens, ifnull(NEW.cost_usd, 0.0),"
        " NEW.cost_usd IS NULL AND NEW.input_tokens + NEW.output_tokens > 0,"
        " NEW.usage_source IS 'estimate', NEW.recovered)"
        f" ON CONFLICT ({_V8_GROUP}) DO UPDATE SET {adds}"
    )


def _v8_backfill(period: str, seconds: int) -> str:
    """The rows already in ``usage``, summed into their groups of ``period``."""
    return (
        f"INSERT INTO usage_rollup ({_V8_COLUMNS})"  # noqa: S608 - fixed text
        f" SELECT '{period}', {_v8_start('time', seconds)} AS start, day, month, tenant,"
        " key_id, route, provider, model, COUNT(*), SUM(error_code IS NOT NULL),"
        " SUM(input_tokens), SUM(cached_input_tokens), SUM(output_tokens),"
        " SUM(reasoning_tokens), TOTAL(cost_usd),"
        " SUM(cost_usd IS NULL AND input_tokens + output_tokens > 0),"
        " SUM(usage_source IS 'estimate'), SUM(recovered)"
        " FROM usage GROUP BY start, day, month, tenant, key_id, route, provider, model"
    )


# Version 10's statements, the same text in both engines (never edit: released SQL).
_V10_GATEWAY: Final = (
    "ALTER TABLE traces ADD COLUMN gateway TEXT",
    "ALTER TABLE usage ADD COLUMN gateway TEXT",
    "ALTER TABLE runs ADD COLUMN gateway TEXT",
)

_V12_AUDIT: Final = (
    "ALTER TABLE config_revisions ADD COLUMN actor TEXT",
    "ALTER TABLE config_revisions ADD COLUMN reason TEXT",
)


def _v15_cached_answers(real: str, blob: str) -> tuple[str, ...]:
    """Version 15's statements in an engine's types (never edit: released SQL)."""
    return (
        f"""
        CREATE TABLE cached_answers (
            key TEXT PRIMARY KEY,
            expires_at {real} NOT NULL,
            size INTEGER NOT NULL,
            entry {blob} NOT NULL
        )
        """,
        "CREATE INDEX cached_answers_expires ON cached_answers (expires_at)",
    )


def _v13_idempotency(real: str, blob: str) -> tuple[str, ...]:
    """Version 13's statements in an engine's types (never edit: released SQL)."""
    return (
        f"""
        CREATE TABLE idempotency_keys (
            scope TEXT NOT NULL,
            key_digest TEXT NOT NULL,
            fingerprint TEXT NOT NULL,
            request_id TEXT NOT NULL,
            state TEXT NOT NULL,
            created_at {real} NOT NULL,
            expires_at {real} NOT NULL,
            status INTEGER,
            route TEXT,
            media_type TEXT,
            answer {blob},
            size INTEGER NOT NULL,
            PRIMARY KEY (scope, key_digest)
        )
        """,
        "CREATE INDEX idempotency_keys_expires ON idempotency_keys (expires_at)",
    )


MIGRATIONS: Final[tuple[Migration, ...]] = (
    Migration(
        version=1,
        description="traces and config revisions",
        statements=(
            # ``route`` is the model or route name the client asked for; ``body`` is the
            # whole TraceRecord as msgspec JSON, the columns beside it exist to filter and
            # sort without decoding.
            """
            CREATE TABLE traces (
                request_id TEXT PRIMARY KEY,
                time REAL NOT NULL,
                status INTEGER NOT NULL,
                error_code TEXT,
                route TEXT NOT NULL,
                provider TEXT,
                model TEXT,
                latency_ms REAL NOT NULL,
                client_request_id TEXT,
                revision INTEGER NOT NULL,
                body BLOB NOT NULL
            )
            """,
            "CREATE INDEX traces_time ON traces (time)",
            "CREATE INDEX traces_client_request_id ON traces (client_request_id)",
            """
            CREATE TABLE config_revisions (
                revision INTEGER PRIMARY KEY,
                time REAL NOT NULL,
                source TEXT NOT NULL,
                hash TEXT NOT NULL
            )
            """,
        ),
    ),
    Migration(
        version=2,
        description="api keys and the usage ledger",
        statements=(
            # Only the key's SHA-256 digest is stored (invariant 9); prefix and suffix are
            # for display. ``scopes`` and ``models`` are JSON arrays (models NULL: any).
            """
            CREATE TABLE api_keys (
                id TEXT PRIMARY KEY,
                digest TEXT NOT NULL UNIQUE,
                prefix TEXT NOT NULL,
                suffix TEXT NOT NULL,
                tenant TEXT NOT NULL,
                name TEXT,
                scopes TEXT NOT NULL,
                models TEXT,
                created_at REAL NOT NULL,
                expires_at REAL,
                revoked_at REAL
            )
            """,
            # One row per request, de-duplicated by request id. ``day`` and ``month`` are the
            # budget period labels (gw/execution/periods.py renders both, invariant 10).
            """
            CREATE TABLE usage (
                request_id TEXT PRIMARY KEY,
                time REAL NOT NULL,
                day TEXT NOT NULL,
                month TEXT NOT NULL,
                tenant TEXT,
                key_id TEXT,
                route TEXT NOT NULL,
                provider TEXT,
                model TEXT,
                status INTEGER NOT NULL,
                error_code TEXT,
                input_tokens INTEGER NOT NULL,
                output_tokens INTEGER NOT NULL,
                cached_input_tokens INTEGER NOT NULL,
                cache_write_tokens INTEGER NOT NULL,
                reasoning_tokens INTEGER NOT NULL,
                cost_usd REAL,
                usage_source TEXT
            )
            """,
            "CREATE INDEX usage_time ON usage (time)",
            "CREATE INDEX usage_tenant_day ON usage (tenant, day)",
            "CREATE INDEX usage_tenant_month ON usage (tenant, month)",
        ),
    ),
    Migration(
        version=3,
        description="config revisions keep the file's text and a redacted copy",
        statements=(
            # ``content``: the config file's text as applied, comments included, so a
            # rollback restores it exactly; NULL for the built-in default and older rows.
            # ``redacted``: the resolved config as JSON with secret-bearing values hidden
            # (gw/config/redact.py), for display and diff.
            "ALTER TABLE config_revisions ADD COLUMN content TEXT",
            "ALTER TABLE config_revisions ADD COLUMN redacted TEXT",
        ),
    ),
    Migration(
        version=4,
        description="API keys may carry an IP allowlist",
        statements=(
            # JSON array of CIDR strings (a bare address is stored as /32 or /128); NULL
            # means any address may use the key.
            "ALTER TABLE api_keys ADD COLUMN allowed_ips TEXT",
        ),
    ),
    Migration(
        version=5,
        description="traces record their body size",
        statements=(
            # Bytes of ``body``, written with the row, so the pruner sums a small column
            # instead of reading every body (``length`` of TEXT reads the whole value).
            "ALTER TABLE traces ADD COLUMN size INTEGER NOT NULL DEFAULT 0",
            "UPDATE traces SET size = length(CAST(body AS BLOB))",
            # Covering for ``sum(size)`` and the time-ordered prune deletes: the size sum
            # reads this index, not the table (whose rows spill bodies to overflow pages).
            "CREATE INDEX traces_time_size ON traces (time, size)",
            "DROP INDEX traces_time",
        ),
    ),
    Migration(
        version=6,
        description="background Responses jobs",
        statements=(
            # One row per background Responses request (gw/store/response_jobs.py), keyed
            # by gw's request id. ``request`` and ``result`` are age-encrypted (the vault's
            # identity) and set to NULL, with secure_delete, when the result is fetched or
            # the retention ends; ``content`` says which: held, fetched, expired, discarded.
            # The rest is metadata: who, which route, status and times.
            """
            CREATE TABLE response_jobs (
                request_id TEXT PRIMARY KEY,
                tenant TEXT,
                key_id TEXT,
                model TEXT NOT NULL,
                status TEXT NOT NULL,
                created_at REAL NOT NULL,
                started_at REAL,
                finished_at REAL,
                expires_at REAL,
                error_code TEXT,
                error_message TEXT,
                content TEXT NOT NULL,
                request BLOB,
                result BLOB
            )
            """,
            "CREATE INDEX response_jobs_status ON response_jobs (status, created_at)",
            "CREATE INDEX response_jobs_tenant ON response_jobs (tenant, status)",
        ),
    ),
    Migration(
        version=7,
        description="usage rows say whether they were recovered from the usage journal",
        statements=(
            # 1: written at start-up from the usage journal (gw/telemetry/usage_journal.py)
            # of a run killed before its batch was committed; its trace may be missing.
            "ALTER TABLE usage ADD COLUMN recovered INTEGER NOT NULL DEFAULT 0",
        ),
    ),
    Migration(
        version=8,
        description="usage summed per UTC hour and day, tenant, key, route, provider and model",
        statements=(
            # The usage report's sums per period and group (gw/store/usage_rollup.py), so a
            # report reads as many rows as there are groups per period, not requests.
            # ``period`` is 'hour' or 'day' (UTC), ``period_start`` its start in epoch
            # seconds; every row is summed into both. ``day`` and ``month`` are the rows'
            # budget labels, for the by-day report and the budgets. The measures are the
            # report's (gw/store/usage.py).
            """
            CREATE TABLE usage_rollup (
                period TEXT NOT NULL,
                period_start INTEGER NOT NULL,
                day TEXT NOT NULL,
                month TEXT NOT NULL,
                tenant TEXT,
                key_id TEXT,
                route TEXT NOT NULL,
                provider TEXT,
                model TEXT,
                requests INTEGER NOT NULL,
                errors INTEGER NOT NULL,
                input_tokens INTEGER NOT NULL,
                cached_input_tokens INTEGER NOT NULL,
                output_tokens INTEGER NOT NULL,
                reasoning_tokens INTEGER NOT NULL,
                cost_usd REAL NOT NULL,
                unpriced INTEGER NOT NULL,
                estimated INTEGER NOT NULL,
                recovered INTEGER NOT NULL
            )
            """,
            # One row per group: NULL (no tenant, key, provider or model) is a group of its
            # own, spelled x'' in the index (a BLOB never equals the TEXT names stored).
            f"CREATE UNIQUE INDEX usage_rollup_group ON usage_rollup ({_V8_GROUP})",
            # For the budgets seeded at start (``SqliteStore.budget_spend``).
            "CREATE INDEX usage_rollup_day ON usage_rollup (period, day, tenant)",
            "CREATE INDEX usage_rollup_month ON usage_rollup (period, month, tenant)",
            # Kept in the transaction that writes the row: on INSERT only (a row ``INSERT
            # OR IGNORE`` skips fires nothing), so deleting old rows (``state.usage_max_age``)
            # leaves the sums.
            "CREATE TRIGGER usage_rollup_insert AFTER INSERT ON usage BEGIN"
            f" {_v8_upsert('hour', 3600)}; {_v8_upsert('day', 86400)}; END",
            # The rows written before this version, summed the same way.
            _v8_backfill("hour", 3600),
            _v8_backfill("day", 86400),
        ),
    ),
    Migration(
        version=9,
        description="each run of gw serve, with the traces it lost",
        statements=(
            # One row per ``gw serve`` start (gw/store/runs.py), so the traces a run lost
            # are known after it ends, cleanly or killed. ``routed_lost`` counts traces of
            # requests that have a usage row, ``unrouted_lost`` of those refused before
            # routing (no usage row). Both are written with each trace batch and at a clean
            # stop (``stopped_at``); after a kill, the next start counts ``routed_lost``
            # again from the facts (the run's usage rows without a trace) from
            # ``counted_from`` on, as traces older than that were pruned.
            """
            CREATE TABLE runs (
                id INTEGER PRIMARY KEY,
                started_at REAL NOT NULL,
                stopped_at REAL,
                routed_lost INTEGER NOT NULL DEFAULT 0,
                unrouted_lost INTEGER NOT NULL DEFAULT 0,
                counted_from REAL
            )
            """,
        ),
        # PostgreSQL starts here, with the whole schema of this version.
        postgres=BASELINE,
    ),
    Migration(
        version=10,
        description="traces, usage rows and runs name the gateway that served them",
        # In a fleet every gateway writes one database: each row names its gateway
        # (gw/fleet/gateway_id.py) for explain, traces and ``usage --by gateway``, and a
        # run names its own, so the traces a killed run lost are counted over its rows
        # only (gw/store/runs.py). Rows written before stay NULL: not known.
        statements=_V10_GATEWAY,
        postgres=_V10_GATEWAY,
    ),
    Migration(
        version=11,
        description="the fleet's gateway registry (PostgreSQL only)",
        # SQLite is one gateway's database: it has no registry (``SqliteStore.gateways``
        # is None), so this version changes nothing there.
        statements=(),
        postgres=(GATEWAYS_TABLE,),
    ),
    Migration(
        version=12,
        description="config revisions say who made them and why",
        # The audit of an admin write (a kill switch above all): the caller's key id
        # (``admin``, ``key_...``, ``local-admin`` for the local token) and the reason it gave. Rows
        # written before, and revisions made by a file edit or a start, stay NULL.
        statements=_V12_AUDIT,
        postgres=_V12_AUDIT,
    ),
    Migration(
        version=13,
        description="answers held for Idempotency-Key retries",
        # gw/store/idempotency_keys.py: one row per key of one caller, pending while its
        # request runs, then the sealed answer for the window; nothing in the clear.
        statements=_v13_idempotency("REAL", "BLOB"),
        postgres=_v13_idempotency("double precision", "bytea"),
    ),
    Migration(
        version=14,
        description="budgets per API key and per policy",
        # A key's budget (gw keys create/update --daily-usd ...), NULL: none. Usage rows
        # name the policy that decided them (NULL before this version), and
        # ``policy_spend`` sums their cost per policy and UTC day, kept by a trigger as
        # the rollup is, for the policy budgets seeded at start (usage_rollup.py).
        statements=V14_SQLITE,
        postgres=V14_POSTGRES,
    ),
    Migration(
        version=15,
        description="the response cache's answers at rest",
        # gw/store/cached_answers.py: one row per cache key (a digest), the answer sealed
        # to the vault identity; nothing of a request or an answer in the clear.
        statements=_v15_cached_answers("REAL", "BLOB"),
        postgres=_v15_cached_answers("double precision", "bytea"),
    ),
)

LATEST_VERSION: Final = MIGRATIONS[-1].version
POSTGRES_BASELINE: Final = 9
"""The version a fresh PostgreSQL database is created at (its migration's ``postgres``)."""


def pending_migrations(current: int, *, location: str = "the database") -> tuple[Migration, ...]:
    """The migrations a database at version ``current`` still needs, in order.

    Raises ``SchemaTooNewError`` when ``current`` is newer than this code knows.
    """
    if current > LATEST_VERSION:
        raise SchemaTooNewError(
            f"{location} has schema version {current}, but this gw only knows versions up "
            f"to {LATEST_VERSION}: it was written by a newer gw. Upgrade gw, or point "
            "--state-dir at another directory."
        )
    return tuple(m for m in MIGRATIONS if m.version > current)


def postgres_pending(current: int, *, location: str = "the database") -> tuple[Migration, ...]:
    """The migrations a PostgreSQL database at version ``current`` (0: a fresh one) still
    needs, in order: from nothing, the baseline and what follows it.

    Raises ``SchemaTooNewError`` when ``current`` is newer than this code knows.
    """
    if current == 0:
        current = POSTGRES_BASELINE - 1
    return pending_migrations(current, location=location)
