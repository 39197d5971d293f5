"""Background Responses as the client sees them: queue one, poll it, cancel or delete it,
list its input items. The worker (background_worker.py) runs them.

A caller sees only its own jobs: the same API key (or, in open mode, no key); anyone
else's id is answered 404 ``response_not_found``, as an unknown one is. A job's result is
handed out once: the first ``GET`` after it ended returns the whole response object and
deletes it, later ones return the object without output (so do ``GET``s after the
retention ran out). Content is opened in a worker thread (age decryption is CPU work).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Final

import msgspec

from gw.codecs.openai_responses.client_background import (
    MAX_ITEMS_PAGE,
    input_items,
    items_page,
    job_object,
)
from gw.codecs.openai_responses.client_request import decode_responses_request
from gw.config.schema import BackgroundConfig
from gw.errors import (
    GatewayError,
    InternalError,
    InvalidRequestError,
    RateLimitedError,
    ResponseNotFoundError,
)
from gw.execution.request_context import RequestContext
from gw.ir import ChatRequest
from gw.ports import Clock
from gw.record import is_response_id, request_id_of, response_id, shown_response_id
from gw.routing.plan import route_plan
from gw.server.auth import Principal
from gw.server.inference.background_worker import BackgroundWorker
from gw.store.port import ResponseJobStore
from gw.store.response_jobs import WAITING, Job
from gw.vault.content_seal import ContentSeal
from gw.vault.errors import VaultError

JSONBody = bytes
_ENCODER = msgspec.json.Encoder()
_DECODER = msgspec.json.Decoder()
KEEPS: Final = "only background responses are kept (background: true)"


class BackgroundJobs:
    def __init__(
        self,
        jobs: ResponseJobStore,
        seal: ContentSeal,
        worker: BackgroundWorker,
        clock: Clock,
        forget_after: Callable[[], float],
    ) -> None:
        self._jobs = jobs
        self._seal = seal
        self.worker = worker
        self._clock = clock
        self._forget_after = forget_after  # state.trace_max_age: rows go with the traces

    async def enqueue(self, ctx: RequestContext, chat: ChatRequest, body: bytes) -> JSONBody:
        """Queue ``body`` (``chat`` decoded) and answer the queued response object."""
        settings = ctx.snapshot.config.responses.background
        _check(settings, chat)
        route_plan(ctx.snapshot, chat.model)  # an unknown model is refused now, not later
        sealed = await asyncio.to_thread(self._seal.seal, body)
        job = Job(
            request_id=ctx.request_id,
            tenant=ctx.tenant,
            key_id=ctx.key_id,
            model=chat.model,
            status="queued",
            created_at=ctx.started_at,
        )
        waiting = await self._jobs.enqueue(job, sealed, limit=settings.max_queued_per_tenant)
        if waiting is not None:
            who = f"tenant {ctx.tenant}" if ctx.tenant is not None else "this gateway"
            raise RateLimitedError(
                f"{who} has {waiting} background responses queued, running or with an "
                "answer not yet fetched (responses.background.max_queued_per_tenant); fetch "
                "or delete one (GET or DELETE /v1/responses/{id}), or cancel one"
            )
        self.worker.wake()
        return self._object(job, chat)

    async def retrieve(self, principal: Principal, given: str) -> JSONBody:
        job = await self._visible(principal, given)
        if job.status in WAITING:
            return self._object(job, await self._request(job))
        now = self._clock.time()
        if job.content == "held" and job.expires_at is not None and job.expires_at <= now:
            await self._jobs.expire(now=now, forget_before=now - self._forget_after())
        else:
            sealed = await self._jobs.take_result(job.request_id)
            if sealed is not None:
                return await self._open(sealed)
        return self._object(job, None)

    async def cancel(self, principal: Principal, given: str) -> JSONBody:
        job = await self._visible(principal, given)
        if job.status == "cancelled":
            return self._object(job, None)
        if job.status not in WAITING:
            raise InvalidRequestError(
                f"response {given} has already ended ({job.status}); only a queued or "
                "running background response can be cancelled"
            )
        request = await self._request(job)
        if not await self._jobs.cancel(job.request_id, now=self._clock.time()):
            job = await self._visible(principal, given)  # it ended meanwhile
            return self._object(job, None)
        self.worker.cancel(job.request_id)
        return self._object(msgspec.structs.replace(job, status="cancelled"), request)

    async def delete(self, principal: Principal, given: str) -> JSONBody:
        job = await self._visible(principal, given)
        await self._jobs.delete(job.request_id)
        self.worker.cancel(job.request_id)
        body = {"id": response_id(job.request_id), "object": "response", "deleted": True}
        return _ENCODER.encode(body)

    async def input_items(
        self, principal: Principal, given: str, *, after: str | None, limit: int, order: str
    ) -> JSONBody:
        if not 1 <= limit <= MAX_ITEMS_PAGE:
            raise InvalidRequestError(
                f"limit must be between 1 and {MAX_ITEMS_PAGE}", param="limit"
            )
        if order not in ("asc", "desc"):
            raise InvalidRequestError("order must be asc or desc", param="order")
        job = await self._visible(principal, given)
        items = []
        content = await self._jobs.content(job.request_id)
        if content is not None and content.request is not None:
            body = await self._open(content.request)
            items = input_items(_DECODER.decode(body), response_id(job.request_id))
        return _ENCODER.encode(items_page(items, after=after, limit=limit, order=order))

    # -- machinery ------------------------------------------------------------------------

    async def _visible(self, principal: Principal, given: str) -> Job:
        """The caller's job with this id, else 404 (another caller's looks unknown)."""
        job = None
        if is_response_id(given):
            job = await self._jobs.get(request_id_of(given))
        if job is None or (job.tenant, job.key_id) != (principal.tenant, principal.key_id):
            raise ResponseNotFoundError(
                f"gw holds no response {shown_response_id(given)} for this caller: {KEEPS}, "
                "each visible to the API key that made it, until its result is fetched and "
                "state.trace_max_age after it ended"
            )
        return job

    async def _request(self, job: Job) -> ChatRequest | None:
        """The job's request, to echo its settings; None once it is gone."""
        content = await self._jobs.content(job.request_id)
        if content is None or content.request is None:
            return None
        body = await self._open(content.request)
        try:
            return decode_responses_request(body)
        except GatewayError:  # it was decoded when it was queued; a newer gw may differ
            return None

    async def _open(self, sealed: bytes) -> bytes:
        """Stored content, opened; a 500 saying why when the vault identity cannot."""
        try:
            return await asyncio.to_thread(self._seal.open, sealed)
        except VaultError as error:
            raise InternalError(f"gw cannot open this background response: {error}") from None

    def _object(self, job: Job, request: ChatRequest | None) -> JSONBody:
        error = None
        if job.error_code is not None:
            error = (job.error_code, job.error_message or job.error_code)
        return _ENCODER.encode(
            job_object(
                request,
                response_id=response_id(job.request_id),
                created_at=job.created_at,
                model=job.model,
                status=job.status,
                error=error,
            )
        )


def _check(settings: BackgroundConfig, chat: ChatRequest) -> None:
    if not settings.enabled:
        raise InvalidRequestError(
            "background responses are off in this gateway: set responses.background.enabled:"
            " true in gw's config (gw then holds the request, encrypted, until its answer is"
            " fetched), or send the request without background",
            param="background",
        )
    if chat.stream:
        raise InvalidRequestError(
            "a background response cannot be streamed by gw: send stream: false (or leave "
            "it out) and poll GET /v1/responses/{id}",
            param="stream",
        )
