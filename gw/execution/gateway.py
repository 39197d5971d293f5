"""Gateway: one request from canonical IR to answer and trace: route, execute, record.

The server hands it a decoded request and a ``RequestContext`` holding the pinned
snapshot; it returns the answer (or raises ``RequestFailedError``) and always submits
exactly one trace.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import msgspec

from gw.config.snapshot import Snapshot
from gw.errors import ClientAbortedError, GatewayError
from gw.execution.accounts import AccountBook, AccountPin, pinned_decision
from gw.execution.answers_at_rest import AnswersAtRest
from gw.execution.attempt_log import AttemptLog
from gw.execution.breaker_gate import breakers_open_error, gate_breakers
from gw.execution.cache_replay import ReplayTail, StreamCollector, answer_events
from gw.execution.cache_use import (
    Answered,
    CacheHitFound,
    cached_or_key,
    carried,
    kept,
    lookup_outcome,
    semantic_probe,
)
from gw.execution.engine import Engine
from gw.execution.execution_plan import Answer, ExecutionFailedError, ExecutionPlan, RequestT
from gw.execution.guardrail_check import screen_answer, screen_prompt, stream_guard
from gw.execution.health import HealthBook
from gw.execution.health_view import health_view
from gw.execution.latency import LatencyBook
from gw.execution.open_stream import OpenStream
from gw.execution.plugin_run import PluginRun, plugins_after_answer, plugins_before_routing
from gw.execution.recorder import TraceRecorder
from gw.execution.request_context import (
    Completed,
    Embedded,
    RequestContext,
    RequestFailedError,
)
from gw.execution.response_cache import ResponseCache
from gw.execution.sticky_sessions import StickySessions
from gw.execution.stream_session import StreamSession
from gw.execution.tenant_admission import admitted, limited
from gw.execution.usage_estimate import (
    cut_short_usage,
    estimate_output_tokens,
    tokens_for_chars,
    usage_or_estimate,
)
from gw.ir import (
    ChatRequest,
    ChatResponse,
    EmbeddingRequest,
    Usage,
)
from gw.ports import Clock, TenantLimits, TraceSink, UsageSink
from gw.record import AttemptRecord, CacheOutcome, TraceRecord, UsageSource
from gw.routing.decision import RouteDecision
from gw.routing.estimate import estimate_embedding_tokens
from gw.routing.health import TargetVerdict
from gw.routing.policy import kind_of_endpoint
from gw.routing.router import denied_error, no_candidate_error
from gw.routing.shaping import decide_shaped

T = TypeVar("T")


class Gateway:
    def __init__(
        self,
        engine: Engine,
        traces: TraceSink,
        clock: Clock,
        *,
        health: HealthBook | None = None,
        latency: LatencyBook | None = None,
        accounts: AccountBook | None = None,
        limits: TenantLimits | None = None,
        usage: UsageSink | None = None,
        gateway: str | None = None,
        cache: ResponseCache | None = None,
        at_rest: AnswersAtRest | None = None,
        sticky: StickySessions | None = None,
    ) -> None:
        self._cache = cache  # the response cache (gw/execution/response_cache.py) ...
        self._at_rest = at_rest  # ... and its answers sealed in the store
        self._sticky = sticky or StickySessions.local(clock)  # policies[].sticky
        self._limits = limits
        self._usage = usage  # one row per routed request (gw/execution/usage_row.py)
        self._engine = engine
        self._clock = clock
        # Every request's trace and usage row, and its limits settled, in one place.
        self._record = TraceRecorder(
            traces, clock, limits=limits, usage=usage, gateway=gateway
        ).record
        self._health = health
        self._latency = latency
        self._accounts = accounts

    def reject(
        self, ctx: RequestContext, error: GatewayError, *, requested_model: str = "", stream: bool
    ) -> RequestFailedError:
        """Record a request refused before routing (bad body, auth, ...) and return its error."""
        trace = self._record(ctx, requested_model=requested_model, stream=stream, error=error)
        return RequestFailedError(error, trace)

    def replayed(self, ctx: RequestContext, *, requested_model: str, replay_of: str) -> TraceRecord:
        """Record a retry answered with the answer ``replay_of`` gave (an Idempotency-Key
        replay): no routing, no upstream call, no usage or cost, so nothing is counted
        twice (the request that answered first carries them)."""
        return self._record(ctx, requested_model=requested_model, stream=False, replay_of=replay_of)

    async def complete(
        self,
        ctx: RequestContext,
        request: ChatRequest,
        *,
        accept: Callable[[ChatResponse], None] | None = None,
    ) -> Completed:
        """``accept`` vets each answer before it counts (see ``Engine.complete``)."""
        await self._wait_for_usage_room()
        request, run = await self._before_routing(ctx, request)
        try:
            decision, plan = await self._plan(ctx, request, run)
        except CacheHitFound as hit:
            if carried(accept, hit.entry.response):
                return self._from_cache(ctx, request, hit)
            # This client's format cannot carry that answer: ask anew, and keep the new one.
            ctx = msgspec.structs.replace(ctx, cache_mode="refresh")
            decision, plan = await self._plan(ctx, request, run)
        log = AttemptLog(self._clock)
        work = self._engine.complete(plan, log, accept=accept)
        answer = await self._attempt(ctx, request, decision, log, work, run=run)
        self._sticky.remember(plan.session, answer.target, answer.attempts)
        response = answer.response
        usage, source = usage_or_estimate(
            response.usage,
            request,
            estimate_output_tokens(response.text or response.refusal, response.tool_calls),
        )
        try:
            screen_answer(response, ctx.snapshot.guardrails, decision.policy)
        except GatewayError as blocked:  # the upstream was paid: its usage is recorded
            trace = self._answered(
                ctx, request, decision, answer, usage=usage, source=source, error=blocked
            )
            raise RequestFailedError(blocked, trace) from None
        answered = Answered(response, answer.target, usage)
        decision = kept(
            self._cache, ctx, plan, answered, decision, clock=self._clock, at_rest=self._at_rest
        )
        decision = await plugins_after_answer(ctx, run, decision, answer.target, usage)
        cache = lookup_outcome(plan.policy, ctx.endpoint, ctx.cache_mode)
        trace = self._answered(
            ctx, request, decision, answer, usage=usage, source=source, cache=cache
        )
        return Completed(response=response, trace=trace)

    async def embed(self, ctx: RequestContext, request: EmbeddingRequest) -> Embedded:
        """Route and run an embeddings request; usage is the upstream's, else estimated."""
        await self._wait_for_usage_room()
        request, run = await self._before_routing(ctx, request)
        decision, plan = await self._plan(ctx, request, run)
        log = AttemptLog(self._clock)
        work = self._engine.embed(plan, log)
        answer = await self._attempt(ctx, request, decision, log, work, run=run)
        usage = answer.response.usage
        source: UsageSource = "provider"
        if usage is None:
            usage, source = Usage(input_tokens=estimate_embedding_tokens(request)), "estimate"
        decision = await plugins_after_answer(ctx, run, decision, answer.target, usage)
        trace = self._answered(ctx, request, decision, answer, usage=usage, source=source)
        return Embedded(response=answer.response, trace=trace)

    async def open_stream(self, ctx: RequestContext, request: ChatRequest) -> StreamSession:
        """Run attempts until one stream commits; failures before that raise as usual."""
        await self._wait_for_usage_room()
        request, run = await self._before_routing(ctx, request)
        try:
            decision, plan = await self._plan(ctx, request, run)
        except CacheHitFound as hit:
            completed = self._from_cache(ctx, request, hit)
            response = completed.response
            replay = ReplayTail(answer_events(response), hit.entry.target, response.model)
            return StreamSession(replay, _nothing, warnings=hit.decision.warnings, cache="hit")
        log = AttemptLog(self._clock)
        opened = await self._attempt(
            ctx, request, decision, log, self._engine.open_stream(plan, log), run=run
        )
        self._sticky.remember(plan.session, opened.target, opened.attempts)
        if run is not None:
            decision = run.noted(decision)  # before_attempt's notes; streams get no after_answer
        opened.guard = stream_guard(ctx.snapshot.guardrails, decision.policy)
        if plan.cache_key is not None:
            opened.collector = StreamCollector()
        finish = functools.partial(
            self.finish_stream, opened, ctx=ctx, request=request, decision=decision, plan=plan
        )
        cache = lookup_outcome(plan.policy, ctx.endpoint, ctx.cache_mode)
        return StreamSession(opened, finish, warnings=decision.warnings, cache=cache)

    async def _before_routing(
        self, ctx: RequestContext, request: RequestT
    ) -> tuple[RequestT, PluginRun | None]:
        try:
            return await plugins_before_routing(ctx, request, stream=_streams(request))
        except GatewayError as error:  # a plugin refused the request, or failed it
            raise self.reject(
                ctx, error, requested_model=request.model, stream=_streams(request)
            ) from None

    async def _wait_for_usage_room(self) -> None:
        """Usage rows are never dropped: while the ledger's queue is full, a new request
        waits (bounded, see ``UsageSink``) instead of adding to it."""
        if self._usage is not None:
            await self._usage.wait_for_room()

    async def _attempt(
        self,
        ctx: RequestContext,
        request: ChatRequest | EmbeddingRequest,
        decision: RouteDecision,
        log: AttemptLog,
        work: Awaitable[T],
        *,
        run: PluginRun | None = None,
    ) -> T:
        """Await the engine; a failure or a client gone before the answer is traced."""
        try:
            return await work
        except ExecutionFailedError as failed:
            if run is not None:
                decision = run.noted(decision)
            raise self._failed(ctx, request, decision, failed.error, failed.attempts) from None
        except asyncio.CancelledError:
            self._aborted(ctx, request, decision if run is None else run.noted(decision), log)
            raise

    def _answered(
        self,
        ctx: RequestContext,
        request: ChatRequest | EmbeddingRequest,
        decision: RouteDecision,
        answer: Answer[Any],
        *,
        usage: Usage,
        source: UsageSource,
        error: GatewayError | None = None,
        cache: CacheOutcome | None = None,
    ) -> TraceRecord:
        return self._record(
            ctx,
            requested_model=request.model,
            stream=False,
            decision=decision,
            attempts=answer.attempts,
            target=answer.target,
            usage=usage,
            usage_source=source,
            error=error,
            cache=cache,
        )

    def _from_cache(
        self, ctx: RequestContext, request: ChatRequest, hit: CacheHitFound
    ) -> Completed:
        """The cached answer, checked against today's output guardrails; its trace has no
        attempt, no usage and no cost (the request that paid for it has them)."""
        response = hit.entry.response
        try:
            screen_answer(response, ctx.snapshot.guardrails, hit.decision.policy)
        except GatewayError as blocked:
            raise self._failed(ctx, request, hit.decision, blocked, []) from None
        trace = self._record(
            ctx,
            requested_model=request.model,
            stream=request.stream,
            decision=hit.decision,
            usage=Usage(),
            usage_source="cache",
            cache="hit",
            cache_of=hit.entry.request_id,
        )
        return Completed(response=response, trace=trace)

    def _aborted(
        self,
        ctx: RequestContext,
        request: ChatRequest | EmbeddingRequest,
        decision: RouteDecision,
        log: AttemptLog,
    ) -> None:
        """The client left before an answer: trace it as client_aborted (499)."""
        error = ClientAbortedError("the client closed the connection before the answer")
        self._failed(ctx, request, decision, error, log.records)

    async def aclose(self) -> None:
        """At shutdown, after the last request: what settling still has to write is
        written, then the limits' connections close."""
        if self._limits is not None:
            await self._limits.drain()
            await self._limits.aclose()
        await self._sticky.aclose()

    async def _plan(
        self, ctx: RequestContext, request: RequestT, run: PluginRun | None = None
    ) -> tuple[RouteDecision, ExecutionPlan[RequestT]]:
        view = self._health_view(ctx.snapshot)
        try:
            request, decision, policy = decide_shaped(
                request,
                ctx.snapshot,
                request_id=ctx.request_id,
                tenant=ctx.tenant,
                api_key_id=ctx.key_id,
                hints=ctx.hints,
                health=view,
                latency_ms=None
                if self._latency is None
                else self._latency.view(streaming=_streams(request)),
                kind=kind_of_endpoint(ctx.endpoint),
            )
        except GatewayError as error:
            raise self.reject(
                ctx, error, requested_model=request.model, stream=_streams(request)
            ) from None
        if run is not None:
            decision = run.noted(decision)  # what before_routing did, before any refusal
        if policy.deny:
            raise self._failed(ctx, request, decision, denied_error(policy), [])
        try:
            request, decision = screen_prompt(request, ctx.snapshot.guardrails, decision)
        except GatewayError as blocked:
            raise self._failed(ctx, request, decision, blocked, []) from None
        key, probe = None, None
        if self._cache is not None and isinstance(request, ChatRequest):
            key = await cached_or_key(
                self._cache, ctx, request, policy, decision,
                clock=self._clock, at_rest=self._at_rest,
            )  # fmt: skip
            if key is not None and policy.cache.semantic is not None:
                probe, decision = await semantic_probe(
                    self._cache, ctx, request, policy, decision,
                    embed=self.embed, now=self._clock.monotonic,
                )  # fmt: skip
        if ctx.pin is not None and decision.chain:
            decision = self._pinned(ctx, request, decision, ctx.pin)
        decision, session = await self._sticky.steer(ctx, request, decision, policy, view)
        if decision.chain and limited(ctx.snapshot, ctx.tenant, policy, ctx.key_budget):
            # Before any trial is claimed: a refused request must not hold a breaker's trial.
            try:
                decision = await admitted(ctx, decision, policy, self._limits, self._clock)
            except GatewayError as refused:
                raise self._failed(ctx, request, decision, refused, []) from None
        trials: frozenset[str] = frozenset()
        recovery: float | None = None
        if view and self._health is not None:
            now = self._clock.monotonic()
            gated = gate_breakers(decision, view, self._health, now=now)
            decision, trials, recovery = gated.decision, gated.trials, gated.recovery
        if not decision.chain:
            param = "messages" if isinstance(request, ChatRequest) else "input"
            empty = (
                no_candidate_error(decision, input_param=param)
                if recovery is None
                else breakers_open_error(decision, recovery, now=self._clock.monotonic())
            )
            raise self._failed(ctx, request, decision, empty, [])
        plan = ExecutionPlan(
            request_id=ctx.request_id,
            request=request,
            decision=decision,
            policy=policy,
            providers=ctx.snapshot.providers,
            accounts=ctx.snapshot.accounts,
            trials=trials,
            catalog=ctx.snapshot.catalog,
            pin=ctx.pin,
            session=session,
            before_attempt=None
            if run is None or not run.has("before_attempt")
            else functools.partial(run.before_attempt, decision.route),
            cache_key=key,
            probe=probe,
        )
        return decision, plan

    def _pinned(
        self,
        ctx: RequestContext,
        request: ChatRequest | EmbeddingRequest,
        decision: RouteDecision,
        pin: AccountPin,
    ) -> RouteDecision:
        try:
            return pinned_decision(decision, pin)
        except GatewayError as error:
            raise self._failed(ctx, request, decision, error, []) from None

    def _health_view(self, snapshot: Snapshot) -> dict[str, TargetVerdict]:
        return health_view(snapshot, self._health, self._accounts, now=self._clock.monotonic())

    def _failed(
        self,
        ctx: RequestContext,
        request: ChatRequest | EmbeddingRequest,
        decision: RouteDecision,
        error: GatewayError,
        attempts: list[AttemptRecord],
    ) -> RequestFailedError:
        trace = self._record(
            ctx,
            requested_model=request.model,
            stream=_streams(request),
            decision=decision,
            attempts=attempts,
            error=error,
        )
        return RequestFailedError(error, trace)

    def finish_stream(
        self,
        opened: OpenStream,
        *,
        ctx: RequestContext,
        request: ChatRequest,
        decision: RouteDecision,
        plan: ExecutionPlan[ChatRequest],
    ) -> TraceRecord:
        """Record a committed stream that ended, its usage as far as it got; a whole
        answer is kept by the response cache where the request may be."""
        usage = opened.usage
        estimate = tokens_for_chars(opened.output_chars)
        if opened.error is None:
            usage, source = usage_or_estimate(usage, request, estimate)
            whole = opened.collector.complete() if opened.collector is not None else None
            if whole is not None:
                answered = Answered(whole, opened.target, usage)
                decision = kept(
                    self._cache, ctx, plan, answered, decision,
                    clock=self._clock, at_rest=self._at_rest,
                )  # fmt: skip
        else:  # cut short (a failure after the commit, or the client left): counts are partial
            usage, source = cut_short_usage(usage, request, estimate), "estimate"
        ttft = opened.attempts[-1].ttft_ms if opened.attempts else None
        return self._record(
            ctx,
            requested_model=request.model,
            stream=True,
            decision=decision,
            attempts=opened.attempts,
            target=opened.target,
            usage=usage,
            usage_source=source,
            error=opened.error,
            committed=True,
            ttft_ms=ttft,
            cache=lookup_outcome(plan.policy, ctx.endpoint, ctx.cache_mode),
        )


def _streams(request: ChatRequest | EmbeddingRequest) -> bool:
    return isinstance(request, ChatRequest) and request.stream


def _nothing() -> None:
    """A cached answer's stream has its trace written when it is served."""
