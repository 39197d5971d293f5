"""What the engine is handed (an ``ExecutionPlan``) and what it hands back: an ``Answer``,
or ``ExecutionFailedError`` with every attempt made."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Generic, TypeVar

import msgspec

from gw.config.schema import ModelEntry, PolicyConfig, ProviderConfig
from gw.config.snapshot import ProviderAccount
from gw.errors import GatewayError
from gw.execution.accounts import AccountPin
from gw.execution.semantic_cache import Probe
from gw.execution.sticky_sessions import SessionTicket
from gw.ir import ChatRequest, ChatResponse, EmbeddingRequest, EmbeddingResponse
from gw.record import AttemptRecord
from gw.routing.decision import RouteDecision, TargetRef

RequestT = TypeVar("RequestT", ChatRequest, EmbeddingRequest)
ResponseT = TypeVar("ResponseT", ChatResponse, EmbeddingResponse)


class ExecutionPlan(msgspec.Struct, Generic[RequestT], frozen=True, kw_only=True):
    request_id: str
    request: RequestT
    decision: RouteDecision
    policy: PolicyConfig
    providers: Mapping[str, ProviderConfig]
    # Each provider's accounts (Snapshot.accounts); a provider missing here has one.
    accounts: Mapping[str, tuple[ProviderAccount, ...]] = msgspec.field(default_factory=dict)
    # Targets whose half-open breaker this request claimed the trial of (gw/execution/health).
    trials: frozenset[str] = frozenset()
    # Snapshot.catalog: each target's max_output_tokens (gw/execution/output_limit.py).
    catalog: Mapping[tuple[str, str], ModelEntry] = msgspec.field(default_factory=dict)
    # Only this account of its provider may serve (the gateway keeps the chain on it).
    pin: AccountPin | None = None
    # A sticky request's session, pinned to what answers (gw/execution/sticky_sessions.py).
    session: SessionTicket | None = None
    # The plugins' before_attempt hooks (gw/execution/plugin_run.py), called before each
    # upstream call; a GatewayError from them ends the request. None: no plugin has one.
    before_attempt: Callable[[TargetRef], Awaitable[None]] | None = None
    # The response cache's key for its answer (gw/execution/cache_use.py); None: not kept.
    cache_key: str | None = None
    # Its question's embedding, kept with its answer (gw/execution/semantic_cache.py).
    probe: Probe | None = None

    @property
    def prefer(self) -> AccountPin | None:
        """Tried first of its provider's accounts when free: a kept sticky session's
        account, whose prompt cache is warm. Unlike ``pin``, not the only one."""
        return None if self.session is None else self.session.prefer


class ExecutionFailedError(Exception):
    """Every allowed attempt failed; ``error`` is the one the client sees."""

    def __init__(self, error: GatewayError, attempts: list[AttemptRecord]) -> None:
        super().__init__(error.message)
        self.error = error
        self.attempts = attempts


class Answer(msgspec.Struct, Generic[ResponseT], frozen=True, kw_only=True):
    response: ResponseT
    target: TargetRef
    attempts: list[AttemptRecord]
