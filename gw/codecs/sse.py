"""Server-sent events, sans I/O: an incremental parser and a frame encoder.

The parser follows the WHATWG "event stream interpretation" rules:

- lines end with ``\\r\\n``, ``\\n`` or ``\\r``; a chunk may end anywhere, also between the
  ``\\r`` and ``\\n`` of one line end or inside a multi-byte UTF-8 character;
- a blank line dispatches the event; an event whose data buffer is empty is dropped;
- ``:`` starts a comment, ``retry`` and unknown fields are ignored;
- ``id`` is the *last event id*: it persists across events until a new ``id`` line;
- at end of stream an event without its final blank line is discarded, not dispatched.
"""

from __future__ import annotations

import re
from typing import TypeAlias

import msgspec

from gw.errors import UpstreamError

_LINE_END = re.compile(r"\r\n|\r|\n")
_BOM = b"\xef\xbb\xbf"
# Byte values, not b"\r" and b"\n": ``int in bytes`` is a plain scan, while ``bytes in
# bytes`` first tries the operand as an int and raises and clears a TypeError, per call.
_CR = ord("\r")
_LF = ord("\n")
# One event (its data lines and the line being read) may not grow beyond this.
MAX_EVENT_BYTES = 16 * 2**20
# A dispatched event as the general path collects it: data, event name, last event id.
_Frame: TypeAlias = tuple[bytes, str | None, str | None]


class SSEMessage(msgspec.Struct, frozen=True, kw_only=True):
    """One dispatched event; ``event`` is None when the stream named no event type."""

    data: str
    event: str | None = None
    id: str | None = None


class SSEParser:
    """Feed bytes as they arrive; get back the events completed so far.

    Lines are split as bytes and only complete field values are decoded: a line end is
    never inside a UTF-8 sequence, so a character cut between chunks needs no decoder
    state. ``feed_data`` returns the data alone, as bytes, and reads the common chunk
    (``data: {...}\\n\\n``) without splitting it into lines.
    """

    def __init__(self) -> None:
        self._partial: list[bytes] = []  # pieces of the current line, not yet ended
        self._pending_bytes = 0  # of the current line and of the event's data lines
        self._skip_lf = False  # the previous chunk ended in "\r": a leading "\n" is its pair
        self._at_start = True
        self._data: list[bytes] = []
        self._event: str | None = None
        self._last_id: str | None = None
        # The last chunk ended an event and left nothing pending: the fast path may run.
        self._between_events = False

    def feed(self, data: bytes) -> list[SSEMessage]:
        """Parse ``data`` and return every event it completes, in order.

        Raises ``UpstreamError`` when one event grows beyond ``MAX_EVENT_BYTES``.
        """
        return [
            SSEMessage(data=payload.decode("utf-8", "replace"), event=event, id=last_id)
            for payload, event, last_id in self._parse(data)
        ]

    def feed_data(self, data: bytes) -> list[bytes]:
        """Like ``feed``, but return only each event's data, undecoded.

        For a reader that needs neither event names nor ids and decodes the bytes itself.
        """
        # Fast path: nearly every chunk is whole ``data:`` events, most often exactly one
        # ``data: {...}\n\n``. With nothing pending from earlier chunks (no partial line,
        # data lines, event name, "\r" or BOM check), such a chunk needs no line machinery.
        if not (
            self._between_events
            and data[-2:] == b"\n\n"
            and _CR not in data
            and len(data) <= MAX_EVENT_BYTES  # the general path raises for a larger chunk
        ):
            return [payload for payload, _, _ in self._parse(data)]
        if data[:6] == b"data: ":  # the usual chunk: one event of one line
            payload = data[6:-2]
            if _LF not in payload:
                return [payload]
        payloads: list[bytes] = []
        for event in data[:-2].split(b"\n\n"):
            if event[:5] != b"data:" or _LF in event:  # another field, or several lines
                return [payload for payload, _, _ in self._parse(data)]
            payloads.append(event[6:] if event[5:6] == b" " else event[5:])
        return payloads

    def _parse(self, data: bytes) -> list[_Frame]:
        """The general path: each completed event's data, event name and last event id."""
        self._between_events = False
        if not data:
            return []
        if self._at_start:
            data = self._without_bom(data)
            if not data:
                return []
        if self._skip_lf:
            self._skip_lf = False
            if data.startswith(b"\n"):
                data = data[1:]
        if _CR in data:
            self._skip_lf = data.endswith(b"\r")
            data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        self._count(len(data))
        if _LF not in data:  # a long line arriving in pieces: keep them, join once
            self._partial.append(data)
            return []
        if self._partial:
            self._partial.append(data)
            data = b"".join(self._partial)
            self._partial.clear()
        lines = data.split(b"\n")
        rest = lines.pop()
        if rest:
            self._partial.append(rest)
        messages: list[_Frame] = []
        data_lines = self._data
        for line in lines:
            # The common line, ``data: ...``, without a call.
            if line.startswith(b"data:"):
                data_lines.append(line[6:] if line.startswith(b" ", 5) else line[5:])
            else:
                self._take_line(line, messages)
        self._pending_bytes = len(rest) + sum(map(len, data_lines)) if data_lines else len(rest)
        self._between_events = not (rest or data_lines or self._skip_lf) and self._event is None
        return messages

    def close(self) -> list[SSEMessage]:
        """Signal end of stream. An unterminated trailing event is discarded (per spec).

        Always returns an empty list today; it is a list so callers treat it like ``feed``.
        """
        self._partial.clear()
        self._pending_bytes = 0
        self._data.clear()
        self._event = None
        self._between_events = False
        return []

    def _count(self, size: int) -> None:
        self._pending_bytes += size
        if self._pending_bytes > MAX_EVENT_BYTES:
            raise UpstreamError(
                f"an upstream stream event exceeds {MAX_EVENT_BYTES // 2**20} MiB",
                blame="upstream",
            )

    def _without_bom(self, data: bytes) -> bytes:
        """Drop a leading byte order mark, which may arrive split over several chunks."""
        data = b"".join([*self._partial, data])
        self._partial.clear()
        if len(data) < len(_BOM) and _BOM.startswith(data):
            self._partial.append(data)  # too short to tell yet
            return b""
        self._at_start = False
        return data.removeprefix(_BOM)

    def _take_line(self, line: bytes, messages: list[_Frame]) -> None:
        if not line:
            self._dispatch(messages)
            return
        if line.startswith(b":"):
            return
        field, _, value = line.partition(b":")
        if value.startswith(b" "):
            value = value[1:]
        if field == b"data":
            self._data.append(value)
        elif field == b"event":
            self._event = value.decode("utf-8", "replace")
        elif field == b"id" and b"\x00" not in value:
            self._last_id = value.decode("utf-8", "replace")

    def _dispatch(self, messages: list[_Frame]) -> None:
        if self._data:
            data = self._data[0] if len(self._data) == 1 else b"\n".join(self._data)
            messages.append((data, self._event or None, self._last_id))
            self._data.clear()
        self._event = None


def encode_sse(data: str | bytes, event: str | None = None) -> bytes:
    """One complete SSE frame; multi-line ``data`` becomes several ``data:`` lines."""
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    lines: list[str] = []
    if event is not None:
        if _LINE_END.search(event):
            raise ValueError("an SSE event name cannot contain a line break")
        lines.append(f"event: {event}")
    lines.extend(f"data: {line}" for line in _LINE_END.split(text))
    return ("\n".join(lines) + "\n\n").encode("utf-8")
