"""Trace records: the metadata gw keeps of each request. Never a prompt, completion or secret."""

from __future__ import annotations

import re
from typing import Literal

import msgspec

from gw.ir.usage import Usage
from gw.routing.decision import RouteDecision

AttemptOutcome = Literal[
    "answered", "retried", "next_account", "fell_back", "failed", "aborted", "hedge_lost"
]
UsageSource = Literal["provider", "estimate", "cache"]  # cache: a hit, nothing billed
CacheOutcome = Literal["hit", "miss", "bypass"]
REQUEST_ID_PREFIX = "req_"
MAX_CLIENT_REQUEST_ID = 128
MESSAGE_ID_PREFIX = "msg_"  # Anthropic's; gw's /v1/messages answers carry msg_ + the id
RESPONSE_ID_PREFIX = "resp_"  # OpenAI Responses'; gw's /v1/responses answers: resp_ + the id


def message_id(request_id: str) -> str:
    """The Anthropic message id gw gives the answer to ``request_id``."""
    return MESSAGE_ID_PREFIX + request_id.removeprefix(REQUEST_ID_PREFIX)


def kept_client_request_id(sent: str) -> str:
    """A client's ``x-request-id`` as a trace keeps it: the first 128 characters. A search
    cuts its id the same way, so the id the client sent always finds its trace."""
    return sent[:MAX_CLIENT_REQUEST_ID]


def request_id_of(given: str) -> str:
    """The request id behind an id a client holds: ``msg_...`` from ``message_id``,
    ``resp_...`` from ``response_id``, or the request id (or a prefix of it) itself."""
    for prefix in (MESSAGE_ID_PREFIX, RESPONSE_ID_PREFIX):
        if given.startswith(prefix):
            return REQUEST_ID_PREFIX + given.removeprefix(prefix)
    return given


_RESPONSE_ID = re.compile(r"resp_[0-9a-f]{28}")


def is_response_id(given: str) -> bool:
    """Whether ``given`` has the shape of a Responses id gw gives (``resp_`` + 28 hex)."""
    return _RESPONSE_ID.fullmatch(given) is not None


def shown_response_id(given: str) -> str:
    """``given`` as an error message may quote it: only an id of gw's shape (any other
    text is the client's own, and messages reach traces)."""
    return given if is_response_id(given) else "(not an id gw gives)"


def response_id(request_id: str) -> str:
    """The Responses id gw gives the answer to ``request_id``."""
    return RESPONSE_ID_PREFIX + request_id.removeprefix(REQUEST_ID_PREFIX)


class RecordStruct(msgspec.Struct, frozen=True, kw_only=True):
    """Base of trace values (unknown fields tolerated so old readers survive new writers)."""


class AttemptRecord(RecordStruct, frozen=True, kw_only=True):
    """One call to one upstream target.

    ``outcome``: answered; retried (the same target and account are called again);
    next_account (this account is locked, the target's next account is tried); fell_back
    (the next target is tried); failed (the request ends with this error); aborted (the
    client left); hedge_lost (a parallel attempt answered first, this one was cancelled).
    ``hedge``: started by hedging, in parallel with the first target.
    ``account`` names the provider's account (``default`` when it has one).
    """

    number: int
    provider: str
    model: str
    account: str | None
    started_at: float
    latency_ms: float
    ttft_ms: float | None
    outcome: AttemptOutcome
    upstream_status: int | None = None
    error_code: str | None = None
    error_message: str | None = None
    blame: str | None = None
    retry_after_s: float | None = None
    backoff_ms: float = 0.0
    provider_kind: str | None = None  # which wire format the attempt spoke
    # What the upstream's format could not carry exactly (dropped schema keywords, ...).
    translation_notes: tuple[str, ...] = ()
    # What gw set of the attempt's max_tokens: clamped to the model's max_output_tokens, or
    # a default added where the provider requires one (gw/execution/output_limit.py).
    limit_notes: tuple[str, ...] = ()
    hedge: bool = False
    # The upstream's own id for its answer (a Responses upstream's resp_..., a chat
    # completion's chatcmpl-...): what a previous_response_id is forwarded as.
    upstream_response_id: str | None = None


class TraceRecord(RecordStruct, frozen=True, kw_only=True):
    """Everything ``gw explain`` shows for one request."""

    request_id: str
    time: float
    endpoint: str
    requested_model: str
    stream: bool
    status: int
    revision: int
    latency_ms: float
    route: str | None = None
    policy: str | None = None
    provider: str | None = None
    model: str | None = None
    error_code: str | None = None
    error_message: str | None = None
    client_request_id: str | None = None
    tenant: str | None = None
    key_id: str | None = None
    ttft_ms: float | None = None
    decision: RouteDecision | None = None
    attempts: tuple[AttemptRecord, ...] = ()
    usage: Usage | None = None
    usage_source: UsageSource | None = None
    cost_usd: float | None = None
    committed: bool = False
    background: bool = False  # run by the background worker (POST /v1/responses background)
    # The gateway that served the request (gw/fleet/gateway_id.py); None in traces written
    # before gw recorded it.
    gateway: str | None = None
    # An Idempotency-Key retry answered with a stored answer (gw/server/inference/
    # idempotency.py): the request id that answered first. No upstream call, no usage.
    replay_of: str | None = None
    # The response cache, where the policy uses it (gw/execution/cache_use.py): ``hit``
    # (answered from it, ``cache_of`` the request whose answer it was), ``miss`` (looked
    # up, not found), ``bypass`` (not looked up: the client said no-cache or no-store).
    cache: CacheOutcome | None = None
    cache_of: str | None = None

    @property
    def route_header(self) -> str:
        """``provider/model`` that answered, or was last tried; ``-`` when none was tried."""
        return f"{self.provider}/{self.model}" if self.provider else "-"

    @property
    def answered(self) -> bool:
        """An upstream answered (a stream cut after its first token counts: it answered)."""
        return self.provider is not None and (self.error_code is None or self.committed)
