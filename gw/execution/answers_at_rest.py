"""The response cache's answers at rest: sealed to the vault identity, in the store.

The hot entries live in memory (gw/execution/response_cache.py); every answer kept there
is also written, sealed, to the store's ``cached_answers`` table, off the request's path.
A restarted gateway reads the keys (digests) and expiries back at start, and serves a
kept answer from the store the first time it is asked for, opening it then (a few tenths
of a millisecond) and keeping it in memory again. A key this gateway has not seen is
never looked up in the store, so a miss costs no read. Gateways of a fleet sharing
PostgreSQL each read back what was kept when they start, not what others keep after.
The table is bounded as the memory is, by ``cache.max_bytes``: the rows that expire
first go.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

import msgspec

from gw.execution.response_cache import CachedAnswer
from gw.execution.semantic_cache import Probe
from gw.ir import ChatResponse, NativeBlock, TextPart, ThinkingPart, ToolCall, Usage
from gw.ir.events import FinishReason
from gw.ports import CachedAnswerRows, Sealer
from gw.routing.decision import TargetRef

log = logging.getLogger(__name__)


class _StoredCall(msgspec.Struct, tag="tool_call", frozen=True, kw_only=True):
    """A tool call among an answer's blocks, tagged like the other blocks: msgspec reads
    a union of structs back only when each is tagged, and the IR's ``ToolCall`` is not."""

    id: str
    name: str
    arguments: str


class _StoredResponse(msgspec.Struct, frozen=True, kw_only=True):
    """``ChatResponse`` as it is kept at rest (its blocks' tool calls tagged)."""

    id: str
    model: str
    text: str | None
    refusal: str | None
    thinking: tuple[ThinkingPart, ...]
    tool_calls: tuple[ToolCall, ...]
    blocks: tuple[TextPart | ThinkingPart | NativeBlock | _StoredCall, ...]
    finish_reason: FinishReason
    stop_sequence: str | None
    usage: Usage | None
    created: int


class _Stored(msgspec.Struct, frozen=True, kw_only=True):
    """A ``CachedAnswer`` at rest; its expiry is the row's (wall clock)."""

    response: _StoredResponse
    request_id: str
    target: TargetRef
    size: int
    max_tokens: int | None
    cost_usd: float | None
    probe: Probe | None


def _stored(entry: CachedAnswer) -> bytes:
    r = entry.response
    blocks = tuple(
        _StoredCall(id=b.id, name=b.name, arguments=b.arguments) if isinstance(b, ToolCall) else b
        for b in r.blocks
    )
    response = _StoredResponse(
        id=r.id, model=r.model, text=r.text, refusal=r.refusal, thinking=r.thinking,
        tool_calls=r.tool_calls, blocks=blocks, finish_reason=r.finish_reason,
        stop_sequence=r.stop_sequence, usage=r.usage, created=r.created,
    )  # fmt: skip
    return msgspec.msgpack.encode(
        _Stored(
            response=response,
            request_id=entry.request_id,
            target=entry.target,
            size=entry.size,
            max_tokens=entry.max_tokens,
            cost_usd=entry.cost_usd,
            probe=entry.probe,
        )
    )


def _entry(plain: bytes, expires_at: float) -> CachedAnswer:
    kept = msgspec.msgpack.decode(plain, type=_Stored)
    r = kept.response
    blocks = tuple(
        ToolCall(id=b.id, name=b.name, arguments=b.arguments) if isinstance(b, _StoredCall) else b
        for b in r.blocks
    )
    response = ChatResponse(
        id=r.id, model=r.model, text=r.text, refusal=r.refusal, thinking=r.thinking,
        tool_calls=r.tool_calls, blocks=blocks, finish_reason=r.finish_reason,
        stop_sequence=r.stop_sequence, usage=r.usage, created=r.created,
    )  # fmt: skip
    return CachedAnswer(
        response=response, request_id=kept.request_id, target=kept.target,
        expires_at=expires_at, size=kept.size, max_tokens=kept.max_tokens,
        cost_usd=kept.cost_usd, probe=kept.probe,
    )  # fmt: skip


FLUSH_AFTER_S = 1.0  # answers kept meanwhile are sealed and written together
FLUSH_AT = 256  # ... or as soon as this many wait
BOUND_TO = 0.9  # beyond max_bytes, rows go until this share of it is left


class AnswersAtRest:
    def __init__(self, rows: CachedAnswerRows, sealer: Sealer) -> None:
        self._rows = rows
        self._sealer = sealer
        self._known: dict[str, tuple[float, int]] = {}  # key -> (wall expiry, size)
        self._bytes = 0  # the sum of the known sizes
        self._waiting: dict[str, tuple[CachedAnswer, float]] = {}  # key -> (entry, expires)
        self._flush: asyncio.Task[None] | None = None
        self._flush_now = asyncio.Event()  # the batch is full, or gw is stopping
        self._draining = False
        self._max_bytes = 0
        self._warned = False

    async def start(self, *, wall: float) -> None:
        """Drop what expired and learn which keys are kept (never their answers)."""
        await self._rows.expire(now=wall)
        for key, expires, size in await self._rows.keys(now=wall):
            self._know(key, expires, size)

    def holds(self, key: str, *, wall: float) -> bool:
        known = self._known.get(key)
        return known is not None and known[0] > wall

    async def fetch(self, key: str, *, wall: float, mono: float) -> CachedAnswer | None:
        """The answer kept under ``key``, its expiry on the monotonic clock; None when it
        is gone or cannot be opened (the vault key changed: then it is forgotten)."""
        try:
            sealed = await self._rows.get(key, now=wall)
            if sealed is None:
                self._forget(key)
                return None
            plain = await asyncio.to_thread(self._sealer.open, sealed)
            expires = self._known.get(key, (wall, 0))[0]
            return _entry(plain, mono + (expires - wall))
        except Exception:  # noqa: BLE001 -- any store fault or a damaged row: a miss, said once
            self._forget(key)
            self._warn("could not read a cached answer back from the store")
            with contextlib.suppress(Exception):  # a row no one can open goes too
                await self._rows.delete([key])
            return None

    def keep(self, key: str, entry: CachedAnswer, *, expires: float, max_bytes: int) -> None:
        """Write ``entry`` sealed under ``key`` until ``expires`` (wall clock), off the
        request's path: answers kept within ``FLUSH_AFTER_S`` are sealed in a worker thread
        and written in one transaction; then the rows that expire first go, beyond
        ``max_bytes``."""
        self._waiting[key] = (entry, expires)
        self._max_bytes = max_bytes
        if self._flush is None:
            self._flush = asyncio.get_running_loop().create_task(self._flush_soon())
        elif len(self._waiting) >= FLUSH_AT:
            self._flush_now.set()

    async def _flush_soon(self) -> None:
        """Write what waits after each linger (or full batch), until nothing waits."""
        try:
            while self._waiting:
                if not self._draining:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._flush_now.wait(), FLUSH_AFTER_S)
                self._flush_now.clear()
                await self._write(self._waiting)
        finally:
            self._flush = None

    async def _write(self, waiting: dict[str, tuple[CachedAnswer, float]]) -> None:
        if not waiting:
            return
        batch, self._waiting = dict(waiting), {}
        try:
            rows = await asyncio.to_thread(self._sealed, batch)
            await self._rows.put_many(rows)
            for key, expires, sealed in rows:
                self._know(key, expires, len(sealed))
            if self._bytes > self._max_bytes:
                await self._bound()
        except Exception:  # noqa: BLE001 -- any store fault: the answers stay in memory only
            self._warn("could not keep cached answers in the store")

    def _sealed(
        self, batch: dict[str, tuple[CachedAnswer, float]]
    ) -> list[tuple[str, float, bytes]]:
        seal = self._sealer.seal
        return [(key, expires, seal(_stored(entry))) for key, (entry, expires) in batch.items()]

    def _know(self, key: str, expires: float, size: int) -> None:
        self._forget(key)
        self._known[key] = (expires, size)
        self._bytes += size

    def _forget(self, key: str) -> None:
        known = self._known.pop(key, None)
        if known is not None:
            self._bytes -= known[1]

    async def _bound(self) -> None:
        """Drop the rows that expire first until ``BOUND_TO`` of the bound is left (a
        margin, so the next writes do not each drop one)."""
        keep_to = int(self._max_bytes * BOUND_TO)
        dropped: list[str] = []
        for key, _ in sorted(self._known.items(), key=lambda item: item[1][0]):
            if self._bytes <= keep_to:
                break
            self._forget(key)
            dropped.append(key)
        await self._rows.delete(dropped)

    def _warn(self, what: str) -> None:
        if not self._warned:
            self._warned = True
            log.warning("response cache: %s (said once)", what, exc_info=True)

    async def drain(self) -> None:
        """Write what waits now (at shutdown)."""
        self._draining = True
        flush = self._flush
        if flush is not None:
            self._flush_now.set()
            await flush
