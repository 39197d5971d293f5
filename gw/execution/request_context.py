"""What the server and the gateway pass each other about one request: its context (who
asked, when, against which pinned config revision), and its outcomes (an answer with its
trace, or a failure whose trace is already recorded), and the deny rules of a request
that is never routed."""

from __future__ import annotations

import msgspec

from gw.config.schema import TenantBudget
from gw.config.snapshot import Snapshot
from gw.errors import GatewayError
from gw.execution.accounts import AccountPin
from gw.execution.response_cache import CacheMode
from gw.ir import ChatRequest, ChatResponse, EmbeddingResponse
from gw.record import TraceRecord
from gw.routing.hints import RoutingHints
from gw.routing.policy import kind_of_endpoint
from gw.routing.router import denied_error, governing_policy


class RequestContext(msgspec.Struct, frozen=True, kw_only=True):
    """Who asked, when, and against which config revision (pinned for the whole request)."""

    request_id: str
    snapshot: Snapshot
    endpoint: str
    started_at: float
    started_mono: float
    client_request_id: str | None = None
    tenant: str | None = None
    key_id: str | None = None
    key_budget: TenantBudget | None = None  # the API key's budget (gw keys ... --daily-usd)
    hints: RoutingHints | None = None  # from request headers; they only narrow routing
    # Only this provider's account may serve: it holds the response a Responses request
    # continues (previous_response_id, gw/server/inference/previous_response.py).
    pin: AccountPin | None = None
    background: bool = (
        False  # a background Responses job, run by gw/server/inference/background_worker.py
    )
    # What the client's Cache-Control / x-gw-cache allow the response cache to do.
    cache_mode: CacheMode = "use"


class RequestFailedError(Exception):
    """The request failed; ``trace`` is already recorded and carries the gw metadata."""

    def __init__(self, error: GatewayError, trace: TraceRecord) -> None:
        super().__init__(error.message)
        self.error = error
        self.trace = trace


class Completed(msgspec.Struct, frozen=True, kw_only=True):
    response: ChatResponse
    trace: TraceRecord


class Embedded(msgspec.Struct, frozen=True, kw_only=True):
    """An embeddings answer with its (already submitted) trace."""

    response: EmbeddingResponse
    trace: TraceRecord


def refuse_if_denied(ctx: RequestContext, request: ChatRequest) -> None:
    """A request answered without routing (count_tokens) still honours deny rules."""
    policy = governing_policy(
        request,
        ctx.snapshot,
        kind=kind_of_endpoint(ctx.endpoint),
        tenant=ctx.tenant,
        api_key_id=ctx.key_id,
    )
    if policy is not None and policy.deny:
        raise denied_error(policy)
