"""``GET /openapi.json``: a hand-written OpenAPI 3.1 document for the data and admin planes.

Written by hand, not generated: the handlers take raw bodies (each codec decodes its own
wire format), so Litestar's generator would describe nothing useful, and it would cost
start-up time and pull optional dependencies the zipapp leaves out (polyfactory).
"""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import Response, get
from litestar.handlers import HTTPRouteHandler

from gw.server.responses import JSON

_JSON_BODY = {"content": {"application/json": {"schema": {"type": "object"}}}}
_OK = {"200": {"description": "OK", **_JSON_BODY}}
_ERRORS = {
    "default": {
        "description": "An error in the OpenAI shape: {error: {message, type, code, param}, gw}",
        **_JSON_BODY,
    }
}
_ADMIN: list[dict[str, list[str]]] = [{"bearer": []}]
_NAME = [{"name": "name", "in": "path", "required": True, "schema": {"type": "string"}}]
_RESPONSE_ID = [
    {"name": "response_id", "in": "path", "required": True, "schema": {"type": "string"}}
]
_IF_MATCH = [{"name": "If-Match", "in": "header", "required": False, "schema": {"type": "integer"}}]
# Idempotency-Key (gw/server/inference/idempotency.py): non-streaming requests only.
_IDEMPOTENT = {
    "parameters": [
        {
            "name": "Idempotency-Key",
            "in": "header",
            "required": False,
            "description": "A retry with the same key and body gets the held answer (409 "
            "while the first runs, 422 with another body); not with stream or background",
            "schema": {"type": "string", "maxLength": 257},
        }
    ],
    "requestBody": _JSON_BODY,
}


def _op(summary: str, tag: str, **extra: Any) -> dict[str, Any]:
    responses = {**_OK, **extra.pop("responses", {}), **_ERRORS}
    op: dict[str, Any] = {"summary": summary, "tags": [tag], "responses": responses, **extra}
    if tag == "admin":
        op["security"] = _ADMIN
    return op


def _section(kind: str, plural: str) -> dict[str, dict[str, Any]]:
    write = {"requestBody": {"required": True, **_JSON_BODY}}
    return {
        f"/admin/v1/{plural}": {
            "get": _op(f"List {plural}", "admin"),
            "post": _op(
                f"Create a {kind} (409 conflict when the name exists)",
                "admin",
                parameters=_IF_MATCH,
                responses={"201": {"description": "Created", **_JSON_BODY}},
                **write,
            ),
        },
        f"/admin/v1/{plural}/{{name}}": {
            "put": _op(
                f"Create or replace a {kind}", "admin", parameters=[*_NAME, *_IF_MATCH], **write
            ),
            "delete": _op(f"Delete a {kind}", "admin", parameters=[*_NAME, *_IF_MATCH]),
        },
    }


DOCUMENT: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {"title": "gw", "version": "1", "description": "A local-first LLM gateway."},
    "components": {"securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
    "paths": {
        "/v1/chat/completions": {"post": _op("OpenAI Chat Completions", "data", **_IDEMPOTENT)},
        "/v1/embeddings": {"post": _op("OpenAI Embeddings", "data", **_IDEMPOTENT)},
        "/v1/messages": {"post": _op("Anthropic Messages", "data", **_IDEMPOTENT)},
        "/v1/responses": {"post": _op("OpenAI Responses", "data", **_IDEMPOTENT)},
        "/v1/responses/{response_id}": {
            "get": _op("A background response", "data", parameters=_RESPONSE_ID),
            "delete": _op("Delete a background response", "data", parameters=_RESPONSE_ID),
        },
        "/v1/responses/{response_id}/cancel": {
            "post": _op("Cancel a background response", "data", parameters=_RESPONSE_ID)
        },
        "/v1/responses/{response_id}/input_items": {
            "get": _op("A background response's input items", "data", parameters=_RESPONSE_ID)
        },
        "/v1/models": {"get": _op("The models clients may ask for", "data")},
        "/v1/models/{model_id}": {"get": _op("One model clients may ask for", "data")},
        "/livez": {"get": _op("Alive", "probes")},
        "/readyz": {"get": _op("Ready (store reachable, snapshot loaded)", "probes")},
        "/metrics": {
            "get": _op(
                "Prometheus metrics (the local admin token, or the usage:read scope; 404 when"
                " telemetry.metrics is off)",
                "metrics",
                security=_ADMIN,
                responses={
                    "200": {
                        "description": "The Prometheus text format",
                        "content": {"text/plain": {"schema": {"type": "string"}}},
                    }
                },
            )
        },
        "/admin/v1/health": {"get": _op("Targets' health, breakers, account locks", "admin")},
        "/admin/v1/usage": {"get": _op("Usage grouped by tenant, model, key, day ...", "admin")},
        "/admin/v1/config": {
            "get": _op("The running config (redacted) and reload status", "admin")
        },
        "/admin/v1/providers": {"get": _op("Providers (header values redacted)", "admin")},
        **_section("route", "routes"),
        **_section("policy", "policies"),
        "/admin/v1/reload": {"post": _op("Re-read the config file now", "admin")},
        "/admin/v1/status": {"get": _op("Address, revision, uptime, config, store", "admin")},
        "/admin/v1/config/rollback": {
            "post": _op("Put revision N's config file back and apply it", "admin")
        },
        "/admin/v1/traces": {"get": _op("Newest traces, as gw explain --json", "admin")},
        "/admin/v1/traces/{request_id}": {"get": _op("One trace, as gw explain --json", "admin")},
        "/admin/v1/route-preview": {
            "post": _op(
                "Route a chat request without calling upstream",
                "admin",
                requestBody=_JSON_BODY,
                parameters=[
                    {"name": name, "in": "query", "required": False, "schema": {"type": "string"}}
                    for name in ("tenant", "api_key", "kind")
                ],
            )
        },
        "/admin/v1/switches": {
            "get": _op("Kill switches in force", "admin"),
            "post": _op(
                "Set or end a kill switch (a config revision)",
                "admin",
                parameters=_IF_MATCH,
                requestBody={"required": True, **_JSON_BODY},
            ),
        },
        "/admin/v1/dashboard/login-link": {
            "post": _op("A one-time login link for the dashboard (60 s)", "admin")
        },
    },
}
_ENCODED = msgspec.json.encode(DOCUMENT)


def openapi_handlers() -> list[HTTPRouteHandler]:
    @get("/openapi.json", include_in_schema=False)
    async def openapi() -> Response[bytes]:
        return Response(content=_ENCODED, media_type=JSON)

    return [openapi]
