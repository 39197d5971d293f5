"""``Idempotency-Key`` (draft-ietf-httpapi-idempotency-key-header): a retry of a request
that was answered gets the same answer, without a second upstream call.

Strategy: a request that sends the header, once authenticated and decoded, claims its key
in the state store (gw/store/idempotency_keys.py) before it takes an admission slot. The
key belongs to the caller (its tenant and API key; open mode has one local scope), so two
callers never see each other's answers. Then:

- nobody holds the key: the request runs; a 200 answer is sealed to the vault identity
  and kept for ``server.idempotency_ttl`` (within ``idempotency_max_answer_bytes`` each
  and ``idempotency_max_bytes`` together); any other outcome lets the key go, so a retry
  runs again (errors are not stored: a transient one is what the retry is for, and one
  the request caused comes back the same);
- the key was used for another endpoint or body: 422 ``idempotency_key_reused``;
- the request holding it still runs: 409 ``idempotency_key_in_use`` (Retry-After: 1);
- it was answered: that answer, body and status as they were, under this request's own
  id with ``x-gw-idempotent-replay: true`` and ``x-gw-replay-of`` naming the first; its
  trace says so and carries no usage or cost, so budgets are not charged twice.

A streaming request, or a background Responses one, that sends the header gets 400: gw
holds whole answers only. The claim is a row insert that the primary key refuses to a
second claimant, so a fleet sharing PostgreSQL tells duplicates apart across gateways.
A request without the header pays one header lookup.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
from collections.abc import Sequence
from typing import Any, Final

from litestar import Request, Response
from litestar.datastructures import State

from gw.config.schema import TimeoutConfig
from gw.config.snapshot import Snapshot
from gw.errors import (
    IdempotencyKeyInUseError,
    IdempotencyKeyReusedError,
    InternalError,
    InvalidRequestError,
)
from gw.execution.gateway import Gateway
from gw.execution.request_context import RequestContext
from gw.execution.tenant_admission import LEASE_GRACE_S
from gw.ports import Clock
from gw.server.responses import gw_headers
from gw.store.idempotency_keys import HeldKey, StoredAnswer
from gw.store.port import IdempotencyStore
from gw.vault.content_seal import ContentSeal

logger = logging.getLogger("gw.server")
HttpRequest = Request[Any, Any, State]  # gw.server.services's, which imports this module

HEADER: Final = "idempotency-key"
PARAM: Final = "Idempotency-Key"
REPLAY_HEADER: Final = "x-gw-idempotent-replay"
REPLAY_OF_HEADER: Final = "x-gw-replay-of"
MAX_KEY_CHARS: Final = 255
SWEEP_EVERY_S: Final = 60.0
FINGERPRINT_LABEL: Final = b"gw idempotency fingerprint v1\x00"
FORM: Final = (
    'Idempotency-Key takes one value: a quoted string (RFC 8941, as the draft says: "8e03978e-'
    '40d5-43e8-bc93-6894a57f9324") or a bare token, of 1 to 255 visible ASCII characters'
)


def parse_key(values: Sequence[str]) -> str:
    """The key the header fields ``values`` carry; ``InvalidRequestError`` when malformed."""
    if len(values) != 1:
        raise InvalidRequestError(f"{FORM}; this request sends {len(values)}", param=PARAM)
    raw = values[0].strip(" \t")
    # A bare token, as most clients send it, holds no quote, comma, backslash or space.
    key = _sf_string(raw) if raw.startswith('"') else _bare(raw)
    if key is None or not 1 <= len(key) <= MAX_KEY_CHARS or not _visible(key):
        raise InvalidRequestError(FORM, param=PARAM)
    return key


def _sf_string(raw: str) -> str | None:
    """An RFC 8941 sf-string's value (``\\"`` and ``\\\\`` unescaped); None if malformed."""
    chars: list[str] = []
    escaped = False
    for index, char in enumerate(raw[1:], start=1):
        if escaped:
            if char not in '"\\':
                return None
            chars.append(char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == '"':
            return "".join(chars) if index == len(raw) - 1 else None
        else:
            chars.append(char)
    return None  # no closing quote


def _bare(raw: str) -> str | None:
    return None if any(c in raw for c in '",\\ \t') else raw


def _visible(key: str) -> bool:
    """Printable ASCII; inside a quoted string a space is allowed, never at either end."""
    return key.isascii() and key.isprintable() and key == key.strip()


class Claim:
    """A key this request holds until it is kept (an answer) or let go."""

    def __init__(self, keys: Idempotency, ctx: RequestContext, scope: str, digest: str) -> None:
        self._keys = keys
        self._ctx = ctx
        self.scope = scope
        self.digest = digest

    async def keep(self, response: Response[Any]) -> None:
        """Hold ``response`` for retries when it is a 200 answer within the bounds; else
        let the key go. Never fails the response: a store that cannot be written is
        logged, and the key's pending row expires by itself."""
        await self._keys.keep(self, self._ctx, response)

    def abandon(self) -> None:
        """Let the key go without waiting (the request failed or was cancelled)."""
        self._keys.release_soon(self, self._ctx.request_id)


class Idempotency:
    """Claims, keeps and replays; one per server, built by wiring."""

    def __init__(
        self, store: IdempotencyStore, seal: ContentSeal, gateway: Gateway, clock: Clock
    ) -> None:
        self._store = store
        self._seal = seal
        self._gateway = gateway
        self._clock = clock
        self._fingerprint_key: bytes | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._next_sweep = 0.0

    async def begin(
        self,
        ctx: RequestContext,
        request: HttpRequest,
        body: bytes,
        *,
        model: str,
        stream: bool,
        background: bool = False,
    ) -> Claim | Response[bytes] | None:
        """None: no header, run as usual. A ``Claim``: run, then ``keep`` or ``abandon``.
        A response: the stored answer, replayed and traced. Raises the ``GatewayError``
        to answer with (400 malformed or not honoured here, 409, 422)."""
        values = request.headers.getall(HEADER, ())
        if not values:
            return None
        key = parse_key(values)
        if stream or background:
            raise InvalidRequestError(
                "Idempotency-Key is honoured on non-streaming requests only (gw holds whole "
                "answers); send this request without "
                + ("background: true" if background else "stream")
                + ", or without the header",
                param=PARAM,
            )
        now = self._clock.time()
        scope = f"t:{ctx.tenant or '-'}/k:{ctx.key_id or '-'}"
        digest = hashlib.sha256(key.encode()).hexdigest()
        try:
            fingerprint = await self._fingerprint(request.url.path, body)
            held = await self._store.claim(
                scope,
                digest,
                fingerprint=fingerprint,
                request_id=ctx.request_id,
                now=now,
                until=now + longest_run(ctx.snapshot),
            )
        except Exception as exc:  # noqa: BLE001 -- any store or vault failure: 500, said once
            raise _unavailable(exc) from None
        self._sweep_soon(now)
        if held is None:
            return Claim(self, ctx, scope, digest)
        if not hmac.compare_digest(held.fingerprint, fingerprint):
            raise IdempotencyKeyReusedError(
                "this Idempotency-Key was used for a request with another body or endpoint "
                "(within server.idempotency_ttl); send a new key for a new request",
                param=PARAM,
            )
        if held.state == "pending":
            raise IdempotencyKeyInUseError(
                f"a request with this Idempotency-Key ({held.request_id}) is still being "
                "answered; retry after it ends to get its answer",
                param=PARAM,
                retry_after=1,
            )
        return await self._replay(ctx, held, model)

    async def _replay(self, ctx: RequestContext, held: HeldKey, model: str) -> Response[bytes]:
        try:
            answer = await asyncio.to_thread(self._seal.open, held.answer or b"")
        except Exception as exc:  # noqa: BLE001 -- a vault key changed since: 500, said once
            raise _unavailable(exc) from None
        self._gateway.replayed(ctx, requested_model=model, replay_of=held.request_id)
        headers = gw_headers(ctx.request_id, held.route or "-", ctx.snapshot.revision)
        headers[REPLAY_HEADER] = "true"
        headers[REPLAY_OF_HEADER] = held.request_id
        return Response(
            content=answer,
            status_code=held.status or 200,
            media_type=held.media_type,
            headers=headers,
        )

    async def keep(self, claim: Claim, ctx: RequestContext, response: Response[Any]) -> None:
        server = ctx.snapshot.config.server
        content = response.content
        limit = server.idempotency_max_answer_bytes.bytes
        if response.status_code != 200 or not isinstance(content, bytes) or len(content) > limit:
            if isinstance(content, bytes) and len(content) > limit:
                logger.info(
                    "%s: an answer of %d bytes is over server.idempotency_max_answer_bytes; "
                    "not held for retries",
                    ctx.request_id,
                    len(content),
                )
            self.release_soon(claim, ctx.request_id)
            return
        try:
            sealed = await asyncio.to_thread(self._seal.seal, content)
            now = self._clock.time()
            stored = StoredAnswer(
                status=200,
                route=response.headers.get("x-gw-route", "-"),
                media_type=str(getattr(response.media_type, "value", response.media_type)),
                answer=sealed,
            )
            kept = await self._store.complete(
                claim.scope,
                claim.digest,
                request_id=ctx.request_id,
                stored=stored,
                now=now,
                expires_at=now + server.idempotency_ttl.seconds,
                max_total=server.idempotency_max_bytes.bytes,
            )
        except Exception as exc:  # noqa: BLE001 -- the answer goes out; the row expires
            logger.warning("%s: answer not held for retries: %s", ctx.request_id, exc)
            return
        if not kept:
            logger.info(
                "%s: answer not held for retries (server.idempotency_max_bytes reached)",
                ctx.request_id,
            )

    def release_soon(self, claim: Claim, request_id: str) -> None:
        self._spawn(self._store.release(claim.scope, claim.digest, request_id=request_id))

    def _sweep_soon(self, now: float) -> None:
        """Delete expired rows now and then, off the request's way."""
        if now >= self._next_sweep:
            self._next_sweep = now + SWEEP_EVERY_S
            self._spawn(self._expire(now))

    async def _expire(self, now: float) -> None:
        await self._store.expire(now=now)

    def _spawn(self, work: Any) -> None:
        task: asyncio.Task[None] = asyncio.ensure_future(_logged(work))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def aclose(self) -> None:
        """Wait for the releases and sweeps under way (at shutdown, before the store)."""
        if self._tasks:
            await asyncio.wait(list(self._tasks))

    async def _fingerprint(self, path: str, body: bytes) -> str:
        """The request as a digest keyed by the vault identity: equal requests give equal
        ones, and a guessed prompt cannot be checked against it without the identity."""
        if self._fingerprint_key is None:
            self._fingerprint_key = await asyncio.to_thread(self._derive_key)
        mac = hmac.new(self._fingerprint_key, path.encode() + b"\x00", hashlib.sha256)
        mac.update(body)
        return mac.hexdigest()

    def _derive_key(self) -> bytes:
        secret = self._seal.identity().secret_text().encode()
        return hashlib.sha256(FINGERPRINT_LABEL + secret).digest()


def longest_run(snapshot: Snapshot) -> float:
    """How long a pending claim holds its key: the longest ``timeout.total`` a request may
    run under, with the grace a limit lease has, so a claim a killed gw left behind
    blocks its key that long at most."""
    totals = [policy.timeout.total.seconds for policy in snapshot.config.policies]
    longest = max([TimeoutConfig().total.seconds, *totals])
    return longest + min(longest, LEASE_GRACE_S)


async def _logged(work: Any) -> None:
    try:
        await work
    except Exception as exc:  # noqa: BLE001 -- housekeeping; the rows expire by themselves
        logger.warning("idempotency keys: %s", exc)


def _unavailable(exc: Exception) -> InternalError:
    logger.warning("idempotency keys: %s", exc)
    return InternalError(
        "gw could not check this Idempotency-Key in its state store; send the request again"
    )
