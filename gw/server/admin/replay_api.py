"""``POST /admin/v1/config/replay[?since=24h&until=T&limit=N]``: what a candidate config
would change for the recorded requests of a period (``admin:read``: it changes nothing).

The body is the candidate config's YAML text, the whole file as it would be saved. The
answer is the report ``gw replay --json`` prints (gw/execution/replay_report.py, shape in
docs/reference/cli.md). ``since`` and ``until`` take what ``gw replay`` takes (``30m``,
``24h``, ``7d``, a date); ``limit`` bounds the requests read, newest first. A candidate
that is not a valid config is 400 ``invalid_request`` naming the field and the reason
(``param`` the field), as an admin write would be.

Routing a period again is CPU work (tens of microseconds a request): it runs in a worker
thread, so requests being served are not held up.
"""

from __future__ import annotations

import asyncio
from typing import Protocol, runtime_checkable

from litestar import Response, post
from litestar.handlers import HTTPRouteHandler

from gw.config import ConfigError, Snapshot
from gw.environment import read_shipped_catalog
from gw.errors import GatewayError, InvalidRequestError
from gw.execution.replay_report import candidate_snapshot, replay_report
from gw.execution.request_context import RequestFailedError
from gw.record import TraceRecord
from gw.server.admin.config_api import AdminApi
from gw.server.body import read_body
from gw.server.responses import openai_error_response
from gw.server.services import HttpRequest, ServerServices
from gw.store.usage import parse_since

MAX_CANDIDATE_BYTES = 4 * 1024 * 1024
DEFAULT_LIMIT = 10_000
MAX_LIMIT = 100_000
SOURCE = "candidate"  # how errors and the report name the posted config


@runtime_checkable
class PeriodReader(Protocol):
    """What the replay reads; every ``StateStore`` is one."""

    async def traces_between(
        self, since: float, until: float, *, limit: int
    ) -> list[TraceRecord]: ...


def replay_handlers(services: ServerServices) -> list[HTTPRouteHandler]:
    api = AdminApi(services)
    store = services.usage if isinstance(services.usage, PeriodReader) else None

    @post("/admin/v1/config/replay", status_code=200, include_in_schema=False)
    async def replay(request: HttpRequest) -> Response[bytes]:
        try:
            ctx = await api.begin(request, "admin.config.replay")
        except RequestFailedError as refused:
            return openai_error_response(refused.error, refused.trace)
        try:
            query = request.query_params
            now = services.clock.time()
            since = _moment(query.get("since") or "24h", "since", now)
            until = now if not query.get("until") else _moment(query["until"], "until", now)
            limit = _limit(query.get("limit"))
            text = _text(await read_body(request, MAX_CANDIDATE_BYTES))
            candidate = _candidate(text)
        except GatewayError as error:
            return api.fail(ctx, error)
        traces: list[TraceRecord] = []
        if store is not None:
            traces = await store.traces_between(since, until, limit=limit + 1)
        report = await asyncio.to_thread(
            replay_report,
            traces[:limit],
            candidate,
            since=since,
            until=until,
            source=SOURCE,
            truncated=len(traces) > limit,
        )
        return api.answer(ctx, report)

    return [replay]


def _candidate(text: str) -> Snapshot:
    try:
        return candidate_snapshot(text, SOURCE, read_shipped_catalog())
    except ConfigError as error:
        field = error.path or "config"
        line = f" (line {error.line})" if error.line else ""
        raise InvalidRequestError(f"{field}{line}: {error.reason}", param=field) from None


def _moment(value: str, name: str, now: float) -> float:
    try:
        return parse_since(value, now=now)
    except ValueError as error:
        raise InvalidRequestError(f"{name}: {error}", param=name) from None


def _limit(value: str | None) -> int:
    if not value:
        return DEFAULT_LIMIT
    limit = int(value) if value.isdigit() else 0
    if not 1 <= limit <= MAX_LIMIT:
        raise InvalidRequestError(f"limit must be 1..{MAX_LIMIT}", param="limit")
    return limit


def _text(body: bytes) -> str:
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidRequestError("the body must be the candidate config as UTF-8 YAML") from None
