"""A committed stream: the events read before the commit, then the rest, time-bounded.

The engine opens a stream and commits to the attempt whose first token came; the rest
of that attempt's events are read here, either one at a time (``events``) or pushed in
batches (``relay``). Either way the upstream's silence is bounded (timeout.stream_idle,
and timeout.total through the deadline), a failure after the commit is mapped to the
``GatewayError`` the client's stream ends with, what was carried is tallied for the
trace and the usage row, and the attempt is closed as answered, failed or aborted.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable

from gw.errors import (
    ClientAbortedError,
    ContentBlockedError,
    GatewayError,
    InternalError,
    UpstreamTimeoutError,
)
from gw.execution.attempt_log import AttemptLog, PendingAttempt
from gw.execution.cache_replay import StreamCollector
from gw.execution.guardrail_check import StreamGuard
from gw.execution.idle_watch import IdleWatch
from gw.ir import (
    Finish,
    StreamEvent,
    StreamStart,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    Usage,
    UsageEvent,
)
from gw.ir.cut_calls import StreamedCalls
from gw.ports import Clock
from gw.record import AttemptOutcome, AttemptRecord
from gw.routing.decision import TargetRef

Deliver = Callable[[list[StreamEvent]], bool]  # False: the client takes no more for now


class OpenStream:
    """A committed stream: the events read before the commit, then the rest, time-bounded."""

    def __init__(
        self,
        *,
        target: TargetRef,
        log: AttemptLog,
        pending: PendingAttempt,
        head: list[StreamEvent],
        tail: AsyncIterator[StreamEvent],
        idle_timeout: float,
        deadline: float,
        clock: Clock,
    ) -> None:
        self.target = target
        self.log = log
        self._pending = pending
        self._head = head
        self._tail = tail
        self._idle_timeout = idle_timeout
        self._deadline = deadline
        self._clock = clock
        self.error: GatewayError | None = None
        # What the stream has carried so far, for the trace and the usage row.
        self.usage: Usage | None = None
        self.output_chars = 0
        self._calls = StreamedCalls()
        # The policy's output guardrails (gw/execution/guardrail_check.py), if any: each
        # piece of text is checked before it goes on, and a match ends the stream.
        self.guard: StreamGuard | None = None
        # Gathers the answer for the response cache, when it may keep it.
        self.collector: StreamCollector | None = None
        self.began = False  # events() or relay() has started (and so will close the tail)

    @property
    def attempts(self) -> list[AttemptRecord]:
        return self.log.records

    @property
    def reported_model(self) -> str:
        """The model the upstream says answered (often a dated name), else the target's."""
        start = next((e for e in self._head if isinstance(e, StreamStart)), None)
        return start.model if start is not None and start.model else self.target.model

    async def abandon(self) -> None:
        """Close a stream none of whose events were read: the client left first."""
        await close_quietly(self._tail)
        self.error = ClientAbortedError("the client left before the stream was sent")
        self.log.finish(self._pending, "aborted", self.error)

    async def events(
        self, on_end: Callable[[], object] | None = None
    ) -> AsyncGenerator[StreamEvent, None]:
        """Yield every event; a failure after the commit raises, for the caller to render.

        The attempt is closed as answered, failed or aborted (client gone) when this ends,
        and then ``on_end`` runs (the gateway writes the trace), however it ended. The
        tallies are kept here rather than in a wrapping generator: each generator layer
        costs every chunk of every stream a resume.
        """
        async with self._settling(on_end) as watch:
            for event in self._head:
                self._tally(event)
                yield event
            while True:
                watch.begin()
                try:
                    event = await anext(self._tail)
                except StopAsyncIteration:
                    return
                except asyncio.CancelledError:
                    self._raise_if_silent(watch)
                    raise
                finally:
                    watch.end()
                self._tally(event)
                yield event

    async def relay(
        self,
        deliver: Deliver,
        flush: Callable[[], Awaitable[None]],
        on_end: Callable[[], object] | None = None,
    ) -> None:
        """``events``, pushed: each batch goes to ``deliver`` as it is decoded. On gw's
        own transport that happens in the upstream connection's read callback, so a
        chunk costs no task step. ``deliver`` returns False when the client takes no
        more for now; ``flush`` then waits until it has taken what is pending (that wait
        is not the upstream's silence). Ends, fails and settles as ``events`` does.
        """
        async with self._settling(on_end) as watch:

            def take(events: list[StreamEvent]) -> bool:
                for index, event in enumerate(events):
                    try:
                        self._tally(event)
                    except ContentBlockedError:  # a guardrail: what came before it goes on
                        if index:
                            deliver(events[:index])
                        raise
                watch.begin()  # the upstream spoke: its silence starts now
                return deliver(events)

            if self._head:
                taken = take(self._head)
                watch.end()  # no wait for the upstream yet: the flush is the client's time
                if not taken:
                    await flush()
            while True:
                watch.begin()
                try:
                    ended = await self._relay_tail(take)
                except asyncio.CancelledError:
                    self._raise_if_silent(watch)
                    raise
                finally:
                    watch.end()
                if ended:
                    return
                await flush()

    async def _relay_tail(self, take: Deliver) -> bool:
        """The tail's own ``relay`` (an adapter's ``EventStream``), else a loop over it.
        True once it ended, False once ``take`` returned False."""
        relay: Callable[[Deliver], Awaitable[bool]] | None = getattr(self._tail, "relay", None)
        if relay is not None:
            return await relay(take)
        async for event in self._tail:  # the mock's generator, for one
            if not take([event]):
                return False
        return True

    @contextlib.asynccontextmanager
    async def _settling(self, on_end: Callable[[], object] | None) -> AsyncIterator[IdleWatch]:
        """Read the tail under an idle watch; map how that ends, close the tail, and
        close the attempt (then ``on_end``), however it ended."""
        self.began = True
        outcome_error: GatewayError | None = None
        task = asyncio.current_task()
        assert task is not None  # noqa: S101 - streams are read in a task
        loop = task.get_loop()  # the deadline, from the engine's clock to the loop's
        deadline = loop.time() + self._deadline - self._clock.monotonic()
        watch = IdleWatch(task, idle=self._idle_timeout, deadline=deadline)
        try:
            yield watch
        except GatewayError as error:
            outcome_error = self.error = error
            raise
        except Exception as exc:  # an adapter bug must still end the stream with an error event
            outcome_error = self.error = unexpected_error(exc, self.target.provider)
            raise outcome_error from exc
        except (asyncio.CancelledError, GeneratorExit):
            outcome_error = self.error = ClientAbortedError("the client closed the connection")
            raise
        finally:
            watch.close()
            try:
                await close_quietly(self._tail)
            finally:  # recorded even if a cancellation lands in the close
                self._end(outcome_error, on_end)

    def _raise_if_silent(self, watch: IdleWatch) -> None:
        """After a cancel: the upstream's silence (the watch fired) is a timeout; a
        client that left, or a shutdown, is not and goes on as the cancel it is."""
        task = asyncio.current_task()
        if watch.fired and task is not None and task.uncancel() == 0:
            raise UpstreamTimeoutError(
                f"the upstream stream was silent for {watch.budget:.1f}s "
                "(timeout.stream_idle or timeout.total)"
            ) from None

    def _end(self, error: GatewayError | None, on_end: Callable[[], object] | None) -> None:
        outcome: AttemptOutcome = "answered"
        if error is not None:
            outcome = "aborted" if isinstance(error, ClientAbortedError) else "failed"
        try:
            self.log.finish(self._pending, outcome, error)
        finally:  # the trace is written even if recording the attempt failed
            if on_end is not None:
                on_end()

    def _tally(self, event: StreamEvent) -> None:
        """Count ``event``; raises ``ContentBlockedError`` when a guardrail stops it."""
        if self.collector is not None:
            self.collector.take(event)
        if isinstance(event, TextDelta):
            self.output_chars += len(event.text)
            if self.guard is not None:
                self.guard.check(event.text)
        elif isinstance(event, ThinkingDelta):
            self.output_chars += len(event.text)
        elif isinstance(event, UsageEvent):
            self.usage = event.usage
        elif isinstance(event, ToolCallDelta):
            self.output_chars += len(event.arguments) + len(event.name or "")
            self._calls.take(event.index, event.name, event.arguments)
        elif isinstance(event, Finish) and event.reason == "length":
            self._pending.notes.extend(self._calls.cut_notes())


def unexpected_error(exc: Exception, provider: str) -> InternalError:
    """A bug, not an upstream fault: named by type only (its text may hold request data)."""
    return InternalError(
        f"unexpected {type(exc).__name__} while calling provider {provider}; "
        "this is a gw bug, please report it with the request id",
        blame="gateway",
    )


async def close_quietly(events: AsyncIterator[StreamEvent]) -> None:
    """Close an upstream stream (cancelling its HTTP request); it may already be closed."""
    close = getattr(events, "aclose", None)
    if close is not None:
        with contextlib.suppress(GatewayError, RuntimeError):
            await close()
