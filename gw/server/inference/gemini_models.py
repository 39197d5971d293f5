"""GET /v1beta/models (and /v1beta/models/{model}, and both under /v1 for google-genai):
what a Gemini client may name, in Google's ``Model`` shape (``client.models.list()`` /
``client.models.get()``).

The list holds gw's routes, then the catalogued models of the configured providers as
``provider/model``, each named ``models/<name>`` as Google names them; a key limited to
some models sees only those. Limits come from the catalog (a route's, from its first
target's entry); ``supportedGenerationMethods`` says chat or embeddings by the entry's
capabilities. Pages follow ``pageSize`` (default 50, at most 1000, as Google's) and the
``nextPageToken`` gw hands out.
"""

from __future__ import annotations

import msgspec
from litestar import Response

from gw.codecs.fields import decimal
from gw.config.schema import ModelEntry
from gw.config.snapshot import Snapshot
from gw.errors import GatewayError, InvalidRequestError, ModelNotFoundError, client_value
from gw.execution.request_context import RequestContext
from gw.server.auth import Principal, require_scope
from gw.server.responses import JSON, gemini_error_response, gw_headers
from gw.server.services import HttpRequest, ServerServices

DEFAULT_PAGE = 50
MAX_PAGE = 1000
_CHAT_METHODS = ["generateContent", "streamGenerateContent", "countTokens"]
_EMBED_METHODS = ["embedContent", "batchEmbedContents"]


def from_google_sdk(request: HttpRequest) -> bool:
    """google-genai (Python and JS, so Gemini CLI) sends ``x-goog-api-client`` always, and
    its key as ``x-goog-api-key``: such a caller of GET /v1/models gets Google's shapes."""
    headers = request.headers
    return "x-goog-api-client" in headers or "x-goog-api-key" in headers


async def serve_models(services: ServerServices, request: HttpRequest) -> Response[bytes]:
    ctx = services.begin(request, "gemini.models.list")
    try:
        principal = await _caller(services, request)
        start, size = _page(request)
    except GatewayError as error:
        return _refused(services, ctx, error)
    names = _visible(ctx.snapshot, principal)
    page = names[start : start + size]
    body: dict[str, object] = {"models": [_model(ctx.snapshot, name) for name in page]}
    if start + size < len(names):
        body["nextPageToken"] = str(start + size)
    return _answer(ctx, body)


async def serve_model(services: ServerServices, request: HttpRequest, name: str) -> Response[bytes]:
    ctx = services.begin(request, "gemini.models.get")
    try:
        principal = await _caller(services, request)
        if principal.models is not None and name not in principal.models:
            raise ModelNotFoundError(f"model {client_value(name)} is not one this API key may use")
        ctx.snapshot.resolve_model(name)  # a route or provider/model, else model_not_found
    except GatewayError as error:
        return _refused(services, ctx, error)
    return _answer(ctx, _model(ctx.snapshot, name))


async def _caller(services: ServerServices, request: HttpRequest) -> Principal:
    principal = await services.authenticate(request)
    require_scope(principal, "inference")
    return principal


def _page(request: HttpRequest) -> tuple[int, int]:
    size_text = request.query_params.get("pageSize") or str(DEFAULT_PAGE)
    token = request.query_params.get("pageToken") or "0"
    size, start = decimal(size_text), decimal(token)
    if size is None or not 1 <= size <= MAX_PAGE:
        raise InvalidRequestError(
            f"`pageSize` must be an integer from 1 to {MAX_PAGE}", param="pageSize"
        )
    if start is None:
        raise InvalidRequestError(
            "`pageToken` must be a nextPageToken gw returned", param="pageToken"
        )
    return start, size


def _visible(snapshot: Snapshot, principal: Principal) -> list[str]:
    """Route names, then catalogued ``provider/model`` of configured providers."""
    names = list(snapshot.routes)
    names += [
        f"{provider}/{model}"
        for provider, model in snapshot.catalog
        if provider in snapshot.providers
    ]
    allowed = principal.models
    return [name for name in names if allowed is None or name in allowed]


def _entry(snapshot: Snapshot, name: str) -> ModelEntry | None:
    route = snapshot.routes.get(name)
    if route is not None:
        target = route.targets[0] if route.targets else None
        return snapshot.catalog.get((target.provider, target.model)) if target else None
    provider, _, model = name.partition("/")
    return snapshot.catalog.get((provider, model))


def _model(snapshot: Snapshot, name: str) -> dict[str, object]:
    route = snapshot.routes.get(name)
    entry = _entry(snapshot, name)
    capabilities = entry.capabilities if entry is not None else ()
    description = route.description if route is not None else None
    model: dict[str, object] = {
        "name": f"models/{name}",
        "baseModelId": name,
        "version": "gw",
        "displayName": name,
        "description": description or ("a gw route" if route else f"{name} through gw"),
    }
    if entry is not None and entry.context_window is not None:
        model["inputTokenLimit"] = entry.context_window
    if entry is not None and entry.max_output_tokens is not None:
        model["outputTokenLimit"] = entry.max_output_tokens
    chats = not capabilities or any(kind != "embeddings" for kind in capabilities)
    methods = _CHAT_METHODS if chats else []
    model["supportedGenerationMethods"] = (
        methods + _EMBED_METHODS if "embeddings" in capabilities else methods
    )
    if "reasoning" in capabilities:
        model["thinking"] = True
    return model


def _refused(services: ServerServices, ctx: RequestContext, error: GatewayError) -> Response[bytes]:
    failed = services.gateway.reject(ctx, error, stream=False)
    return gemini_error_response(failed.error, failed.trace)


def _answer(ctx: RequestContext, body: dict[str, object]) -> Response[bytes]:
    return Response(
        content=msgspec.json.encode(body),
        media_type=JSON,
        headers=gw_headers(ctx.request_id, "-", ctx.snapshot.revision),
    )
