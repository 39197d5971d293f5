"""The user-facing config (YAML v1) as strict msgspec Structs. Every section is optional.

Field names are the ones DESIGN.md documents; defaults here are the built-in defaults.
Cross-field rules (names that must exist, uniqueness) live in ``validate.py``.
"""

from __future__ import annotations

from typing import Literal

from gw.config.config_struct import ConfigStruct
from gw.config.control_schema import (
    CacheConfig,
    GuardrailConfig,
    PluginConfig,
    SwitchConfig,
)
from gw.config.units import ByteSize, Duration

ProviderKind = Literal[
    "openai", "openai_compatible", "openai_responses", "anthropic", "gemini", "azure_openai", "mock"
]  # fmt: skip
Strategy = Literal["priority", "weighted", "lowest_cost", "lowest_latency", "highest_quality"]
Capability = Literal["tools", "vision", "json_schema", "json_object", "reasoning", "embeddings"]
# What a request asks for, whichever wire format it came in: chat (OpenAI chat, Anthropic
# messages, Gemini generateContent), responses (OpenAI Responses), embeddings, count_tokens.
RequestKind = Literal["chat", "responses", "embeddings", "count_tokens"]
AuthMode = Literal["open", "keys"]
AccountSelection = Literal["fill_first", "round_robin"]
UpstreamTransport = Literal["builtin", "httpx"]  # aiohttp: refused by name (loader.py)


class ServerConfig(ConfigStruct, frozen=True, kw_only=True):
    host: str = "127.0.0.1"
    port: int = 8787
    max_concurrency: int = 256
    queue_timeout: Duration = Duration(2.0)
    max_body_bytes: ByteSize = ByteSize(8 * 1024 * 1024)
    body_timeout: Duration = Duration(30.0)
    header_timeout: Duration = Duration(10.0)
    drain_timeout: Duration = Duration(30.0)  # on SIGTERM: in-flight work may finish this long
    cors_origins: tuple[str, ...] = ()  # browser origins allowed to call gw (gw/server/edges.py)
    trusted_proxies: tuple[str, ...] = ()  # IPs/CIDRs whose X-Forwarded-For is believed
    upstream_transport: UpstreamTransport = "builtin"
    # A whole (non-streamed) upstream answer, and all of them being read at once, held in
    # memory (gw/upstream_http/reply_budget.py).
    max_upstream_body_bytes: ByteSize = ByteSize(16 * 1024 * 1024)
    upstream_buffer_budget: ByteSize = ByteSize(256 * 1024 * 1024)
    upstream_max_connections: int = 512  # open upstream connections, all hosts together
    upstream_max_connections_per_host: int | None = None  # None: only the total
    # Idempotency-Key (gw/server/inference/idempotency.py): how long an answer is held for
    # a retry, how large one may be, and how much all of them may take together.
    idempotency_ttl: Duration = Duration(300.0)
    idempotency_max_answer_bytes: ByteSize = ByteSize(1024 * 1024)
    idempotency_max_bytes: ByteSize = ByteSize(64 * 1024 * 1024)


class AuthConfig(ConfigStruct, frozen=True, kw_only=True):
    mode: AuthMode | None = None
    admin_key: str | None = None
    dashboard_link_ttl: Duration = Duration(60.0)  # how long a `gw dashboard` login link works


class MockOptions(ConfigStruct, frozen=True, kw_only=True):
    """Behaviour of a ``kind: mock`` provider, for demos and fault drills."""

    latency: Duration = Duration(0.0)
    first_token: Duration = Duration(0.0)
    chunk_delay: Duration = Duration(0.0)
    fail_status: int | None = None
    fail_code: str | None = None
    failure_rate: float = 0.0
    seed: int = 0
    words: int = 12


class AccountConfig(ConfigStruct, frozen=True, kw_only=True):
    """One key or endpoint of a provider; unset fields are the provider's own."""

    name: str
    api_key: str | None = None
    base_url: str | None = None
    headers: dict[str, str] = {}


class ProbeConfig(ConfigStruct, frozen=True, kw_only=True):
    """Active health probes: a one-token chat to each model every ``interval``. Opt-in,
    as each probe is a (tiny) billed call. Probes may degrade a target or restore a
    degraded one; only live traffic opens or closes a breaker."""

    interval: Duration
    timeout: Duration = Duration(10.0)
    models: tuple[str, ...] | None = None  # None: every model routes send to this provider


class ProviderTls(ConfigStruct, frozen=True, kw_only=True):
    """TLS to one provider's upstream (gw/upstream_http/tls.py); absolute paths to PEM files.

    ``ca_file``: trust the upstream through these CA certificates only, instead of the
    system's store. ``client_cert``: a client certificate to present when the upstream
    asks for one, its private key in ``client_key`` (or in the same file)."""

    ca_file: str | None = None
    client_cert: str | None = None
    client_key: str | None = None


class ProviderConfig(ConfigStruct, frozen=True, kw_only=True):
    name: str
    kind: ProviderKind
    base_url: str | None = None
    api_key: str | None = None
    api_version: str | None = None
    headers: dict[str, str] = {}
    mock: MockOptions | None = None
    # Several keys or endpoints: a rate limit or auth failure locks one (with the model)
    # and the next is tried before the next target. None: one account, named "default".
    accounts: tuple[AccountConfig, ...] = ()
    account_selection: AccountSelection = "fill_first"
    probe: ProbeConfig | None = None
    tls: ProviderTls | None = None


class ModelFacts(ConfigStruct, frozen=True, kw_only=True):
    """What a model costs (USD per million tokens) and can do, wherever it is served.

    Prices of the token kinds ``gw.ir.Usage`` tells apart; an unset one falls back:
    ``cached_input_per_mtok`` (prompt-cache reads) and ``cache_write_per_mtok`` (tokens
    written to a prompt cache) to the input price, ``reasoning_per_mtok`` to the output
    price. Set the cache write price where a provider charges extra for it (Anthropic:
    1.25x input for its default 5-minute cache, 2x for the 1-hour one).
    """

    input_per_mtok: float = 0.0
    output_per_mtok: float = 0.0
    cached_input_per_mtok: float | None = None
    cache_write_per_mtok: float | None = None
    reasoning_per_mtok: float | None = None
    context_window: int | None = None
    max_output_tokens: int | None = None
    capabilities: tuple[Capability, ...] = ()
    quality: float | None = None


class ModelEntry(ModelFacts, frozen=True, kw_only=True):
    """A catalog entry: what one provider's model costs and can do. One in config
    replaces, whole, the entry the shipped catalog (``gw/catalog.yaml``) has for it."""

    provider: str
    model: str


class TargetConfig(ConfigStruct, frozen=True, kw_only=True):
    provider: str
    model: str
    priority: int = 1
    weight: float = 1.0


class RouteConfig(ConfigStruct, frozen=True, kw_only=True):
    name: str
    targets: tuple[TargetConfig, ...]
    strategy: Strategy = "priority"
    description: str | None = None


class PolicyMatch(ConfigStruct, frozen=True, kw_only=True):
    """What a policy applies to; an omitted field matches everything. Globs use ``*``."""

    routes: tuple[str, ...] | None = None
    models: tuple[str, ...] | None = None
    streaming: bool | None = None
    tenants: tuple[str, ...] | None = None
    api_keys: tuple[str, ...] | None = None
    capabilities: tuple[Capability, ...] | None = None
    kinds: tuple[RequestKind, ...] | None = None
    min_prompt_tokens: int | None = None  # the estimated prompt, inclusive bounds
    max_prompt_tokens: int | None = None


class RetryConfig(ConfigStruct, frozen=True, kw_only=True):
    """``max_attempts`` counts every call to one target, the first included."""

    max_attempts: int = 2
    initial_backoff: Duration = Duration(0.15)
    multiplier: float = 2.0
    max_backoff: Duration = Duration(5.0)
    max_retry_after: Duration = Duration(30.0)


class FallbackConfig(ConfigStruct, frozen=True, kw_only=True):
    enabled: bool = True
    on_error_codes: tuple[str, ...] | None = None


class TimeoutConfig(ConfigStruct, frozen=True, kw_only=True):
    total: Duration = Duration(600.0)
    per_attempt: Duration = Duration(300.0)
    connect: Duration = Duration(10.0)
    first_token: Duration = Duration(60.0)
    stream_idle: Duration = Duration(90.0)


class TenantBudget(ConfigStruct, frozen=True, kw_only=True):
    """USD per UTC day, ISO week and month, and in total (never reset): a tenant's, a
    policy's and ``limits.budget``."""

    daily_usd: float | None = None
    weekly_usd: float | None = None
    monthly_usd: float | None = None
    total_usd: float | None = None


class HedgeConfig(ConfigStruct, frozen=True, kw_only=True):
    """Non-streaming requests only: when the first target has not answered ``after`` this
    long, the rest of the chain starts in parallel and the first answer wins."""

    after: Duration | None = None  # None: no hedging


# Where a sticky session's key is read from, tried in the order configured.
SessionKeySource = Literal["header", "prompt_cache_key", "user", "first_messages"]
SESSION_KEY_SOURCES: tuple[SessionKeySource, ...] = (
    "header",
    "prompt_cache_key",
    "user",
    "first_messages",
)


class StickyConfig(ConfigStruct, frozen=True, kw_only=True):
    """Sticky sessions (gw/execution/sticky_sessions.py): a conversation stays on the
    target and account that answered it, while healthy, so a provider's prompt cache
    keeps hitting. Off unless a policy turns it on."""

    enabled: bool = False
    ttl: Duration = Duration(3600.0)  # a pin unused this long is forgotten
    key_from: tuple[SessionKeySource, ...] = SESSION_KEY_SOURCES


class PolicyLimits(ConfigStruct, frozen=True, kw_only=True):
    max_output_tokens: int | None = None
    max_cost_per_request_usd: float | None = None
    # A target with no catalog price under the cost ceiling: left out, or allowed.
    unpriced: Literal["exclude", "allow"] = "exclude"


class SemanticCache(ConfigStruct, frozen=True, kw_only=True):
    """The response cache's second level (gw/execution/semantic_cache.py): a request whose
    last user message means nearly the same as a kept one's (cosine similarity of their
    embeddings, from gw's own embeddings ``route``, at least ``threshold``), all else
    equal, is served that answer."""

    route: str
    threshold: float = 0.95


class PolicyCache(ConfigStruct, frozen=True, kw_only=True):
    """The response cache for the policy's requests (gw/execution/response_cache.py):
    an answer is kept ``ttl`` and served again for the same canonical request, within the
    caller's tenant unless ``shared``; and for a similar one with ``semantic``."""

    enabled: bool = False
    ttl: Duration = Duration(300.0)
    shared: bool = False
    semantic: SemanticCache | None = None


# What gw may do with a conversation too long for a target's context window (gw/routing/
# shaping.py): nothing (``none``: a bare ``off`` reads as false in YAML); trim it to fit
# the first choice; choose a larger window; or a larger window when one fits, else trim.
ShapingMode = Literal["none", "trim", "larger_window", "larger_window_then_trim"]


class ShapingConfig(ConfigStruct, frozen=True, kw_only=True):
    mode: ShapingMode = "none"


class PolicyConfig(ConfigStruct, frozen=True, kw_only=True):
    name: str
    match: PolicyMatch = PolicyMatch()
    priority: int = 0
    strategy: Strategy | None = None
    retry: RetryConfig = RetryConfig()
    fallback: FallbackConfig = FallbackConfig()
    timeout: TimeoutConfig = TimeoutConfig()
    hedge: HedgeConfig = HedgeConfig()
    limits: PolicyLimits = PolicyLimits()
    # USD per period for every request this policy decides, counted as ``@policy:<name>``
    budget: TenantBudget = TenantBudget()
    deny: bool = False  # a deny rule: the requests it matches get 403 permission_denied
    deny_reason: str | None = None
    guardrails: tuple[str, ...] = ()  # names of ``guardrails:`` entries it applies
    cache: PolicyCache = PolicyCache()
    sticky: StickyConfig = StickyConfig()  # sticky sessions for prompt caches
    shaping: ShapingConfig = ShapingConfig()  # a prompt too long for a context window


class TenantLimits(ConfigStruct, frozen=True, kw_only=True):
    requests_per_minute: int | None = None
    tokens_per_minute: int | None = None
    max_concurrency: int | None = None


class GlobalLimits(ConfigStruct, frozen=True, kw_only=True):
    """Limits on every routed request, whoever sends it, in every auth mode (open
    included), besides each tenant's."""

    requests_per_minute: int | None = None
    tokens_per_minute: int | None = None
    max_concurrency: int | None = None
    budget: TenantBudget = TenantBudget()


class TenantConfig(ConfigStruct, frozen=True, kw_only=True):
    name: str
    allowed_routes: tuple[str, ...] | None = None
    limits: TenantLimits = TenantLimits()
    budget: TenantBudget = TenantBudget()


class RetryBudgetConfig(ConfigStruct, frozen=True, kw_only=True):
    """Retries to one target, bounded by its traffic (``gw/execution/retry_budget.py``):
    at most ``ratio`` of its calls in the last ``window``, plus ``min_retries``."""

    ratio: float = 0.2
    min_retries: int = 10
    window: Duration = Duration(10.0)


class HealthConfig(ConfigStruct, frozen=True, kw_only=True):
    """Per-target health and circuit breaker thresholds (``gw/execution/health.py``)."""

    degraded_after: int = 3  # consecutive failures: still eligible, ordered last
    unhealthy_after: int = 9  # consecutive failures that open the breaker
    error_rate: float = 0.5  # a failure share above this in the window opens it too
    window: Duration = Duration(60.0)
    min_requests: int = 10  # calls the window needs before the error rate counts
    cooldown: Duration = Duration(5.0)  # first opening; doubles with each reopening ...
    max_cooldown: Duration = Duration(300.0)  # ... up to this
    trial_timeout: Duration = Duration(30.0)  # an unreported half-open trial frees its slot
    # An (account, model) that answered 429 (rate_limited) or 401/403 (upstream_auth_failed)
    # is locked: for the upstream's retry-after (capped at max_cooldown) or else these.
    lock_accounts: bool = True
    rate_limit_cooldown: Duration = Duration(30.0)
    auth_failure_cooldown: Duration = Duration(300.0)
    retry_budget: RetryBudgetConfig = RetryBudgetConfig()


LimitFailure = Literal["open", "closed"]


class RedisFailureConfig(ConfigStruct, frozen=True, kw_only=True):
    """What the fleet's limits do while Redis is unreachable (gw/fleet/redis_limits.py),
    per kind: ``open`` counts in this gateway alone, each limit divided by ``fleet_size``
    (at least 1); ``closed`` refuses the tenant's requests (503 ``overloaded``)."""

    budgets: LimitFailure = "closed"
    rate_limits: LimitFailure = "open"
    concurrency: LimitFailure = "open"
    fleet_size: int = 1


class StateConfig(ConfigStruct, frozen=True, kw_only=True):
    """What the state database keeps (``gw/telemetry/pruner.py``): every ``prune_interval``
    traces older than ``trace_max_age`` are deleted, then the oldest ones until the traces
    take at most ``trace_max_bytes``; usage rows older than ``usage_max_age``, when set
    (None: kept for ever), are deleted too, their hourly sums kept (usage reports and
    budgets read those). Config revisions are never pruned. ``url`` (PostgreSQL) and
    ``redis_url`` (Redis) make it the shared state of a fleet of gateways
    (gw/config/state_url.py); both are read at start."""

    url: str | None = None
    redis_url: str | None = None
    redis_failure: RedisFailureConfig = RedisFailureConfig()
    trace_max_age: Duration = Duration(7 * 86_400.0)
    trace_max_bytes: ByteSize = ByteSize(256 * 1024 * 1024)
    usage_max_age: Duration | None = None
    prune_interval: Duration = Duration(300.0)


RequestLogFormat = Literal["auto", "json", "rich", "off"]


class OtlpConfig(ConfigStruct, frozen=True, kw_only=True):
    """OpenTelemetry trace export over OTLP/HTTP (gw/telemetry/otel.py), off by default;
    needs the ``otel`` extra. ``endpoint`` is the collector's base URL (spans go to
    ``<endpoint>/v1/traces``); ``headers`` values may carry credentials and are redacted."""

    enabled: bool = False
    endpoint: str | None = None
    headers: dict[str, str] = {}
    service_name: str = "gw"


class TelemetryConfig(ConfigStruct, frozen=True, kw_only=True):
    """What gw tells the outside world about its traffic (never content):

    - ``metrics``: Prometheus metrics at ``/metrics`` (gw/telemetry/metrics.py);
    - ``request_log``: one log line per request on stderr: ``json``, ``rich`` (for a
      terminal), ``auto`` (rich on a TTY, JSON otherwise) or ``off``;
    - ``otlp``: OpenTelemetry spans, opt-in.
    """

    metrics: bool = True
    request_log: RequestLogFormat = "auto"
    otlp: OtlpConfig = OtlpConfig()


class BackgroundConfig(ConfigStruct, frozen=True, kw_only=True):
    """Background Responses (``background: true`` on ``POST /v1/responses``), opt-in: the
    request is queued in the state database (its content age-encrypted with the vault's
    identity) and run by a worker, ``concurrency`` at a time. Each tenant may have
    ``max_queued_per_tenant`` queued, running or unfetched; a finished job's content is deleted when
    its result is fetched, or ``retention`` after it finished."""

    enabled: bool = False
    max_queued_per_tenant: int = 16
    retention: Duration = Duration(3600.0)
    concurrency: int = 4


class ResponsesConfig(ConfigStruct, frozen=True, kw_only=True):
    """The Responses API's stateful parts (gw keeps no prompt unless one is enabled)."""

    background: BackgroundConfig = BackgroundConfig()


class Config(ConfigStruct, frozen=True, kw_only=True):
    server: ServerConfig = ServerConfig()
    auth: AuthConfig = AuthConfig()
    providers: tuple[ProviderConfig, ...] = ()
    models: tuple[ModelEntry, ...] = ()
    routes: tuple[RouteConfig, ...] = ()
    policies: tuple[PolicyConfig, ...] = ()
    tenants: tuple[TenantConfig, ...] = ()
    limits: GlobalLimits = GlobalLimits()
    health: HealthConfig = HealthConfig()
    state: StateConfig = StateConfig()
    telemetry: TelemetryConfig = TelemetryConfig()
    responses: ResponsesConfig = ResponsesConfig()
    switches: tuple[SwitchConfig, ...] = ()
    plugins: tuple[PluginConfig, ...] = ()
    guardrails: tuple[GuardrailConfig, ...] = ()
    cache: CacheConfig = CacheConfig()
