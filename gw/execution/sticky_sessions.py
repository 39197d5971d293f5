"""Sticky sessions for provider prompt caches (``policies[].sticky``).

A provider caches a prompt's prefix on the machine that served it, and for a key or
account: a conversation that hops between targets (a weighted or latency strategy, a
provider's round-robin accounts) pays for its whole prompt on every turn. A sticky
policy pins each conversation to the target and account that last answered it, first
in the chain while that target is healthy (the routing rules: gw/routing/sticky.py).

Strategy:

- The session key is the first of ``sticky.key_from`` the request has: ``header``
  (``x-gw-session-id``), ``prompt_cache_key`` (OpenAI chat and Responses), ``user``
  (OpenAI ``user`` or ``safety_identifier``, Anthropic ``metadata.user_id``, all in
  ``ChatRequest.user`` or the codec's extensions), ``first_messages`` (the system prompt
  and first user message, as IR, so one conversation is one session in any format).
- Only a keyed digest of it is kept: HMAC-SHA-256 under a key derived from the vault
  identity (the same across a fleet that shares its vault key, unknown to whoever reads
  the pins), scoped by tenant, policy and route. No prompt text is held anywhere.
- The pin is ``provider/model`` and account, not a snapshot's object: a config reload
  keeps every pin whose target is still routed to.
- A pin is written when an answer (or a stream's commit) comes, so a moved session
  lands wherever the fallback took it; each answer renews its ``ttl``.
- Embeddings are never sticky: they have no prompt cache.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import secrets
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Final

import msgspec

from gw.config.schema import PolicyConfig, SessionKeySource
from gw.execution.accounts import AccountPin
from gw.execution.request_context import RequestContext
from gw.ir import ChatRequest, EmbeddingRequest, SystemMessage, UserMessage
from gw.ports import Clock, SessionPins
from gw.record import AttemptRecord
from gw.routing.decision import RouteDecision, TargetRef
from gw.routing.health import HealthView
from gw.routing.hints import RoutingHints
from gw.routing.sticky import SessionPin, stuck_decision

MAX_LOCAL_SESSIONS: Final = 100_000  # the in-process pins, least recently used dropped
DIGEST_LABEL: Final = b"gw sticky session v1\x00"


class SessionTicket(msgspec.Struct, frozen=True, kw_only=True):
    """One sticky request's session: its digest, what it was pinned to before (None: new
    or moved), and how long its pin lasts."""

    key: str
    ttl: float
    kept: SessionPin | None = None

    @property
    def prefer(self) -> AccountPin | None:
        """The account a kept session asks for first (the engine skips it when locked)."""
        if self.kept is None or self.kept.account is None:
            return None
        return AccountPin(provider=self.kept.provider, account=self.kept.account)


class LocalSessionPins:
    """``SessionPins`` in this process: bounded (least recently used out first), each
    pin forgotten ``ttl`` seconds after its last write."""

    def __init__(self, clock: Clock, *, max_sessions: int = MAX_LOCAL_SESSIONS) -> None:
        self._clock = clock
        self._max = max_sessions
        self._pins: OrderedDict[str, tuple[SessionPin, float]] = OrderedDict()

    async def get(self, key: str) -> SessionPin | None:
        held = self._pins.get(key)
        if held is None:
            return None
        pin, until = held
        if until <= self._clock.monotonic():
            del self._pins[key]
            return None
        self._pins.move_to_end(key)
        return pin

    def put(self, key: str, pin: SessionPin, *, ttl: float) -> None:
        self._pins[key] = (pin, self._clock.monotonic() + ttl)
        self._pins.move_to_end(key)
        while len(self._pins) > self._max:
            self._pins.popitem(last=False)

    def drop(self, key: str) -> None:
        self._pins.pop(key, None)

    async def aclose(self) -> None:
        return None

    def __len__(self) -> int:
        return len(self._pins)


class StickySessions:
    """Reads a sticky request's pin before its attempts, writes it after its answer."""

    def __init__(self, pins: SessionPins, secret: Callable[[], bytes] | None = None) -> None:
        self._pins = pins
        # Deriving the vault-identity key may read a file: once, off the event loop.
        self._make_secret = secret or (lambda: secrets.token_bytes(32))
        self._secret: bytes | None = None

    @classmethod
    def local(cls, clock: Clock) -> StickySessions:
        """Pins in this process, under a key of its own (a gateway alone, or a test's)."""
        return cls(LocalSessionPins(clock))

    async def steer(
        self,
        ctx: RequestContext,
        request: ChatRequest | EmbeddingRequest,
        decision: RouteDecision,
        policy: PolicyConfig,
        health: HealthView,
    ) -> tuple[RouteDecision, SessionTicket | None]:
        """The decision with the session's pinned target first (while it holds), and the
        ticket to pin the answer with; a request that is not sticky passes unchanged, and
        so does one an ``AccountPin`` holds (``previous_response_id``)."""
        config = policy.sticky
        if not config.enabled or not decision.chain or ctx.pin is not None:
            return decision, None
        found = session_key(request, ctx.hints, config.key_from)
        if found is None:
            return decision, None
        source, value = found
        key = await self._digest(value, source, ctx.tenant, policy.name, decision.route)
        pin = await self._pins.get(key)
        decision, outcome = stuck_decision(decision, pin, health, source=source)
        kept = pin if outcome == "kept" else None
        return decision, SessionTicket(key=key, ttl=config.ttl.seconds, kept=kept)

    def remember(
        self, ticket: SessionTicket | None, target: TargetRef, attempts: Sequence[AttemptRecord]
    ) -> None:
        """Pin the session to what answered it (``target``, by the last attempt's account)."""
        if ticket is None:
            return
        account = next(
            (a.account for a in reversed(attempts) if a.provider == target.provider), None
        )
        pin = SessionPin(provider=target.provider, model=target.model, account=account)
        self._pins.put(ticket.key, pin, ttl=ticket.ttl)

    async def aclose(self) -> None:
        await self._pins.aclose()

    async def _digest(
        self, value: bytes, source: str, tenant: str | None, policy: str, route: str
    ) -> str:
        if self._secret is None:
            self._secret = await asyncio.to_thread(self._make_secret)
        scope = "\x00".join((tenant or "", policy, route, source)).encode()
        mac = hmac.new(self._secret, DIGEST_LABEL + scope + b"\x00", hashlib.sha256)
        mac.update(value)
        return mac.hexdigest()


def session_key(
    request: ChatRequest | EmbeddingRequest,
    hints: RoutingHints | None,
    sources: Sequence[SessionKeySource],
) -> tuple[SessionKeySource, bytes] | None:
    """The request's session key by the first source that has one, and that source;
    None for embeddings, which have no prompt cache to keep warm."""
    if not isinstance(request, ChatRequest):
        return None
    for source in sources:
        value = _read(request, hints, source)
        if value:
            return source, value
    return None


def _read(request: ChatRequest, hints: RoutingHints | None, source: SessionKeySource) -> bytes:
    if source == "header":
        return (hints.session or "").encode() if hints is not None else b""
    if source == "prompt_cache_key":
        return _extension(request, "prompt_cache_key").encode()
    if source == "user":
        return (request.user or _extension(request, "safety_identifier")).encode()
    return _first_messages(request)


def _extension(request: ChatRequest, name: str) -> str:
    """A string field the OpenAI codecs keep in their extensions, or ''."""
    for wire in ("openai", "openai_responses"):
        value = request.extensions.get(wire, {}).get(name)
        if isinstance(value, str):
            return value
    return ""


_ENCODER = msgspec.json.Encoder()


def _first_messages(request: ChatRequest) -> bytes:
    """The system prompt and first user message, encoded as IR (the same in any client
    format); empty when there is no user message."""
    system = [m for m in request.messages if isinstance(m, SystemMessage)]
    first = next((m for m in request.messages if isinstance(m, UserMessage)), None)
    if first is None:
        return b""
    return _ENCODER.encode([*system, first])
