"""A committed stream on its way to the client; its trace is written once, when it ends."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Protocol

from gw.ir import StreamEvent
from gw.routing.decision import TargetRef

Deliver = Callable[[list[StreamEvent]], bool]


class CommittedStream(Protocol):
    """What a session reads: an upstream's stream (``OpenStream``), or a cached answer
    told again (``cache_replay.ReplayTail``)."""

    target: TargetRef
    began: bool

    @property
    def reported_model(self) -> str: ...

    async def abandon(self) -> None: ...

    def events(
        self, on_end: Callable[[], object] | None = None
    ) -> AsyncGenerator[StreamEvent, None]: ...

    async def relay(
        self,
        deliver: Deliver,
        flush: Callable[[], Awaitable[None]],
        on_end: Callable[[], object] | None = None,
    ) -> None: ...


class StreamSession:
    """What the server holds of a stream: its events (pulled or pushed) and ``close``.
    ``finish`` records the trace (``Gateway.finish_stream``); it runs exactly once."""

    def __init__(
        self,
        opened: CommittedStream,
        finish: Callable[[], object],
        *,
        warnings: tuple[str, ...] = (),
        cache: str | None = None,
    ) -> None:
        self._opened = opened
        self._on_finish = finish
        self.target = opened.target
        self.warnings = warnings  # the decision's, sent with the stream's head
        self.cache = cache  # x-gw-cache: hit, miss, ... (None: the policy has no cache)
        # x-gw-route: what answered; a cached answer was not an upstream's this time.
        self.route_header = "-" if cache == "hit" else opened.target.key
        self.reported_model = opened.reported_model
        self._finished = False

    async def close(self) -> None:
        """End the stream if ``events`` never did (the client left before it was read):
        the upstream request is closed and the trace written. Does nothing once it ended."""
        if self._finished:
            return
        # The response closes the events (which ends them and writes the trace) before it
        # calls this, so only events never started are left to end here.
        try:
            if not self._opened.began:  # a generator never started never runs its finally
                await self._opened.abandon()
        finally:  # traced and settled even if a cancellation lands in abandon()
            self._finish()

    def events(self) -> AsyncGenerator[StreamEvent, None]:
        """The stream's events; a failure after the commit raises ``GatewayError``. The trace
        is written when the stream ends, after the upstream request is closed."""
        return self._opened.events(on_end=self._finish)

    def relay(
        self,
        deliver: Callable[[list[StreamEvent]], bool],
        flush: Callable[[], Awaitable[None]],
    ) -> Awaitable[None]:
        """``events``, pushed (``OpenStream.relay``); the trace is written when it ends."""
        return self._opened.relay(deliver, flush, on_end=self._finish)

    def _finish(self) -> None:
        if self._finished:
            return
        self._finished = True
        self._on_finish()
