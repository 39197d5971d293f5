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

import codecs
import re

import msgspec

_LINE_END = re.compile(r"\r\n|\r|\n")
_BOM = "\ufeff"


class SSEMessage(msgspec.Struct, frozen=True, kw_only=True):
    """One dispatched event; ``event`` is None when the stream named no event type."""

    data: str
    event: str | None = None
    id: str | None = None


class SSEParser:
    """Feed bytes as they arrive; get back the events completed so far."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._partial: list[str] = []  # text of the current line, not yet ended
        self._skip_lf = False  # the previous chunk ended in "\r": a leading "\n" is its pair
        self._at_start = True
        self._data: list[str] = []
        self._event: str | None = None
        self._last_id: str | None = None

    def feed(self, data: bytes) -> list[SSEMessage]:
        """Parse ``data`` and return every event it completes, in order."""
        text = self._decoder.decode(data)
        if not text:
            return []
        if self._at_start:
            self._at_start = False
            text = text.removeprefix(_BOM)
        if self._skip_lf:
            self._skip_lf = False
            text = text.removeprefix("\n")
        messages: list[SSEMessage] = []
        position = 0
        for match in _LINE_END.finditer(text):
            line = text[position : match.start()]
            if self._partial:
                self._partial.append(line)
                line = "".join(self._partial)
                self._partial.clear()
            self._take_line(line, messages)
            position = match.end()
        if position < len(text):
            self._partial.append(text[position:])
        elif text.endswith("\r"):
            self._skip_lf = True
        return messages

    def close(self) -> list[SSEMessage]:
        """Signal end of stream. An unterminated trailing event is discarded (per spec).

        Always returns an empty list today; it is a list so callers treat it like ``feed``.
        """
        self._decoder.decode(b"", final=True)
        self._partial.clear()
        self._data.clear()
        self._event = None
        return []

    def _take_line(self, line: str, messages: list[SSEMessage]) -> None:
        if not line:
            self._dispatch(messages)
            return
        if line.startswith(":"):
            return
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "data":
            self._data.append(value)
        elif field == "event":
            self._event = value
        elif field == "id" and "\x00" not in value:
            self._last_id = value

    def _dispatch(self, messages: list[SSEMessage]) -> None:
        if self._data:
            messages.append(
                SSEMessage(data="\n".join(self._data), event=self._event or None, id=self._last_id)
            )
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
