"""What every upstream SSE decoder shares: frames in, IR events out, a late error deferred.

A subclass says how one SSE message becomes IR events (``_take_message``) and when the end
of the body is acceptable (``_check_end``). A failure met after some events of the same
``feed`` call is held back, so those events reach the client first; the next ``feed`` or
``close`` raises it.

``SSEStreamDataDecoder`` is the same for a protocol that reads only each event's data: it
takes the data as bytes (``_take_data``), with no ``SSEMessage`` and no ``str`` made per
event, and gets ``SSEParser.feed_data``'s fast path for the usual chunk.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

from gw.codecs.sse import SSEMessage, SSEParser
from gw.errors import GatewayError
from gw.ir import StreamEvent

ItemT = TypeVar("ItemT")  # what the parser yields: an SSEMessage, or an event's data bytes


class SSEStreamDecoder:
    def __init__(self) -> None:
        self._parser = SSEParser()
        self.done = False  # the stream said it is over; later bytes are ignored
        self._pending_error: GatewayError | None = None

    def feed(self, data: bytes) -> list[StreamEvent]:
        """Decode ``data``; return the events it completes."""
        return self._decode(self._parser.feed(data), self._take_message)

    def _decode(
        self, items: Iterable[ItemT], take: Callable[[ItemT, list[StreamEvent]], None]
    ) -> list[StreamEvent]:
        """``take`` each parsed item in turn, holding back a failure met after events."""
        if self._pending_error is not None:
            self._raise_pending()
        events: list[StreamEvent] = []
        for item in items:
            if self.done:
                break
            try:
                take(item, events)
            except GatewayError as error:
                if not events:
                    raise
                self._pending_error = error
                break
        return events

    def close(self) -> list[StreamEvent]:
        """End of body: raise ``UpstreamError`` unless the stream ended properly."""
        self._raise_pending()
        self._parser.close()
        self._check_end()
        return []

    def _take_message(self, message: SSEMessage, events: list[StreamEvent]) -> None:
        raise NotImplementedError

    def _check_end(self) -> None:
        raise NotImplementedError

    def _raise_pending(self) -> None:
        if self._pending_error is not None:
            error, self._pending_error = self._pending_error, None
            raise error


class SSEStreamDataDecoder(SSEStreamDecoder):
    """An ``SSEStreamDecoder`` whose subclass reads each event's data bytes (``_take_data``).

    Event names and ids are not read.
    """

    def feed(self, data: bytes) -> list[StreamEvent]:
        """Decode ``data``; return the events it completes."""
        return self._decode(self._parser.feed_data(data), self._take_data)

    def _take_data(self, data: bytes, events: list[StreamEvent]) -> None:
        raise NotImplementedError
