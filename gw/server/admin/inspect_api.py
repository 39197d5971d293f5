"""The admin API's read-only views of requests (``/admin/v1``, ``admin:read`` scope).

``GET /admin/v1/traces?limit=20&client_request_id=ID``: the newest traces, newest first,
each in the shape ``gw explain --json`` prints (gw/cli/explain_view.py).
``GET /admin/v1/traces/{id}``: one trace (an id or a unique prefix of one); 404
``endpoint_not_found`` when there is none.

``POST /admin/v1/route-preview[?tenant=T&api_key=KEY_ID&kind=K]``: the body is an OpenAI
chat request; the answer is what routing would decide for it now, for a caller of that
tenant and key id and a request of that kind (default ``chat``), without calling any
upstream::

    {"revision": 3, "policy": "default", "decision": {...as in gw explain --json...},
     "rule": {"policy", "matched_on": [...], "priority", "deny", "deny_reason"}}

``rule`` says which rule decided: the governing policy, the fields it matched on in rank
order (gw/routing/policy.py; empty for the built-in default) and whether it denies. An
unknown model is 404 ``model_not_found``, as on /v1/chat/completions.
"""

from __future__ import annotations

from typing import Protocol, cast, get_args, runtime_checkable

from litestar import Response, get, post
from litestar.handlers import HTTPRouteHandler

from gw.codecs.openai_chat import decode_chat_request
from gw.config.schema import RequestKind
from gw.errors import EndpointNotFoundError, GatewayError, InvalidRequestError
from gw.execution.request_context import RequestFailedError
from gw.record import TraceRecord
from gw.routing.policy import matched_fields
from gw.routing.router import deny_reason
from gw.routing.shaping import decide_shaped
from gw.server.admin.config_api import AdminApi
from gw.server.body import read_body
from gw.server.responses import openai_error_response
from gw.server.services import HttpRequest, ServerServices
from gw.telemetry.explain import decision_json, explain_json

DEFAULT_LIMIT = 20
REQUEST_KINDS: tuple[str, ...] = get_args(RequestKind)
MAX_LIMIT = 1000


@runtime_checkable
class TraceReader(Protocol):
    """What the traces views read; ``SqliteStore`` is one."""

    async def list_traces(
        self, *, limit: int = 20, client_request_id: str | None = None
    ) -> list[TraceRecord]: ...

    async def get_trace(self, request_id: str) -> TraceRecord | None: ...


def parse_limit(value: str | None) -> int:
    if not value:
        return DEFAULT_LIMIT
    try:
        limit = int(value)
    except ValueError:
        limit = 0
    if not 1 <= limit <= MAX_LIMIT:
        raise InvalidRequestError(f"limit must be 1..{MAX_LIMIT}, not {value!r}", param="limit")
    return limit


def parse_kind(value: str | None) -> RequestKind:
    if not value:
        return "chat"
    if value not in REQUEST_KINDS:
        choices = ", ".join(REQUEST_KINDS)
        raise InvalidRequestError(f"kind must be one of {choices}, not {value!r}", param="kind")
    return cast("RequestKind", value)


def inspect_handlers(services: ServerServices) -> list[HTTPRouteHandler]:
    api = AdminApi(services)
    store = services.usage if isinstance(services.usage, TraceReader) else None

    @get("/admin/v1/traces", include_in_schema=False)
    async def traces(request: HttpRequest) -> Response[bytes]:
        try:
            ctx = await api.begin(request, "admin.traces")
        except RequestFailedError as refused:
            return openai_error_response(refused.error, refused.trace)
        try:
            limit = parse_limit(request.query_params.get("limit"))
        except GatewayError as error:
            return api.fail(ctx, error)
        found: list[TraceRecord] = []
        if store is not None:
            client_id = request.query_params.get("client_request_id") or None
            found = await store.list_traces(limit=limit, client_request_id=client_id)
        return api.answer(ctx, [explain_json(trace) for trace in found])

    @get("/admin/v1/traces/{request_id:str}", include_in_schema=False)
    async def trace(request: HttpRequest, request_id: str) -> Response[bytes]:
        try:
            ctx = await api.begin(request, "admin.trace")
        except RequestFailedError as refused:
            return openai_error_response(refused.error, refused.trace)
        try:
            found = None if store is None else await store.get_trace(request_id)
        except Exception as exc:  # noqa: BLE001 -- the store's ambiguous/unreadable errors
            return api.fail(ctx, InvalidRequestError(str(exc), param="request_id"))
        if found is None:
            return api.fail(ctx, EndpointNotFoundError(f"no trace {request_id!r}"))
        return api.answer(ctx, explain_json(found))

    @post("/admin/v1/route-preview", status_code=200, include_in_schema=False)
    async def route_preview(request: HttpRequest) -> Response[bytes]:
        try:
            ctx = await api.begin(request, "admin.route_preview")
        except RequestFailedError as refused:
            return openai_error_response(refused.error, refused.trace)
        snapshot = ctx.snapshot
        try:
            query = request.query_params
            kind = parse_kind(query.get("kind"))
            body = await read_body(request, snapshot.config.server.max_body_bytes.bytes)
            chat = decode_chat_request(body)
            # The same health view a real request would see, and its policy's prompt
            # shaping (said in the decision's notes); nothing is claimed or called.
            _, decision, policy = decide_shaped(
                chat,
                snapshot,
                request_id=ctx.request_id,
                tenant=query.get("tenant") or None,
                api_key_id=query.get("api_key") or None,
                health=services.gateway._health_view(snapshot),
                latency_ms=None
                if services.latency is None
                else services.latency.view(streaming=chat.stream),
                kind=kind,
            )
        except GatewayError as error:
            return api.fail(ctx, error)
        body_out = {
            "revision": snapshot.revision,
            "policy": policy.name,
            "decision": decision_json(decision),
            "rule": {
                "policy": policy.name,
                "matched_on": list(matched_fields(policy.match)),
                "priority": policy.priority,
                "deny": policy.deny,
                "deny_reason": deny_reason(policy) if policy.deny else None,
            },
        }
        return api.answer(ctx, body_out)

    return [traces, trace, route_preview]
