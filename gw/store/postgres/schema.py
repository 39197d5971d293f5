"""The PostgreSQL schema at version 9: the baseline a fresh database starts from.

PostgreSQL joined gw at schema version 9, so a new database gets the tables as SQLite has
them after migrations 1-9 in one step (gw/store/migrations.py lists it as version 9's
``postgres`` form); later migrations each carry a ``postgres`` form of their own. Plain
text, no driver: the migration list imports it without loading asyncpg.

Differences from SQLite, each for a reason:

- times are ``double precision`` (epoch seconds, as SQLite's REAL), token counts
  ``bigint``, ``recovered`` a boolean;
- ``traces.request_id`` (and ``usage.request_id``, joined with it) use the ``C``
  collation, so a prefix is a range of the primary key (``gw explain <prefix>``),
  compared byte by byte as SQLite does; ``traces.seq``
  takes the place of SQLite's rowid for ``gw traces --follow`` (a replaced trace takes a
  new number, and is shown again);
- ``response_jobs.runner`` and ``runs.runner`` name the gateway running a job or a run
  (gw/store/postgres/runner.py), so a gateway that starts fails only the jobs of
  gateways that are gone, and takes for "the last run" one that has ended;
- the rollup's group is one unique index ``NULLS NOT DISTINCT`` (PostgreSQL 15), where
  SQLite spells a NULL as ``x''``; a PL/pgSQL trigger keeps it, as SQLite's trigger does.
"""

from __future__ import annotations

from typing import Final

SCHEMA_VERSION_TABLE: Final = """
CREATE TABLE IF NOT EXISTS schema_version (
    version integer PRIMARY KEY,
    applied_at double precision NOT NULL,
    description text NOT NULL
)
"""

_ROLLUP_MEASURES: Final = (
    "requests", "errors", "input_tokens", "cached_input_tokens", "output_tokens",
    "reasoning_tokens", "cost_usd", "unpriced", "estimated", "recovered",
)  # fmt: skip
_ROLLUP_GROUP: Final = "period, period_start, day, month, tenant, key_id, route, provider, model"

_ADDS: Final = ", ".join(f"{m} = usage_rollup.{m} + excluded.{m}" for m in _ROLLUP_MEASURES)
_ROLLUP_FUNCTION: Final = f"""
CREATE FUNCTION usage_rollup_add() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    p record;
    start bigint;
BEGIN
    FOR p IN SELECT * FROM (VALUES ('hour', 3600), ('day', 86400)) AS t (period, seconds)
    LOOP
        -- As gw.store.usage_rollup.period_start: start <= time < start + seconds.
        start := floor(NEW.time / p.seconds)::bigint * p.seconds;
        IF start > NEW.time THEN
            start := start - p.seconds;
        END IF;
        INSERT INTO usage_rollup ({_ROLLUP_GROUP}, {", ".join(_ROLLUP_MEASURES)})
        VALUES (p.period, start, NEW.day, NEW.month, NEW.tenant, NEW.key_id, NEW.route,
            NEW.provider, NEW.model, 1, (NEW.error_code IS NOT NULL)::int,
            NEW.input_tokens, NEW.cached_input_tokens, NEW.output_tokens,
            NEW.reasoning_tokens, coalesce(NEW.cost_usd, 0.0),
            (NEW.cost_usd IS NULL AND NEW.input_tokens + NEW.output_tokens > 0)::int,
            (NEW.usage_source IS NOT DISTINCT FROM 'estimate')::int, NEW.recovered::int)
        ON CONFLICT ({_ROLLUP_GROUP}) DO UPDATE SET {_ADDS};
    END LOOP;
    RETURN NULL;
END
$$
"""  # noqa: S608 - fixed names only
"""The trigger function adding each inserted usage row to its hour's and day's group."""

BASELINE: Final[tuple[str, ...]] = (
    "CREATE SEQUENCE traces_seq",
    """
    CREATE TABLE traces (
        request_id text COLLATE "C" PRIMARY KEY,
        seq bigint NOT NULL DEFAULT nextval('traces_seq'),
        time double precision NOT NULL,
        status integer NOT NULL,
        error_code text,
        route text NOT NULL,
        provider text,
        model text,
        latency_ms double precision NOT NULL,
        client_request_id text,
        revision integer NOT NULL,
        body text NOT NULL,
        size integer NOT NULL DEFAULT 0
    )
    """,
    "CREATE INDEX traces_time_size ON traces (time, size)",
    "CREATE INDEX traces_client_request_id ON traces (client_request_id)",
    "CREATE INDEX traces_seq_index ON traces (seq)",
    """
    CREATE TABLE config_revisions (
        revision integer PRIMARY KEY,
        time double precision NOT NULL,
        source text NOT NULL,
        hash text NOT NULL,
        content text,
        redacted text
    )
    """,
    """
    CREATE TABLE api_keys (
        id text PRIMARY KEY,
        digest text NOT NULL UNIQUE,
        prefix text NOT NULL,
        suffix text NOT NULL,
        tenant text NOT NULL,
        name text,
        scopes text NOT NULL,
        models text,
        allowed_ips text,
        created_at double precision NOT NULL,
        expires_at double precision,
        revoked_at double precision
    )
    """,
    """
    CREATE TABLE usage (
        request_id text COLLATE "C" PRIMARY KEY,
        time double precision NOT NULL,
        day text NOT NULL,
        month text NOT NULL,
        tenant text,
        key_id text,
        route text NOT NULL,
        provider text,
        model text,
        status integer NOT NULL,
        error_code text,
        input_tokens bigint NOT NULL,
        output_tokens bigint NOT NULL,
        cached_input_tokens bigint NOT NULL,
        cache_write_tokens bigint NOT NULL,
        reasoning_tokens bigint NOT NULL,
        cost_usd double precision,
        usage_source text,
        recovered boolean NOT NULL DEFAULT false
    )
    """,
    "CREATE INDEX usage_time ON usage (time)",
    "CREATE INDEX usage_tenant_day ON usage (tenant, day)",
    "CREATE INDEX usage_tenant_month ON usage (tenant, month)",
    """
    CREATE TABLE usage_rollup (
        period text NOT NULL,
        period_start bigint NOT NULL,
        day text NOT NULL,
        month text NOT NULL,
        tenant text,
        key_id text,
        route text NOT NULL,
        provider text,
        model text,
        requests bigint NOT NULL,
        errors bigint NOT NULL,
        input_tokens bigint NOT NULL,
        cached_input_tokens bigint NOT NULL,
        output_tokens bigint NOT NULL,
        reasoning_tokens bigint NOT NULL,
        cost_usd double precision NOT NULL,
        unpriced bigint NOT NULL,
        estimated bigint NOT NULL,
        recovered bigint NOT NULL
    )
    """,
    f"CREATE UNIQUE INDEX usage_rollup_group ON usage_rollup ({_ROLLUP_GROUP}) NULLS NOT DISTINCT",
    "CREATE INDEX usage_rollup_day ON usage_rollup (period, day, tenant)",
    "CREATE INDEX usage_rollup_month ON usage_rollup (period, month, tenant)",
    _ROLLUP_FUNCTION,
    "CREATE TRIGGER usage_rollup_insert AFTER INSERT ON usage"
    " FOR EACH ROW EXECUTE FUNCTION usage_rollup_add()",
    """
    CREATE TABLE response_jobs (
        request_id text PRIMARY KEY,
        tenant text,
        key_id text,
        model text NOT NULL,
        status text NOT NULL,
        created_at double precision NOT NULL,
        started_at double precision,
        finished_at double precision,
        expires_at double precision,
        error_code text,
        error_message text,
        content text NOT NULL,
        request bytea,
        result bytea,
        runner integer
    )
    """,
    "CREATE INDEX response_jobs_status ON response_jobs (status, created_at)",
    "CREATE INDEX response_jobs_tenant ON response_jobs (tenant, status)",
    """
    CREATE TABLE runs (
        id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        started_at double precision NOT NULL,
        stopped_at double precision,
        routed_lost bigint NOT NULL DEFAULT 0,
        unrouted_lost bigint NOT NULL DEFAULT 0,
        counted_from double precision,
        runner integer
    )
    """,
)
"""Every table, index and trigger of schema version 9, for a fresh database."""

# Version 11: one row per running ``gw serve`` of a fleet (gw/store/postgres/gateways.py),
# written at start and with every heartbeat; ``heartbeat_s`` is the writer's own interval,
# so a reader tells a gateway that is gone without knowing the writer's settings.
GATEWAYS_TABLE: Final = """
CREATE TABLE gateways (
    id text PRIMARY KEY,
    url text NOT NULL,
    host text NOT NULL,
    pid integer NOT NULL,
    started_at double precision NOT NULL,
    revision integer NOT NULL,
    config_hash text NOT NULL,
    ready boolean NOT NULL,
    heartbeat_at double precision NOT NULL,
    heartbeat_s double precision NOT NULL
)
"""
