"""``GET`` / ``DELETE /v1/responses/{id}``, ``GET /v1/responses/{id}/input_items`` and
``POST /v1/responses/{id}/cancel``: what gw holds of a response, which is a background
job's (gw/server/inference/background_jobs.py) and nothing else; 404 ``response_not_found``
otherwise. Inference scope; errors in OpenAI's shape, traced like other refusals.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from litestar import Response, delete, get, post
from litestar.handlers import HTTPRouteHandler

from gw.codecs.fields import decimal
from gw.errors import GatewayError, InvalidRequestError, ResponseNotFoundError
from gw.record import shown_response_id
from gw.server.auth import Principal, require_scope
from gw.server.inference.background_jobs import KEEPS, BackgroundJobs
from gw.server.responses import JSON, gw_headers, openai_error_response
from gw.server.services import HttpRequest, ServerServices

PATH = "/v1/responses/{response_id:str}"
DEFAULT_ITEMS = 20
Action = Callable[[BackgroundJobs, Principal], Awaitable[bytes]]


def response_job_handlers(services: ServerServices) -> list[HTTPRouteHandler]:
    @get(PATH, include_in_schema=False)
    async def retrieve_response(request: HttpRequest, response_id: str) -> Response[bytes]:
        async def action(jobs: BackgroundJobs, principal: Principal) -> bytes:
            if request.query_params.get("stream") in ("true", "1"):
                raise InvalidRequestError(
                    "gw cannot stream a stored response again; retrieve it without stream",
                    param="stream",
                )
            return await jobs.retrieve(principal, response_id)

        return await _answer(services, request, "responses.retrieve", response_id, action)

    @delete(PATH, status_code=200, include_in_schema=False)
    async def delete_response(request: HttpRequest, response_id: str) -> Response[bytes]:
        async def action(jobs: BackgroundJobs, principal: Principal) -> bytes:
            return await jobs.delete(principal, response_id)

        return await _answer(services, request, "responses.delete", response_id, action)

    @post(PATH + "/cancel", status_code=200, include_in_schema=False)
    async def cancel_response(request: HttpRequest, response_id: str) -> Response[bytes]:
        async def action(jobs: BackgroundJobs, principal: Principal) -> bytes:
            return await jobs.cancel(principal, response_id)

        return await _answer(services, request, "responses.cancel", response_id, action)

    @get(PATH + "/input_items", include_in_schema=False)
    async def list_input_items(request: HttpRequest, response_id: str) -> Response[bytes]:
        async def action(jobs: BackgroundJobs, principal: Principal) -> bytes:
            query = request.query_params
            return await jobs.input_items(
                principal,
                response_id,
                after=query.get("after"),
                limit=_limit(query.get("limit")),
                order=query.get("order") or "desc",
            )

        return await _answer(services, request, "responses.input_items", response_id, action)

    return [retrieve_response, delete_response, cancel_response, list_input_items]


async def _answer(
    services: ServerServices, request: HttpRequest, endpoint: str, given: str, action: Action
) -> Response[bytes]:
    ctx = services.begin(request, endpoint)
    try:
        principal = await services.authenticate(request)
        require_scope(principal, "inference")
        jobs = services.background
        if jobs is None:
            raise ResponseNotFoundError(f"gw holds no response {shown_response_id(given)}: {KEEPS}")
        body = await action(jobs, principal)
    except GatewayError as error:
        failed = services.gateway.reject(ctx, error, stream=False)
        return openai_error_response(failed.error, failed.trace)
    return Response(
        content=body,
        media_type=JSON,
        headers=gw_headers(ctx.request_id, "-", ctx.snapshot.revision),
    )


def _limit(given: str | None) -> int:
    if given is None:
        return DEFAULT_ITEMS
    limit = decimal(given)
    if limit is None:
        raise InvalidRequestError("limit must be a whole number from 1 to 100", param="limit")
    return limit
