"""The seams the core needs from the outside world, as Protocols.

The engine (L2) talks only to these; adapters, stores and telemetry (L3) implement them,
and ``gw/wiring.py`` plugs them in.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Literal, Protocol, runtime_checkable

import msgspec

from gw.config.schema import ProviderConfig, TenantConfig
from gw.ir import ChatRequest, ChatResponse, EmbeddingRequest, EmbeddingResponse, StreamEvent
from gw.record import TraceRecord, UsageSource
from gw.routing.sticky import SessionPin


class AttemptTimeouts(msgspec.Struct, frozen=True, kw_only=True):
    """Socket-level limits for one attempt (seconds); the engine bounds the attempt itself.

    ``connect`` must be honoured by the adapter, and ``read`` (per socket read) for whole
    answers. A stream's reads are timed by the engine (first token, then stream idle),
    so an adapter need not re-arm a timer for every chunk.
    """

    connect: float
    read: float


class UpstreamCall(msgspec.Struct, frozen=True, kw_only=True):
    """One attempt: ``request.model`` is already the upstream's model name."""

    request_id: str
    provider: ProviderConfig
    request: ChatRequest
    account: str | None
    timeouts: AttemptTimeouts
    # The adapter appends what its wire format could not carry exactly (lossy
    # translations); the engine copies them into the attempt's record.
    notes: list[str] = msgspec.field(default_factory=list)
    # The most output tokens this target may be asked for (a policy limit, the catalog's
    # max_output_tokens); a limit an adapter must send unasked stays under it, and it says
    # so in limit_notes, as the engine does when it clamps max_tokens to the model's.
    output_ceiling: int | None = None
    limit_notes: list[str] = msgspec.field(default_factory=list)


class EmbeddingCall(msgspec.Struct, frozen=True, kw_only=True):
    """One embeddings attempt, like ``UpstreamCall``: ``request.model`` is the upstream's."""

    request_id: str
    provider: ProviderConfig
    request: EmbeddingRequest
    account: str | None
    timeouts: AttemptTimeouts
    notes: list[str] = msgspec.field(default_factory=list)


class Upstream(Protocol):
    """A provider adapter: IR in, IR out. It raises only ``GatewayError`` subclasses.

    Adapters that serve embeddings also implement ``EmbeddingUpstream.embed``; it is a
    separate protocol so that a chat-only adapter is still an ``Upstream``.
    """

    async def complete(self, call: UpstreamCall) -> ChatResponse: ...

    def stream(self, call: UpstreamCall) -> AsyncIterator[StreamEvent]: ...


@runtime_checkable
class EmbeddingUpstream(Upstream, Protocol):
    """An ``Upstream`` that also embeds; the engine checks for it per embeddings attempt.

    ``embed`` returns one vector per input, in input order.
    """

    async def embed(self, call: EmbeddingCall) -> EmbeddingResponse: ...


class UpstreamDirectory(Protocol):
    """Finds the adapter serving a provider (adapters are built once per provider kind)."""

    def upstream_for(self, provider: ProviderConfig) -> Upstream: ...


class TraceSink(Protocol):
    """Takes a finished trace without blocking; may drop under pressure, counting drops."""

    def submit(self, trace: TraceRecord) -> None: ...


class UsageRow(msgspec.Struct, frozen=True, kw_only=True):
    """One request in the usage ledger: who spent what, where (never content).

    ``day`` and ``month`` are budget period labels (``gw.execution.periods``); ``route``
    is the route routing resolved (``provider/model`` when addressed directly);
    ``cost_usd`` is the trace's cost (``None``: price unknown); ``usage_source`` says
    whether the token counts are the provider's or gw's estimate; ``recovered``: put back
    at start-up from the usage journal of a run that was killed before writing it
    (gw/telemetry/usage_journal.py), so its trace may be missing. ``gateway``: the
    gateway that served it (gw/fleet/gateway_id.py); None in rows written before gw
    recorded it, so an older journal's rows still decode. ``policy``: the policy that
    decided it, counted by that policy's budget (None in older rows, likewise).
    """

    request_id: str
    time: float
    day: str
    month: str
    tenant: str | None
    key_id: str | None
    route: str
    provider: str | None
    model: str | None
    status: int
    error_code: str | None
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    cost_usd: float | None = None
    usage_source: UsageSource | None = None
    recovered: bool = False
    gateway: str | None = None
    policy: str | None = None


class UsageSink(Protocol):
    """Takes one usage row per request and keeps it (invariant 8: usage is durable).

    ``submit`` never blocks, raises or drops. Backpressure happens before a request
    starts instead: ``wait_for_room`` returns at once while the sink has room, and while
    it is full waits (for a bounded time) for its writer to catch up; not while its store
    is unreachable, when waiting would make no room (rows spool: gw/telemetry/usage.py).
    """

    def submit(self, row: UsageRow) -> None: ...

    async def wait_for_room(self) -> None: ...


class Clock(Protocol):
    def time(self) -> float:
        """Wall-clock seconds since the epoch (for timestamps)."""
        ...

    def monotonic(self) -> float:
        """Monotonic seconds (for durations)."""
        ...


Sleep = Callable[[float], Awaitable[None]]


TrialClaim = Literal["won", "asking"]
"""``BreakerShare.claim_trial``'s answer: this gateway may send the trial now, or it asked
the fleet and ``HealthBook.fleet_trial`` will say who won."""


class BreakerShare(Protocol):
    """Circuit breakers shared by a fleet of gateways (gw/fleet/): this gateway's breaker
    transitions go out, the others' come in (``HealthBook.open_remote`` / ``close_remote``).

    The health book calls these on the request path, so none may block or raise: an
    implementation queues the work for a background task. The one without a fleet
    (``gw/execution/breaker_share.py``) does nothing and wins every trial.
    """

    def opened(self, key: str, *, cooldown: float, openings: int, cause: str) -> None:
        """This gateway opened (or, after a failed trial, reopened) ``key``'s breaker."""
        ...

    def closed(self, key: str) -> None:
        """This gateway's half-open trial of ``key`` succeeded: the breaker is closed."""
        ...

    def claim_trial(self, key: str, *, ttl: float) -> TrialClaim:
        """May this gateway send ``key``'s half-open trial? At most one gateway of the
        fleet does, each claim for ``ttl`` seconds."""
        ...


class LimitGrant(msgspec.Struct, frozen=True, kw_only=True):
    """A tenant's request admitted by its limits; ``notes`` go into the decision, and so
    into the trace and ``gw explain`` (e.g. counted in a fallback while Redis was down)."""

    notes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()  # sent to the client too (a budget nearly spent)


class TenantLimits(Protocol):
    """A tenant's rate limits, concurrency and budgets: counted in the process
    (gw/execution/local_limits.py) or shared by a fleet in Redis (gw/fleet/redis_limits.py).

    ``admit`` takes the request's share of every limit, or raises the limit's error
    (``RateLimitedError``, ``ConcurrencyLimitedError``, ``BudgetExceededError``, ...)
    having taken nothing. ``lease_ttl`` bounds how long a share held by a process that
    died is kept. ``settle`` returns at once (it runs on the request's way out); what it
    must still write is finished by ``drain``. ``seed`` gives each budget's spend in its
    current periods from the usage ledger, (subject, period label, USD) rows: a counter
    holding less is raised to it, never lowered.
    """

    async def admit(
        self,
        tenant: TenantConfig,
        request_id: str,
        *,
        tokens: int,
        cost_usd: float,
        lease_ttl: float,
        now: float,
        wall: float,
    ) -> LimitGrant: ...

    def settle(self, request_id: str, *, tokens: int, cost_usd: float | None) -> None: ...

    async def seed(self, spend: Iterable[tuple[str, str, float]]) -> None: ...

    async def spent(self, tenant: str, label: str) -> float: ...

    async def in_flight(self, tenant: str) -> int: ...

    def fallback_counts(self) -> Mapping[tuple[str, str], int]:
        """Requests decided without the shared counts, by (kind, policy): see
        gw/fleet/limits_fallback.py. Empty where nothing is shared."""
        ...

    async def drain(self) -> None: ...

    async def aclose(self) -> None: ...


class SessionPins(Protocol):
    """Where sticky sessions are pinned (gw/execution/sticky_sessions.py): ``key`` is a
    keyed digest of a session key, never the key itself. In the process
    (``LocalSessionPins``) or shared by a fleet in Redis (gw/fleet/redis_sessions.py).

    Pins are a hint, lossy by design: ``get`` answers None when it cannot tell, and
    ``put`` and ``drop`` never block or raise (a fleet's writes go out in the background).
    """

    async def get(self, key: str) -> SessionPin | None: ...

    def put(self, key: str, pin: SessionPin, *, ttl: float) -> None: ...

    def drop(self, key: str) -> None: ...

    async def aclose(self) -> None: ...


class CachedAnswerRows(Protocol):
    """The response cache's answers at rest (gw/store/cached_answers.py documents each
    call): sealed bytes by cache key, with a wall-clock expiry."""

    async def keys(self, *, now: float) -> list[tuple[str, float, int]]: ...

    async def get(self, key: str, *, now: float) -> bytes | None: ...

    async def put_many(self, rows: Sequence[tuple[str, float, bytes]]) -> None: ...

    async def delete(self, keys: Sequence[str]) -> None: ...

    async def expire(self, *, now: float) -> int: ...


class Sealer(Protocol):
    """Seals content to the vault identity and opens it (gw/vault/content_seal.py)."""

    def seal(self, plain: bytes) -> bytes: ...

    def open(self, sealed: bytes) -> bytes: ...
