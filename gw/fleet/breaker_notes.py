"""The messages gateways exchange about their circuit breakers, and what one means here.

A gateway whose breaker opens writes an ``Opened`` note to Redis (the key
``<prefix>breaker:<target>``, expiring when the breaker can no longer matter) and
publishes it on the channel ``<prefix>breaker``; a successful half-open trial deletes the
key and publishes ``Closed``. ``opened_at`` is Redis's own clock (TIME, taken by the
script that writes the note), so every gateway measures the cooldown against one clock,
whatever its own says. No I/O here: decoding, and applying a note to a health book.
"""

from __future__ import annotations

from typing import Final

import msgspec

from gw.execution.health import HealthBook

KEY_PREFIX: Final = "gw:v1:"


class Opened(msgspec.Struct, frozen=True, kw_only=True, tag="open", tag_field="kind"):
    target: str  # provider/model
    gateway: str  # the gateway whose breaker opened (gw/fleet/gateway_id.py)
    opened_at: float  # Redis TIME, epoch seconds
    cooldown: float  # seconds
    openings: int  # openings in a row, as the opener counts them
    cause: str  # why, in words (never content: the health book's cause)


class Closed(msgspec.Struct, frozen=True, kw_only=True, tag="close", tag_field="kind"):
    target: str
    gateway: str  # the gateway whose trial succeeded


BreakerNote = Opened | Closed
_decoder: Final = msgspec.json.Decoder(BreakerNote)


def decode_note(data: bytes | str) -> BreakerNote | None:
    """A note from Redis, or None for anything else (another version's, or garbage): a
    gateway must not be taken down by what a peer wrote."""
    try:
        return _decoder.decode(data)
    except msgspec.DecodeError:
        return None


def encode_note(note: BreakerNote) -> bytes:
    return msgspec.json.encode(note)


def remaining_cooldown(note: Opened, redis_now: float) -> float:
    """Seconds of ``note``'s cooldown left at ``redis_now`` (Redis's clock), within
    [0, cooldown]: a skewed estimate can neither lengthen nor invert it."""
    return min(max(note.opened_at + note.cooldown - redis_now, 0.0), note.cooldown)


def apply_note(
    book: HealthBook, note: BreakerNote, *, me: str, redis_now: float, now: float
) -> bool:
    """Apply another gateway's note to this gateway's breakers (``now``: the book's
    monotonic clock). This gateway's own notes, heard back, change nothing. True when
    the book changed."""
    if note.gateway == me:
        return False
    if isinstance(note, Closed):
        return book.close_remote(note.target)
    return book.open_remote(
        note.target,
        gateway=note.gateway,
        remaining=remaining_cooldown(note, redis_now),
        cooldown=note.cooldown,
        openings=note.openings,
        cause=note.cause,
        now=now,
    )
