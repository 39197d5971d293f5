"""The engine: try the decision's chain in order, retrying and falling back as the policy says.

Strategy: one loop (``_run``) owns every retry/fallback choice; what differs between a
plain answer, a stream and an embeddings call is only the call each target gets and what
one attempt must produce before it counts as a success (the whole answer or list of
vectors, or the first token of the stream: the commit point after which fallback is
illegal, invariant 3).
"""

from __future__ import annotations

import asyncio
import logging
import traceback
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, Literal, TypeVar

from gw.config.schema import ProviderConfig
from gw.config.snapshot import ProviderAccount, provider_accounts
from gw.errors import (
    ClientAbortedError,
    GatewayError,
    NoRouteError,
    UpstreamError,
    UpstreamTimeoutError,
)
from gw.execution.accounts import AccountBook, preferred_first
from gw.execution.attempt_log import AttemptLog, PendingAttempt
from gw.execution.backoff import backoff_delay
from gw.execution.calls import chat_calls, embedding_calls, fresh_attempt, limit_notes
from gw.execution.execution_plan import (
    Answer,
    ExecutionFailedError,
    ExecutionPlan,
    RequestT,
)
from gw.execution.fallback import may_fall_back
from gw.execution.health import HealthBook
from gw.execution.hedging import HEDGE_LOST, HedgeLostError, hedged
from gw.execution.latency import LatencyBook
from gw.execution.open_stream import OpenStream, close_quietly, unexpected_error
from gw.ir import (
    ChatRequest,
    ChatResponse,
    EmbeddingRequest,
    EmbeddingResponse,
    StreamEvent,
    StreamStart,
    UsageEvent,
)
from gw.ir.cut_calls import drop_cut_calls
from gw.ports import (
    AttemptTimeouts,
    Clock,
    EmbeddingCall,
    EmbeddingUpstream,
    Sleep,
    Upstream,
    UpstreamCall,
    UpstreamDirectory,
)
from gw.routing.decision import TargetRef

T = TypeVar("T")
# The error codes that count as a target's failure in its health (gw/execution/health.py).
HEALTH_FAILURES = frozenset({"upstream_error", "upstream_timeout", "overloaded"})
CallT = TypeVar("CallT", UpstreamCall, EmbeddingCall)
# Builds the call one target gets (the same for each of its attempts).
CallFactory = Callable[[TargetRef, ProviderAccount, AttemptTimeouts], CallT]
FailureStep = Literal["next_account", "retried", "fell_back", "failed"]
logger = logging.getLogger("gw.execution")


class Engine:
    """Runs execution plans against upstream ports; knows nothing of HTTP or storage."""

    def __init__(
        self,
        upstreams: UpstreamDirectory,
        clock: Clock,
        sleep: Sleep,
        *,
        health: HealthBook | None = None,
        latency: LatencyBook | None = None,
        accounts: AccountBook | None = None,
    ) -> None:
        self._upstreams = upstreams
        self._clock = clock
        self._sleep = sleep
        self._health = health
        self._latency = latency
        self._accounts = accounts

    def deadline(self, plan: ExecutionPlan[RequestT]) -> float:
        return self._clock.monotonic() + plan.policy.timeout.total.seconds

    async def complete(
        self,
        plan: ExecutionPlan[ChatRequest],
        log: AttemptLog,
        *,
        accept: Callable[[ChatResponse], None] | None = None,
    ) -> Answer[ChatResponse]:
        """Attempts land in ``log`` as they happen, so a caller cancelled midway has them.

        ``accept`` raises a ``GatewayError`` for an answer the caller cannot use (one its
        client's format cannot express): that attempt fails, and is retried or falls back.
        """
        per_attempt = plan.policy.timeout.per_attempt.seconds

        async def attempt(
            upstream: Upstream, call: UpstreamCall, pending: PendingAttempt, remaining: float
        ) -> ChatResponse:
            response = await _within(upstream.complete(call), min(per_attempt, remaining))
            pending.upstream_response_id = response.id or None
            response, cut_notes = drop_cut_calls(response)
            pending.notes.extend(cut_notes)
            if accept is not None:
                accept(response)
            return response

        response, target = await self._execute(
            plan, log, call_for=chat_calls(plan, stream=False), attempt=attempt
        )
        return Answer(response=response, target=target, attempts=log.records)

    async def embed(
        self, plan: ExecutionPlan[EmbeddingRequest], log: AttemptLog
    ) -> Answer[EmbeddingResponse]:
        """Like ``complete``, for embeddings: one vector per input, or the attempt failed."""
        per_attempt = plan.policy.timeout.per_attempt.seconds

        async def attempt(
            upstream: Upstream, call: EmbeddingCall, pending: PendingAttempt, remaining: float
        ) -> EmbeddingResponse:
            if not isinstance(upstream, EmbeddingUpstream):
                raise UpstreamError(
                    f"provider {call.provider.name}: kind {call.provider.kind} does not serve "
                    "embeddings in this version of gw",
                    blame="gateway",
                )
            response = await _within(upstream.embed(call), min(per_attempt, remaining))
            wanted, got = len(call.request.inputs), len(response.vectors)
            if got != wanted:
                raise UpstreamError(
                    f"upstream sent {got} embeddings for {wanted} inputs", blame="upstream"
                )
            return response

        call_for = embedding_calls(plan)
        response, target = await self._execute(plan, log, call_for=call_for, attempt=attempt)
        return Answer(response=response, target=target, attempts=log.records)

    async def open_stream(self, plan: ExecutionPlan[ChatRequest], log: AttemptLog) -> OpenStream:
        """Attempt until one upstream produces its first token; that moment is the commit."""
        timeout = plan.policy.timeout
        deadline = self.deadline(plan)
        heads: dict[int, tuple[list[StreamEvent], AsyncIterator[StreamEvent]]] = {}

        async def attempt(
            upstream: Upstream, call: UpstreamCall, pending: PendingAttempt, remaining: float
        ) -> int:
            events = aiter(upstream.stream(call))
            head: list[StreamEvent] = []
            budget = min(timeout.first_token.seconds, timeout.per_attempt.seconds, remaining)
            try:
                async with asyncio.timeout(budget):
                    while not head or isinstance(head[-1], StreamStart | UsageEvent):
                        head.append(await anext(events))
            except TimeoutError:
                await close_quietly(events)
                raise UpstreamTimeoutError(
                    f"no first token within {budget:.1f}s (timeout.first_token)"
                ) from None
            except StopAsyncIteration:
                raise UpstreamError("the upstream stream ended before any content") from None
            except BaseException:
                await close_quietly(events)
                raise
            log.mark_first_token(pending)
            pending.upstream_response_id = _stream_id(head)
            heads[pending.number] = (head, events)
            return pending.number

        number, target, pending = await self._run(
            plan, log, deadline=deadline, call_for=chat_calls(plan, stream=True), attempt=attempt
        )
        head, tail = heads[number]
        return OpenStream(
            target=target,
            log=log,
            pending=pending,
            head=head,
            tail=tail,
            idle_timeout=timeout.stream_idle.seconds,
            deadline=deadline,
            clock=self._clock,
        )

    async def _execute(
        self,
        plan: ExecutionPlan[RequestT],
        log: AttemptLog,
        *,
        call_for: CallFactory[CallT],
        attempt: Callable[[Upstream, CallT, PendingAttempt, float], Awaitable[T]],
    ) -> tuple[T, TargetRef]:
        """A whole answer, its attempt closed: the chain in order, hedged when the policy
        asks for it. With hedging, the first lane to answer closes its attempt as the
        answer at once (so a client leaving meanwhile cannot lose it); a lane answering
        after that closes its own as ``hedge_lost``."""
        deadline = self.deadline(plan)
        chain = plan.decision.chain
        after = plan.policy.hedge.after
        won = False

        async def lane(
            part: Sequence[TargetRef], *, continues: bool, hedge: bool
        ) -> tuple[T, TargetRef]:
            nonlocal won
            result, target, pending = await self._run(
                plan,
                log,
                deadline=deadline,
                call_for=call_for,
                attempt=attempt,
                chain=part,
                continues=continues,
                hedge=hedge,
            )
            if won:
                log.finish(pending, "hedge_lost")
                raise HedgeLostError
            won = True
            log.finish(pending, "answered")
            return result, target

        if after is None or len(chain) < 2:
            return await lane(chain, continues=False, hedge=False)
        first = lane(chain[:1], continues=True, hedge=False)
        return await hedged(
            first,
            lambda hedge: lane(chain[1:], continues=False, hedge=hedge),
            after.seconds,
            plan.policy.fallback,
        )

    async def _run(
        self,
        plan: ExecutionPlan[RequestT],
        log: AttemptLog,
        *,
        deadline: float,
        call_for: CallFactory[CallT],
        attempt: Callable[[Upstream, CallT, PendingAttempt, float], Awaitable[T]],
        chain: Sequence[TargetRef] | None = None,
        continues: bool = False,
        hedge: bool = False,
    ) -> tuple[T, TargetRef, PendingAttempt]:
        """Try targets in chain order, and each target's accounts in turn; return the
        first success with its open attempt.

        ``chain`` is the decision's unless given (a hedge lane's part of it); ``continues``
        says more targets follow outside it, so its last may fall back (the error is then
        raised for the caller to carry on); ``hedge`` marks the attempts as hedged.

        ``retry.max_attempts`` bounds the calls to one target, whichever account each went
        to; a call that locked its account (rate limited, credentials refused) and moved
        on to the provider's next account does not count (DESIGN: account rotation comes
        before fallback and does not spend the retry budget).
        """
        chain = plan.decision.chain if chain is None else chain
        policy = plan.policy
        timeouts = AttemptTimeouts(
            connect=policy.timeout.connect.seconds, read=policy.timeout.per_attempt.seconds
        )
        backoff_ms = 0.0
        last_error: GatewayError | None = None
        for position, target in enumerate(chain):
            provider = plan.providers[target.provider]
            upstream = self._upstreams.upstream_for(provider)
            accounts = self._accounts_for(plan, provider, target)
            has_next = continues or position + 1 < len(chain)
            trial = target.key in plan.trials
            calls = 0
            fell_back = False
            for account_number, account in enumerate(accounts, start=1):
                target_call = call_for(target, account, timeouts)
                while True:
                    await _before_attempt(plan, target, log)
                    remaining = deadline - self._clock.monotonic()
                    if remaining <= 0:
                        error = UpstreamTimeoutError("the request used up timeout.total")
                        raise ExecutionFailedError(error, log.records)
                    call = fresh_attempt(target_call)
                    pending = log.start(
                        target,
                        account=call.account,
                        backoff_ms=backoff_ms,
                        provider_kind=provider.kind,
                        notes=call.notes,
                        limit_notes=limit_notes(call),
                        hedge=hedge,
                    )
                    backoff_ms = 0.0
                    calls += 1
                    try:
                        result = await _guarded(
                            attempt(upstream, call, pending, remaining), provider
                        )
                    except GatewayError as error:
                        step, delay = self._after_failure(
                            plan,
                            target,
                            account.name,
                            error,
                            calls=calls,
                            trial=trial,
                            more_accounts=account_number < len(accounts),
                            has_next=has_next,
                            deadline=deadline,
                        )
                        log.finish(pending, step, error)
                        if step == "failed":
                            raise ExecutionFailedError(error, log.records) from None
                        if step == "retried" and delay is not None:
                            await self._sleep(delay)
                            backoff_ms = delay * 1000
                            continue
                        fell_back = step == "fell_back"
                        calls -= step == "next_account"  # a rotation is not a retry
                        last_error = error
                        break
                    except asyncio.CancelledError as cancelled:
                        _finish_cancelled(log, pending, cancelled)
                        raise
                    self._record_success(target, account.name, pending, trial=trial)
                    return result, target, pending
                if fell_back:
                    break  # to the next target, not this target's next account
        if last_error is not None:  # the last target fell back: to what follows (continues)
            raise ExecutionFailedError(last_error, log.records)
        raise NoRouteError("no target left to try")  # an empty chain; routing reports it first

    def _after_failure(
        self,
        plan: ExecutionPlan[RequestT],
        target: TargetRef,
        account: str,
        error: GatewayError,
        *,
        calls: int,
        trial: bool,
        more_accounts: bool,
        has_next: bool,
        deadline: float,
    ) -> tuple[FailureStep, float | None]:
        """What follows a failed attempt: the next account when this one is now locked,
        a retry after a delay, the next target, or the end of the request."""
        self._record_health(target, error, trial=trial)
        locked = self._lock_account(target, account, error)
        if locked and more_accounts:
            return "next_account", None
        # A failed trial has reopened the breaker: no second call to it.
        delay = None if trial else self._retry_delay(plan, target, error, calls, deadline)
        if delay is not None:
            return "retried", delay
        if has_next and may_fall_back(error, plan.policy.fallback):
            return "fell_back", None
        return "failed", None

    def _record_success(
        self, target: TargetRef, account: str, pending: PendingAttempt, *, trial: bool
    ) -> None:
        self._record_health(target, None, trial=trial)
        self._record_latency(target, pending)
        if self._accounts is not None:
            self._accounts.unlock(target.provider, account, target.model)

    def _accounts_for(
        self, plan: ExecutionPlan[RequestT], provider: ProviderConfig, target: TargetRef
    ) -> list[ProviderAccount]:
        accounts = plan.accounts.get(provider.name) or provider_accounts(provider)
        pin = plan.pin
        if pin is not None and pin.provider == provider.name:
            # The gateway checked that the account exists in this snapshot.
            accounts = tuple(a for a in accounts if a.name == pin.account)
        if self._accounts is None:
            return list(accounts[:1])
        ordered = self._accounts.order(
            provider, accounts, target.model, now=self._clock.monotonic()
        )
        return preferred_first(ordered, plan.prefer, provider.name)

    def _lock_account(self, target: TargetRef, account: str, error: GatewayError) -> bool:
        if self._accounts is None:
            return False
        now = self._clock.monotonic()
        lock = self._accounts.lock_after(target.provider, account, target.model, error, now=now)
        return lock is not None

    def _record_health(self, target: TargetRef, error: GatewayError | None, *, trial: bool) -> None:
        """An answer (or a stream's first token) is a success; only the upstream's own
        faults count against it: a bad request, a rate limit or gw's own trouble (a full
        connection pool, a missing credential) says nothing of its health. Every call,
        whatever its outcome, adds to the target's retry budget."""
        if self._health is None:
            return
        now = self._clock.monotonic()
        self._health.retry_budget.record_call(target.key, now=now)
        if error is None or (error.code in HEALTH_FAILURES and error.blame == "upstream"):
            self._health.record(target.key, error is None, now=now, trial=trial)

    def _record_latency(self, target: TargetRef, pending: PendingAttempt) -> None:
        """A stream's time to its first token, else the whole answer's time."""
        if self._latency is None:
            return
        if pending.ttft_ms is not None:
            self._latency.record(target.key, pending.ttft_ms, streaming=True)
        else:
            elapsed_ms = (self._clock.monotonic() - pending.started_mono) * 1000
            self._latency.record(target.key, elapsed_ms, streaming=False)

    def _retry_delay(
        self,
        plan: ExecutionPlan[RequestT],
        target: TargetRef,
        error: GatewayError,
        try_number: int,
        deadline: float,
    ) -> float | None:
        """The wait before a retry; None when there is none: the error would repeat, the
        attempts or the time are used up, or the target's retry budget is spent."""
        retry = plan.policy.retry
        if not error.retryable or try_number >= retry.max_attempts:
            return None
        delay = backoff_delay(retry, try_number, plan.request_id, error.retry_after)
        now = self._clock.monotonic()
        if delay is None or now + delay >= deadline:
            return None
        if self._health is not None and not self._health.retry_budget.try_retry(
            target.key, now=now
        ):
            return None
        return delay


def _stream_id(head: Sequence[StreamEvent]) -> str | None:
    """The upstream's id of a stream's answer, from its start event."""
    for event in head:
        if isinstance(event, StreamStart):
            return event.id or None
    return None


def _finish_cancelled(
    log: AttemptLog, pending: PendingAttempt, cancelled: asyncio.CancelledError
) -> None:
    """A cancelled attempt: the slower hedge lane, or the client went away."""
    if cancelled.args == (HEDGE_LOST,):
        log.finish(pending, "hedge_lost")
    else:
        log.finish(pending, "aborted", ClientAbortedError("the client went away"))


async def _before_attempt(plan: ExecutionPlan[Any], target: TargetRef, log: AttemptLog) -> None:
    """The plugins' before_attempt hooks; one that refused or failed the request ends it."""
    if plan.before_attempt is not None:
        try:
            await plan.before_attempt(target)
        except GatewayError as refused:
            raise ExecutionFailedError(refused, log.records) from None


async def _within(work: Awaitable[T], budget: float) -> T:
    """Await one whole answer within ``budget`` seconds, else ``upstream_timeout``."""
    try:
        async with asyncio.timeout(budget):
            return await work
    except TimeoutError:
        raise UpstreamTimeoutError(
            f"no answer within {budget:.1f}s (timeout.per_attempt or timeout.total)"
        ) from None


async def _guarded(work: Awaitable[T], provider: ProviderConfig) -> T:
    """Run one attempt; anything that is not a GatewayError becomes internal_error."""
    try:
        return await work
    except GatewayError:
        raise
    except Exception as exc:  # every failure must be recorded as an attempt
        # Frames only: an exception's text may carry request data (invariant 9).
        frames = "".join(traceback.format_tb(exc.__traceback__))
        logger.error(  # noqa: TRY400 - logger.exception would print the exception's text
            "%s calling provider %s:\n%s", type(exc).__name__, provider.name, frames
        )
        raise unexpected_error(exc, provider.name) from exc
