"""The worker that runs background Responses jobs, off the request path.

Strategy: one loop task claims queued jobs from the state store (gw/store/response_jobs.py)
while fewer than ``responses.background.concurrency`` run, each in a task of its own; a
new job or a finished one wakes it, and it also wakes on a timer to clear the content of
jobs whose retention ran out. A job runs the way a request does: its stored body is
decoded by the Responses codec, a ``previous_response_id`` is pinned, and
``Gateway.complete`` routes, retries, falls back, applies the tenant's limits and budgets
and records the trace and usage (marked ``background``, under the job's request id, so
``gw explain resp_...`` finds it). The answer is sealed and stored for the client to fetch.

At start, jobs a killed gw left ``in_progress`` are failed with the reason (their answer,
if any, is lost); queued ones simply run. On shutdown the loop stops claiming, running jobs
get ``drain`` seconds to finish, and the rest are cancelled and failed, saying so.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Callable
from typing import Final

import msgspec

from gw.codecs.openai_responses.client_request import decode_responses_request
from gw.codecs.openai_responses.client_response import encode_responses_response, ending
from gw.config.snapshot import Snapshot
from gw.errors import GatewayError
from gw.execution.gateway import Gateway
from gw.execution.request_context import RequestContext, RequestFailedError
from gw.ports import Clock
from gw.record import response_id
from gw.server.inference.previous_response import ResponseLinks, pin_previous
from gw.store.port import ResponseJobStore
from gw.store.response_jobs import Job, JobStatus
from gw.vault.content_seal import ContentSeal

logger = logging.getLogger("gw.server")

INTERRUPTED: Final = (
    "gw stopped while this background response ran (the process was killed or crashed), "
    "so its answer is lost; send the request again"
)
STOPPED: Final = "gw was shut down while this background response ran; send the request again"
MIN_SWEEP_S: Final = 0.25
MAX_SWEEP_S: Final = 60.0
ENDPOINT: Final = "responses"
# A response object's status, as the job's.
_STATUSES: Final[dict[str, JobStatus]] = {"incomplete": "incomplete", "failed": "failed"}


class JobOutcome(msgspec.Struct, frozen=True, kw_only=True):
    status: JobStatus
    result: bytes | None = None  # the response object's JSON, not yet sealed
    error: tuple[str, str] | None = None  # gw's code and message


class BackgroundWorker:
    """``start`` and ``stop`` bracket the server; ``wake`` after queueing a job."""

    def __init__(
        self,
        jobs: ResponseJobStore,
        *,
        seal: ContentSeal,
        gateway: Gateway,
        links: ResponseLinks,
        snapshot: Callable[[], Snapshot],
        clock: Clock,
    ) -> None:
        self._jobs = jobs
        self._seal = seal
        self._gateway = gateway
        self._links = links
        self._snapshot = snapshot
        self._clock = clock
        self._wake = asyncio.Event()
        self._running: dict[str, asyncio.Task[None]] = {}
        self._loop_task: asyncio.Task[None] | None = None
        self._stopping = False
        self._next_sweep = 0.0
        self.completed = 0  # jobs run to an end (any status), for tests and status

    async def start(self) -> None:
        failed = await self._jobs.interrupted(now=self._clock.time(), message=INTERRUPTED)
        if failed:
            logger.warning(
                "%d background responses were running when gw last stopped; marked failed",
                failed,
            )
        self._loop_task = asyncio.create_task(self._loop())

    def wake(self) -> None:
        self._wake.set()

    def cancel(self, request_id: str) -> None:
        """Stop the job's run if it is running here (the store already says cancelled)."""
        task = self._running.get(request_id)
        if task is not None:
            task.cancel()

    @property
    def running(self) -> int:
        return len(self._running)

    async def stop(self, drain: float) -> None:
        """Stop claiming; give running jobs ``drain`` seconds, then cancel and fail them."""
        self._stopping = True
        if self._loop_task is not None:
            self._loop_task.cancel()
            with contextlib.suppress(BaseException):  # a crashed loop must not stop shutdown
                await self._loop_task
        tasks = list(self._running.values())
        if tasks:
            _, left = await asyncio.wait(tasks, timeout=drain)
            for task in left:
                task.cancel()
            if left:
                await asyncio.wait(left)

    # -- the loop -------------------------------------------------------------------------

    async def _loop(self) -> None:
        while True:
            self._wake.clear()
            try:
                await self._sweep()
                await self._fill()
            except Exception as exc:  # noqa: BLE001 -- the loop outlives a failed round
                logger.warning("background responses: %s", type(exc).__name__)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._sweep_interval()):
                    await self._wake.wait()

    def _sweep_interval(self) -> float:
        retention = self._snapshot().config.responses.background.retention.seconds
        return min(MAX_SWEEP_S, max(MIN_SWEEP_S, retention / 4))

    async def _sweep(self) -> None:
        now = self._clock.time()
        if now < self._next_sweep:
            return
        self._next_sweep = now + self._sweep_interval()
        keep = self._snapshot().config.state.trace_max_age.seconds
        cleared, deleted = await self._jobs.expire(now=now, forget_before=now - keep)
        if cleared or deleted:
            logger.info(
                "background responses: content of %d expired, %d old jobs forgotten",
                cleared,
                deleted,
            )

    async def _fill(self) -> None:
        limit = self._snapshot().config.responses.background.concurrency
        while not self._stopping and len(self._running) < limit:
            claimed = await self._jobs.claim(now=self._clock.time())
            if claimed is None:
                return
            job, sealed = claimed
            task = asyncio.create_task(self._run(job, sealed))
            self._running[job.request_id] = task
            task.add_done_callback(functools.partial(self._ended, job.request_id))

    def _ended(self, request_id: str, _: asyncio.Task[None]) -> None:
        self._running.pop(request_id, None)
        self.completed += 1
        self._wake.set()

    # -- one job --------------------------------------------------------------------------

    async def _run(self, job: Job, sealed: bytes) -> None:
        try:
            body = await asyncio.to_thread(self._seal.open, sealed)
            outcome = await self._execute(job, body)
            result = outcome.result
            if result is not None:
                result = await asyncio.to_thread(self._seal.seal, result)
        except asyncio.CancelledError:
            if self._stopping:  # a client's cancel has already ended the job in the store
                await self._finish(
                    job, JobOutcome(status="failed", error=("internal_error", STOPPED))
                )
            return
        except Exception as exc:  # noqa: BLE001 -- a job that cannot run fails, saying why
            message = f"gw could not run this background response ({type(exc).__name__})"
            logger.warning("background response %s: %s", job.request_id, message)
            outcome, result = JobOutcome(status="failed", error=("internal_error", message)), None
        await self._finish(job, msgspec.structs.replace(outcome, result=result))

    async def _finish(self, job: Job, outcome: JobOutcome) -> None:
        now = self._clock.time()
        retention = self._snapshot().config.responses.background.retention.seconds
        await self._jobs.finish(
            job.request_id,
            outcome.status,
            now=now,
            expires_at=now + retention,
            result=outcome.result,
            error=outcome.error,
        )

    async def _execute(self, job: Job, body: bytes) -> JobOutcome:
        """The job as a request: decoded, pinned, run through the gateway, encoded."""
        ctx = RequestContext(
            request_id=job.request_id,
            snapshot=self._snapshot(),
            endpoint=ENDPOINT,
            started_at=self._clock.time(),
            started_mono=self._clock.monotonic(),
            tenant=job.tenant,
            key_id=job.key_id,
            background=True,
        )
        try:
            asked = msgspec.structs.replace(decode_responses_request(body), stream=False)
            ctx, chat = await pin_previous(ctx, asked, self._links)
        except GatewayError as error:
            self._gateway.reject(ctx, error, requested_model=job.model, stream=False)
            return JobOutcome(status="failed", error=(error.code, error.message))
        try:
            completed = await self._gateway.complete(ctx, chat)
        except RequestFailedError as failed:
            return JobOutcome(status="failed", error=(failed.error.code, failed.error.message))
        answer = completed.response
        encoded = encode_responses_response(  # echoing the client's ids, not the upstream's
            answer, asked, response_id=response_id(job.request_id), created_at=int(job.created_at)
        )
        return JobOutcome(
            status=_STATUSES.get(ending(answer.finish_reason)[0], "completed"), result=encoded
        )
