"""The admin API for the config (``/admin/v1``, OpenAI error shape): reads need the
``admin:read`` scope, writes, reloads and rollbacks ``admin:config`` (``admin`` holds both).

Reads::

    GET  /admin/v1/config      {"revision", "source", "config": {...redacted...},
                                "status": {"path", "error", "error_at", "applied_at",
                                           "reloads", "failures"}}
    GET  /admin/v1/providers   {"revision", "providers": [...]}   (header values: "***")
    GET  /admin/v1/routes      {"revision", "routes": [...]}
    GET  /admin/v1/policies    {"revision", "policies": [...]}

Writes (the body is one route or policy in the config's YAML shape, as JSON)::

    PUT    /admin/v1/routes/{name}    upsert: 201 when created, 200 when replaced
    POST   /admin/v1/routes           guarded create: 409 ``conflict`` when the name exists
    DELETE /admin/v1/routes/{name}    404 ``model_not_found`` when there is no such route
    (the same under /admin/v1/policies; an unknown policy is 404 ``endpoint_not_found``)

    -> {"revision", "section", "name", "created" | "deleted"}, header ``x-gw-revision``

A write edits the config file in place (gw/config/yaml_edit.py keeps its comments and
order), validates the whole new text first (400 ``invalid_request`` naming the field and
reason, the file untouched), replaces the file atomically, then reloads it as revision
source ``admin`` (``Reloader.edit``), with its audit: the caller's key id (``local-admin`` for
the local admin token) and the reason in an ``X-Gw-Reason`` header, if any (``gw config history``
shows both). Writes and reloads are serialized; an
``If-Match: <revision>`` header, checked under the same lock, makes a write conditional:
412 ``precondition_failed`` when the running revision is another. With no config file
(the built-in default) a write is 409 ``conflict``: ``gw init`` writes one.

``POST /admin/v1/reload`` re-reads the file: ``{"revision", "applied", "status"}``, with
``status.error`` set when the file is invalid (the running revision stays).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec
from litestar import Response, delete, get, post, put
from litestar.handlers import HTTPRouteHandler

from gw.config import ConfigError
from gw.config.problems import YamlEditError
from gw.config.redact import redacted
from gw.errors import (
    ConflictError,
    EndpointNotFoundError,
    GatewayError,
    InternalError,
    InvalidRequestError,
    ModelNotFoundError,
    PreconditionFailedError,
    client_value,
)
from gw.execution.request_context import RequestContext, RequestFailedError
from gw.server.auth import require_scope
from gw.server.body import read_body
from gw.server.responses import JSON, gw_headers, openai_error_response
from gw.server.services import ConfigReloads, HttpRequest, ServerServices
from gw.store.api_keys import Scope
from gw.store.revisions import Audit

if TYPE_CHECKING:  # yaml_edit imports ruamel.yaml: loaded with the first write, not at start
    from gw.config.yaml_edit import Section

MAX_ITEM_BYTES = 1024 * 1024
REASON_HEADER = "x-gw-reason"  # why an admin write was made: recorded with its revision
LOCAL_ACTOR = "local"  # the actor of a caller without a key id (none writes today)
SECTIONS: tuple[Section, ...] = ("routes", "policies")
_SINGULAR = {"routes": "route", "policies": "policy"}


class AdminApi:
    """What every admin handler does first and last: an admin scope, JSON, gw headers."""

    def __init__(self, services: ServerServices) -> None:
        self.services = services

    async def begin(
        self, request: HttpRequest, endpoint: str, scope: Scope = "admin:read"
    ) -> RequestContext:
        """The request's context, once the caller is known to hold ``scope``;
        ``RequestFailedError`` (its trace recorded) when not."""
        ctx = self.services.begin(request, endpoint)
        try:
            principal = await self.services.authenticate_admin(request)
            require_scope(principal, scope)
        except GatewayError as error:
            raise self.services.gateway.reject(ctx, error, stream=False) from None
        # Who called: traced, and the actor of the revision a write makes.
        return msgspec.structs.replace(ctx, key_id=principal.key_id, tenant=principal.tenant)

    def fail(self, ctx: RequestContext, error: GatewayError) -> Response[bytes]:
        failed = self.services.gateway.reject(ctx, error, stream=False)
        response = openai_error_response(failed.error, failed.trace)
        response.headers["x-gw-revision"] = str(self.services.snapshot().revision)
        return response

    def answer(self, ctx: RequestContext, body: object, status: int = 200) -> Response[bytes]:
        revision = self.services.snapshot().revision
        return Response(
            content=msgspec.json.encode(body),
            status_code=status,
            media_type=JSON,
            headers=gw_headers(ctx.request_id, "-", revision),
        )


class ConfigWriter:
    """Admin writes to the config file (see the module docstring); the reloader runs them
    one at a time, with its own reloads."""

    def __init__(self, services: ServerServices) -> None:
        self.services = services

    async def write(
        self,
        section: str,
        if_match: int | None,
        change: Change,
        audit: Audit | None = None,
    ) -> tuple[int, bool]:
        """Apply ``change(text) -> (new text, flag)`` to the file; the revision now
        running and ``flag``. ``audit`` is recorded with the revision."""
        reloader = self._reloader()
        path = reloader.status.path
        flags: list[bool] = []

        def edit(text: str | None) -> str:  # runs under the reloader's lock
            if text is None:
                raise ConflictError(
                    f"{path} is gone; put it back (or `gw config rollback N`), then retry"
                )
            current = self.services.snapshot().revision
            if if_match is not None and if_match != current:
                raise PreconditionFailedError(
                    f"If-Match names revision {if_match}, but revision {current} is running; "
                    "read the config again and retry"
                )
            try:
                new_text, flag = change(text)
            except YamlEditError as error:
                raise ConflictError(f"{path} cannot be edited: {error}") from None
            flags.append(flag)
            return new_text

        try:
            await reloader.edit(edit, "admin", audit)
        except ConfigError as error:
            field = error.path or section
            raise InvalidRequestError(f"{field}: {error.reason}", param=field) from None
        if reloader.status.error is not None:
            raise InternalError(f"the written config did not apply: {reloader.status.error}")
        return self.services.snapshot().revision, flags[0]

    def _reloader(self) -> ConfigReloads:
        reloader = self.services.reloader
        if reloader is None:
            raise ConflictError("this gateway does not reload its config; edit the file")
        if not Path(reloader.status.path).exists():
            raise ConflictError(
                f"gw is serving its built-in default config: there is no {reloader.status.path} "
                "to edit; run `gw init` to write one, then retry"
            )
        return reloader


MAX_REASON_CHARS = 500


def audit_of(ctx: RequestContext, reason: str | None) -> Audit:
    """The audit of a write by ``ctx``'s caller: its key id (``local-admin``: the local token)."""
    if reason is not None:
        reason = reason.strip()
        if len(reason) > MAX_REASON_CHARS or not reason.isprintable():
            raise InvalidRequestError(
                f"a reason is one line of at most {MAX_REASON_CHARS} printable characters",
                param="reason",
            )
    return Audit(actor=ctx.key_id or LOCAL_ACTOR, reason=reason or None)


def parse_if_match(value: str | None) -> int | None:
    """``If-Match: 3`` (quotes and ``W/`` tolerated) -> 3; None when absent or ``*``."""
    if value is None:
        return None
    tag = value.strip().removeprefix("W/").strip('"')
    if tag in ("", "*"):
        return None
    try:
        return int(tag)
    except ValueError:
        raise InvalidRequestError(
            f"If-Match must be a config revision number, not {value!r}", param="if-match"
        ) from None


def decode_item(body: bytes, section: Section, name: str | None) -> dict[str, Any]:
    """The request body as one item; ``name`` (from the path) fills or must match its own."""
    kind = _SINGULAR[section]
    try:
        item = msgspec.json.decode(body)
    except msgspec.DecodeError:
        raise InvalidRequestError(f"the body must be a JSON {kind} object") from None
    if not isinstance(item, dict):
        raise InvalidRequestError(f"the body must be a JSON {kind} object")
    if name is not None:
        item.setdefault("name", name)
        if item["name"] != name:
            raise InvalidRequestError(
                f"the body names {item['name']!r} but the path names {name!r}", param="name"
            )
    if not isinstance(item.get("name"), str) or not item["name"]:
        raise InvalidRequestError(f"a {kind} needs a name", param="name")
    return item


Change = Callable[[str], tuple[str, bool]]


def upsert_change(section: Section, item: dict[str, Any], *, guarded: bool) -> Change:
    """The edit that puts ``item`` in ``section``; guarded: 409 when its name exists."""

    def change(text: str) -> tuple[str, bool]:
        from gw.config.yaml_edit import upsert_item  # noqa: PLC0415 - ruamel.yaml: see above

        new_text, created = upsert_item(text, section, item)
        if guarded and not created:
            name = item["name"]
            raise ConflictError(
                f"a {_SINGULAR[section]} named {name!r} exists; "
                f"PUT /admin/v1/{section}/{name} replaces it",
                param="name",
            )
        return new_text, created

    return change


def delete_change(section: Section, name: str) -> Change:
    """The edit that removes ``name`` from ``section``; 404 when there is none."""

    def change(text: str) -> tuple[str, bool]:
        from gw.config.yaml_edit import delete_item  # noqa: PLC0415 - ruamel.yaml: see above

        new_text = delete_item(text, section, name)
        if new_text is None:
            raise missing(section, name)
        return new_text, True

    return change


def missing(section: Section, name: str) -> GatewayError:
    if section == "routes":
        return ModelNotFoundError(f"no route named {client_value(name)}", param="name")
    return EndpointNotFoundError(f"no policy named {client_value(name)}", param="name")


def reload_status(reloads: ConfigReloads | None) -> dict[str, Any] | None:
    if reloads is None:
        return None
    status = reloads.status
    return {
        "path": status.path,
        "error": status.error,
        "error_at": status.error_at,
        "applied_at": status.applied_at,
        "reloads": status.reloads,
        "failures": status.failures,
    }


def config_handlers(services: ServerServices) -> list[HTTPRouteHandler]:
    """The read, write and reload handlers above."""
    api = AdminApi(services)
    writer = ConfigWriter(services)
    handlers: list[HTTPRouteHandler] = [*_read_handlers(api)]
    for section in SECTIONS:
        handlers += _write_handlers(api, writer, section)

    @post("/admin/v1/reload", status_code=200, include_in_schema=False)
    async def reload(request: HttpRequest) -> Response[bytes]:
        try:
            ctx = await api.begin(request, "admin.reload", "admin:config")
        except RequestFailedError as refused:
            return openai_error_response(refused.error, refused.trace)
        if services.reloader is None:
            return api.fail(ctx, ConflictError("this gateway does not reload its config"))
        applied = await services.reloader.reload("admin")
        body = {
            "revision": services.snapshot().revision,
            "applied": applied is not None,
            "status": reload_status(services.reloader),
        }
        return api.answer(ctx, body)

    return [*handlers, reload]


def _read_handlers(api: AdminApi) -> list[HTTPRouteHandler]:
    services = api.services

    @get("/admin/v1/config", include_in_schema=False)
    async def config(request: HttpRequest) -> Response[bytes]:
        try:
            ctx = await api.begin(request, "admin.config")
        except RequestFailedError as refused:
            return openai_error_response(refused.error, refused.trace)
        snapshot = ctx.snapshot
        body = {
            "revision": snapshot.revision,
            "source": snapshot.source,
            "config": redacted(snapshot.config),
            "status": reload_status(services.reloader),
        }
        return api.answer(ctx, body)

    def listing(section: str) -> HTTPRouteHandler:
        @get(f"/admin/v1/{section}", include_in_schema=False, name=f"admin-{section}")
        async def items(request: HttpRequest) -> Response[bytes]:
            try:
                ctx = await api.begin(request, f"admin.{section}")
            except RequestFailedError as refused:
                return openai_error_response(refused.error, refused.trace)
            data = redacted(ctx.snapshot.config)
            return api.answer(ctx, {"revision": ctx.snapshot.revision, section: data[section]})

        return items

    return [config, *(listing(section) for section in ("providers", "routes", "policies"))]


def _write_handlers(
    api: AdminApi, writer: ConfigWriter, section: Section
) -> list[HTTPRouteHandler]:
    base = f"/admin/v1/{section}"

    async def upsert(request: HttpRequest, name: str | None, *, guarded: bool) -> Response[bytes]:
        try:
            ctx = await api.begin(request, f"admin.{section}.write", "admin:config")
        except RequestFailedError as refused:
            return openai_error_response(refused.error, refused.trace)
        try:
            if_match = parse_if_match(request.headers.get("if-match"))
            item = decode_item(await read_body(request, MAX_ITEM_BYTES), section, name)

            audit = audit_of(ctx, request.headers.get(REASON_HEADER))
            revision, created = await writer.write(
                section, if_match, upsert_change(section, item, guarded=guarded), audit
            )
        except GatewayError as error:
            return api.fail(ctx, error)
        body = {"revision": revision, "section": section, "name": item["name"], "created": created}
        return api.answer(ctx, body, 201 if created else 200)

    @put(f"{base}/{{name:str}}", status_code=200, include_in_schema=False, name=f"put-{section}")
    async def put_item(request: HttpRequest, name: str) -> Response[bytes]:
        return await upsert(request, name, guarded=False)

    @post(base, status_code=201, include_in_schema=False, name=f"post-{section}")
    async def post_item(request: HttpRequest) -> Response[bytes]:
        return await upsert(request, None, guarded=True)

    @delete(
        f"{base}/{{name:str}}", status_code=200, include_in_schema=False, name=f"delete-{section}"
    )
    async def delete_one(request: HttpRequest, name: str) -> Response[bytes]:
        try:
            ctx = await api.begin(request, f"admin.{section}.delete", "admin:config")
        except RequestFailedError as refused:
            return openai_error_response(refused.error, refused.trace)
        try:
            if_match = parse_if_match(request.headers.get("if-match"))

            audit = audit_of(ctx, request.headers.get(REASON_HEADER))
            revision, _ = await writer.write(section, if_match, delete_change(section, name), audit)
        except GatewayError as error:
            return api.fail(ctx, error)
        return api.answer(
            ctx, {"revision": revision, "section": section, "name": name, "deleted": True}
        )

    return [put_item, post_item, delete_one]
