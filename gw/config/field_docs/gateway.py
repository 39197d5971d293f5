"""The file's top level and how gw itself runs: server, auth, health, state, telemetry,
responses."""

from __future__ import annotations

from gw.config.control_schema import CacheConfig, GuardrailConfig, PluginConfig, SwitchConfig
from gw.config.field_docs.rules import (
    HTTP_URL,
    PRINTABLE,
    SECRET_REFERENCE,
    Field,
    Section,
    section,
)
from gw.config.guardrails import MAX_STREAM_WINDOW, MAX_TIMEOUT_S, MIN_STREAM_WINDOW
from gw.config.plugin_checks import MAX_PLUGIN_TIMEOUT_S
from gw.config.schema import (
    AuthConfig,
    BackgroundConfig,
    Config,
    HealthConfig,
    OtlpConfig,
    RedisFailureConfig,
    ResponsesConfig,
    RetryBudgetConfig,
    ServerConfig,
    StateConfig,
    TelemetryConfig,
)
from gw.config.validate import (
    MAX_DASHBOARD_LINK_TTL_S,
    MAX_IDEMPOTENCY_TTL_S,
)

_SERVER = "Read at start only: a change needs a restart."

GATEWAY_SECTIONS: dict[type, Section] = {
    Config: section(
        "The whole file. Every section is optional.",
        server=Field("How gw listens, admits requests and reaches upstreams."),
        auth=Field("Who may call gw: the auth mode and the admin key."),
        providers=Field(
            "The upstreams gw calls. With no file gw runs one provider, `mock`; a file replaces it."
        ),
        models=Field(
            "Catalog entries: price, context window and capabilities per provider and model, "
            "over the catalog gw ships (`gw/catalog.yaml`)."
        ),
        routes=Field("What clients put in `model`: each route names its targets."),
        policies=Field(
            "Retry, fallback, timeouts, hedging and limits, chosen per request by the most "
            "specific `match`. With none, the built-in defaults apply."
        ),
        tenants=Field(
            "Teams or apps that API keys belong to (`gw keys create --tenant NAME`), with "
            "their allowed routes, rate limits and budgets."
        ),
        limits=Field(
            "Rate limits, concurrency and budgets on every request, in every auth mode, "
            "besides each tenant's."
        ),
        health=Field("Per-target health, circuit breakers, account locks and retry budgets."),
        state=Field("What the state database (`gw.db`) keeps, and for how long."),
        telemetry=Field("Metrics, request logs and OpenTelemetry export (never content)."),
        responses=Field("The Responses API's stateful parts."),
        switches=Field(
            "Kill switches: providers, routes or targets taken out of service, and breakers "
            "forced open or closed (`gw switch` writes them; docs/guides/switches.md)."
        ),
        plugins=Field(
            "Python code gw calls before routing, before each upstream call and after the "
            "answer, each call within a time budget (docs/guides/plugins.md)."
        ),
        guardrails=Field(
            "Content rules (block or mask by pattern, word list or PII) and model "
            "blocklists, applied by the policies that list them (docs/guides/guardrails.md)."
        ),
        cache=Field(
            "The response cache's bounds; policies turn it on (docs/guides/response-cache.md)."
        ),
    ),
    CacheConfig: section(
        "The response cache's bounds. Entries live in memory and, sealed with the vault "
        "identity, in the state store (so a restart keeps them); beyond `max_bytes` the least "
        "recently used go first.",
        max_bytes=Field("All entries together (`64MiB`, ...).", minimum=1),
        max_entry_bytes=Field("One answer; a larger one is not kept.", minimum=1),
    ),
    GuardrailConfig: section(
        "One guardrail. `block` refuses a prompt (before any upstream call) or an answer "
        "(a stream is cut with the client's error event) in which anything it looks for is "
        "found: 400 `content_blocked` naming the rule, never the matched text. `mask` "
        "replaces what it finds in the prompt before any upstream sees it, and says so in "
        "`x-gw-warning`. `models` keeps the listed targets from being called. Checked: the "
        "text of every message and text embeddings input; of an answer, its text.",
        name=Field("What errors, `x-gw-warning` and `gw explain` call it.", text=PRINTABLE),
        action=Field("`block` (refuse) or `mask` (replace, in the prompt only)."),
        apply_to=Field(
            "`input` (the prompt), `output` (the answer), or both. `null`: both for "
            "`block`, `input` for `mask`.",
            min_items=1,
        ),
        patterns=Field(
            "Regular expressions (Python `regex` syntax), searched anywhere in the text."
        ),
        words=Field("Words or phrases, matched whole and in any case."),
        pii=Field(
            "Kinds of personal data and secrets: `email`, `phone` (international `+...`, "
            "or North American with separators), `card` (13 to 19 digits passing the Luhn "
            "check) and `key` (API keys, tokens, JWTs and private keys of known shapes)."
        ),
        models=Field(
            "A model blocklist: globs on `provider/model` or the bare model. A listed target "
            "is never called (`gw explain`: rejected `blocked_model`); a request every target "
            "of which is listed gets 403 `permission_denied`. Only with `action: block`."
        ),
        replacement=Field(
            "`mask` only: the text put in place of each match; `null`: `[EMAIL]`, `[PHONE]`, "
            "`[CARD]`, `[KEY]`, or `[MASKED]` for a pattern or word.",
            text=PRINTABLE,
        ),
        everywhere=Field("`true`: applies to every request, whichever policy governs it."),
        stream_window=Field(
            "How many characters of a streamed answer before each new piece a match may "
            "span and still be found before that piece is sent.",
            minimum=MIN_STREAM_WINDOW,
            maximum=MAX_STREAM_WINDOW,
        ),
        timeout=Field(
            "How long one search may take; a check that takes longer refuses the request "
            "(guardrails fail closed).",
            above=0,
            maximum=MAX_TIMEOUT_S,
        ),
    ),
    PluginConfig: section(
        "One plugin: an object with any of the async hooks `before_routing`, "
        "`before_attempt` and `after_answer` (`gw.plugin_api`). It is imported when the "
        "config loads: an entry point that does not import, or has no hook, is a config "
        "error. Plugins run in config order.",
        name=Field("What `gw explain` and error messages call it.", text=PRINTABLE),
        entry_point=Field(
            "`package.module:object` (found on `sys.path`, PYTHONPATH included), or the name "
            "of an installed entry point in group `gw.plugins`. A class is instantiated "
            "with `settings`."
        ),
        hooks=Field(
            "The hooks gw calls; each must be an `async def` of the object. Default: every "
            "hook it has.",
            min_items=1,
        ),
        timeout=Field(
            "How long one hook call may take; one that takes longer fails as if it raised.",
            above=0,
            maximum=MAX_PLUGIN_TIMEOUT_S,
        ),
        on_error=Field(
            "What a hook that raises or times out does: `skip` (the request goes on without "
            "it) or `fail` (500 `internal_error` naming the plugin). Either way `gw explain` "
            "notes it. A failed `after_answer` never fails the request."
        ),
        settings=Field("Anything the plugin reads: handed to it read-only, never logged."),
    ),
    SwitchConfig: section(
        "One kill switch. Its subject is `provider`; `route`; `target` (in every route); or "
        "`route` and `target` (in that route only). A switched-off route answers 503 "
        "`no_route`; a switched-off target, one of a switched-off provider, or one whose "
        "breaker is forced open is never called (`gw explain`: rejected `switched_off`), "
        "and the request goes on to the route's other targets.",
        provider=Field("A provider's name: all its targets."),
        route=Field("A route's name: the whole route, or with `target`, that target in it."),
        target=Field("A target as `provider/model`."),
        state=Field(
            "`disabled`: out of service; `breaker_open` / `breaker_closed` (with `target` "
            "alone): its circuit breaker forced open (never called) or closed (tried as if "
            "healthy)."
        ),
        reason=Field("Why, as clients and `gw explain` are told it.", text=PRINTABLE),
        by=Field("Who set it (`gw switch` fills in the caller's key id).", text=PRINTABLE),
        at=Field("When it was set (ISO 8601, UTC; filled in by `gw switch`).", text=PRINTABLE),
    ),
    ServerConfig: section(
        "How gw listens, admits requests and reaches upstreams.",
        host=Field(
            "Address to listen on. Beyond loopback, auth is always `keys` and `auth.admin_key` "
            "is required. " + _SERVER
        ),
        port=Field("Port to listen on; `0` picks a free one. " + _SERVER, minimum=0, maximum=65535),
        max_concurrency=Field(
            "Requests in flight at once; beyond it a request waits up to `queue_timeout`. "
            + _SERVER,
            minimum=1,
        ),
        queue_timeout=Field(
            "How long a request waits for a slot beyond `max_concurrency` before it gets "
            "503 `overloaded`."
        ),
        max_body_bytes=Field("Largest request body; a larger one gets 413 `request_too_large`."),
        body_timeout=Field(
            "A request body that takes longer to arrive gets 408 `request_timeout`."
        ),
        header_timeout=Field(
            "A request's headers must arrive within this of the connection's start or its last "
            "answer, else 408. " + _SERVER,
            above=0,
        ),
        drain_timeout=Field(
            "On SIGTERM, how long in-flight requests and streams may finish before gw exits. "
            + _SERVER
        ),
        cors_origins=Field(
            "Browser origins allowed to call gw (CORS), e.g. `http://localhost:3000`. While auth "
            "is `open`, a browser request from any other origin is refused. `*` is allowed only "
            "on a loopback bind with `auth.mode: keys`. " + _SERVER
        ),
        trusted_proxies=Field(
            "Addresses or CIDRs of reverse proxies whose `X-Forwarded-For` gw believes (for key "
            "IP allowlists and logs); from any other peer the header is ignored. " + _SERVER
        ),
        upstream_transport=Field(
            "gw's HTTP client for upstream calls: `builtin` (gw's own HTTP/1.1 client, the "
            "fastest) or `httpx`. Each honours `HTTP(S)_PROXY`. " + _SERVER
        ),
        max_upstream_body_bytes=Field(
            "Largest whole (non-streamed) upstream answer; a larger one is 502 "
            "`upstream_error` (the upstream answer is too large). " + _SERVER
        ),
        upstream_buffer_budget=Field(
            "Memory for whole answers being read at once; a call past it is 503 `overloaded` "
            "with `Retry-After`. At least `max_upstream_body_bytes`. " + _SERVER
        ),
        upstream_max_connections=Field(
            "Open upstream connections, all hosts together. A request that finds no free "
            "slot within `timeout.connect` gets 503 `overloaded` with `Retry-After: 1` (gw's "
            "own saturation, not "
            "counted against the upstream's health). " + _SERVER,
            minimum=1,
        ),
        idempotency_ttl=Field(
            "How long an answer to a request sent with an `Idempotency-Key` is held, from "
            "its completion, so a retry with the same key gets it again without an upstream "
            "call (see [idempotent retries](../guides/idempotency.md)). At most 24h.",
            above=0,
            maximum=MAX_IDEMPOTENCY_TTL_S,
        ),
        idempotency_max_answer_bytes=Field(
            "Largest answer held for an `Idempotency-Key` retry; a larger one is sent but not "
            "held, so a retry runs again."
        ),
        idempotency_max_bytes=Field(
            "All answers held for `Idempotency-Key` retries together, sealed, at most; past it "
            "a new answer is not held. At least `idempotency_max_answer_bytes`."
        ),
        upstream_max_connections_per_host=Field(
            "A cap on connections per upstream host, at most `upstream_max_connections`; "
            "`null`: only the total (the `httpx` transport has no per-host cap). " + _SERVER,
            minimum=1,
        ),
    ),
    AuthConfig: section(
        "Who may call gw. See `gw keys` for API keys.",
        mode=Field(
            "`open` accepts any or no key (loopback only); `keys` needs an API key or the "
            "admin key on every request. `null`: `open` on a loopback bind while no API key "
            "exists, switching to `keys` once one is created; `keys` otherwise."
        ),
        admin_key=Field(
            "The admin key: every scope, no tenant, for the CLI and the admin API when the "
            "mode is `keys`. A reference, never the key itself; required beyond loopback, "
            "where it must be 32 characters or more. Read at start only.",
            text=SECRET_REFERENCE,
        ),
        dashboard_link_ttl=Field(
            "How long a `gw dashboard` login link works (once).",
            above=0,
            maximum=MAX_DASHBOARD_LINK_TTL_S,
        ),
    ),
    HealthConfig: section(
        "Per provider/model target, fed by live calls; only the upstream's own faults "
        "(`upstream_error`, `upstream_timeout`, `overloaded`) count.",
        degraded_after=Field(
            "Consecutive failures after which a target is still served but tried last.",
            minimum=1,
        ),
        unhealthy_after=Field(
            "Consecutive failures that open the breaker (the target is skipped); at least "
            "`degraded_after`.",
            minimum=1,
        ),
        error_rate=Field(
            "A failure share above this in `window` opens the breaker too; `1`: rule off.",
            above=0,
            maximum=1,
        ),
        window=Field("The rolling window of `error_rate`.", above=0),
        min_requests=Field("Calls the window needs before `error_rate` counts.", minimum=1),
        cooldown=Field(
            "An open breaker lets one trial request through after this; each reopening doubles "
            "the wait, and only a successful trial closes it.",
            above=0,
        ),
        max_cooldown=Field("The longest cooldown; at least `cooldown`."),
        trial_timeout=Field("A trial never reported frees its slot after this.", above=0),
        lock_accounts=Field(
            "Lock an (account, model) that answered 429 or 401/403, so the provider's next "
            "account is tried."
        ),
        rate_limit_cooldown=Field(
            "How long a rate-limited account stays locked when the upstream sends no "
            "`retry-after` (one it sends is capped at `max_cooldown`).",
            above=0,
        ),
        auth_failure_cooldown=Field(
            "How long an account whose credentials were refused stays locked.", above=0
        ),
        retry_budget=Field("Retries to one target, bounded by its traffic."),
    ),
    RetryBudgetConfig: section(
        "A retry is made only while the target's retries in the last `window` are fewer than "
        "`ratio` of its calls plus `min_retries`, so 200 requests to a dead upstream are not "
        "400 calls; past it the request falls back, or fails, at once.",
        ratio=Field("The share of the target's calls that may be retries.", minimum=0),
        min_retries=Field("Retries allowed on top of the share.", minimum=0),
        window=Field("The window both are counted over.", above=0),
    ),
    RedisFailureConfig: section(
        "While Redis is unreachable, each kind of limit either falls back to counters in "
        "this gateway alone (`open`), each limit divided by `fleet_size` (at least 1), or "
        "refuses the tenant's requests with 503 `overloaded` and a Retry-After (`closed`). "
        "A request decided so says it in `gw explain` and counts in "
        "`gw_limits_fallback_total{kind,policy}`. A tenant without limits of a kind is not "
        "concerned by it.",
        budgets=Field("`daily_usd` and `monthly_usd`: `closed` (default) or `open`."),
        rate_limits=Field(
            "`requests_per_minute` and `tokens_per_minute`: `open` (default) or `closed`."
        ),
        concurrency=Field("`max_concurrency`: `open` (default) or `closed`."),
        fleet_size=Field(
            "How many gateways share the limits: an open fallback gives this one the "
            "fleet's limit divided by it.",
            minimum=1,
        ),
    ),
    StateConfig: section(
        "What `gw.db` keeps. Every `prune_interval`, traces older than `trace_max_age` are "
        "deleted, then the oldest while they take more than `trace_max_bytes`. Config "
        "revisions are never pruned.",
        url=Field(
            "A PostgreSQL URL (`postgresql://user@host:5432/db`, PostgreSQL 15 or newer) "
            "for the state several gateways share: keys, traces, usage, config revisions, "
            "the fleet's registry. `null`: SQLite at "
            "`<state-dir>/gw.db`. Keep the password out of the file (PGPASSWORD, ~/.pgpass, "
            "or the whole URL in GW_STATE_URL). Read at start; a change needs a restart."
        ),
        redis_url=Field(
            "A Redis URL (`redis://host:6379/0`, `rediss://` for TLS) for the counters a "
            "fleet shares: rate limits, concurrency, budgets, breakers. `null`: counted in "
            "this process. Read at start; a change needs a restart. Circuit breakers: each "
            "gateway still decides from its own memory (no Redis call per request); an "
            "opening on one gateway is published and applied by all (`gw health` names the "
            "gateway that opened it), and after the cooldown one gateway of the fleet claims "
            "the half-open trial, the others skipping the target until its close. While "
            "Redis is unreachable breakers work per gateway, as without it: logged once a "
            "minute, counted in `gw_fleet_breakers_redis_errors_total`, reconnected on its own."
        ),
        redis_failure=Field(
            "What the limits do while `redis_url` is unreachable; gw tries Redis again "
            "a second later, by itself. Read at start; a change needs a restart."
        ),
        trace_max_age=Field("Traces older than this are deleted.", above=0),
        trace_max_bytes=Field("The most the traces may take (an estimate)."),
        usage_max_age=Field(
            "Usage rows older than this are deleted, whole UTC hours at a time, while their "
            "hourly sums stay, so reports and budgets do not change. `null`: kept for ever.",
            above=0,
        ),
        prune_interval=Field(
            "How often the pruning runs (the first round 5s after start).", above=0
        ),
    ),
    TelemetryConfig: section(
        "What gw tells the outside world about its traffic, never its content.",
        metrics=Field("Prometheus metrics at `GET /metrics`."),
        request_log=Field(
            "One line per request on stderr: `json`, `rich` (for a terminal), `auto` (rich on a "
            "terminal, JSON otherwise) or `off` (quote it: YAML reads a bare off as false)."
        ),
        otlp=Field("OpenTelemetry trace export."),
    ),
    OtlpConfig: section(
        "OpenTelemetry spans over OTLP/HTTP; needs the `otel` extra.",
        enabled=Field("Export spans; needs `endpoint`."),
        endpoint=Field(
            "The collector's base URL, e.g. `http://127.0.0.1:4318` (spans go to "
            "`<endpoint>/v1/traces`).",
            text=HTTP_URL,
        ),
        headers=Field(
            "Headers sent to the collector (redacted when shown); credentials as `env:NAME` or "
            "`vault:NAME`."
        ),
        service_name=Field("The `service.name` of gw's spans."),
    ),
    ResponsesConfig: section(
        "The Responses API's stateful parts: gw keeps no prompt unless one is enabled.",
        background=Field("Background responses (`background: true` on `POST /v1/responses`)."),
    ),
    BackgroundConfig: section(
        "Background responses: a request is queued in the state database, its content "
        "encrypted with the vault's key, and run by a worker.",
        enabled=Field("Accept background requests (opt-in)."),
        max_queued_per_tenant=Field(
            "Jobs queued, running or unfetched per tenant at once; beyond it: 429.", minimum=1
        ),
        retention=Field(
            "A finished job's answer is deleted when fetched, or this long after it finished.",
            above=0,
        ),
        concurrency=Field("Jobs run at once.", minimum=1),
    ),
}
