"""Kill switches over the admin API (admin scope, OpenAI error shape)::

    GET  /admin/v1/switches   {"revision", "switches": [{"provider", "route", "target",
                               "state", "reason", "by", "at", "says"}, ...]}
    POST /admin/v1/switches   {"provider" | "route" | "target" | "route" + "target",
                               "state", "reason"}
        -> {"revision", "changed", "switch": {...} | null}, header ``x-gw-revision``

``state`` is ``disabled``, ``breaker_open`` or ``breaker_closed`` to set a switch (a
``reason`` is required: it is what clients and ``gw explain`` are told), or ``enabled``
(ends a ``disabled`` switch) or ``breaker_auto`` (ends a forced breaker). A switch is a
config write like any other (gw/server/admin/config_api.py): the ``switches:`` list of the
config file is rewritten, validated, applied atomically as a new revision, and audited
with the caller's key id and the reason; ``by`` and ``at`` in the switch say the same. A
write that changes nothing (ending a switch that is not set) makes no revision:
``changed`` is false. ``If-Match`` makes it conditional, as for every config write.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Final

import msgspec
from litestar import Response, get, post
from litestar.handlers import HTTPRouteHandler

from gw.config.control_schema import SwitchConfig
from gw.config.switches import switch_sentence
from gw.errors import GatewayError, InvalidRequestError
from gw.execution.request_context import RequestFailedError
from gw.server.admin.config_api import (
    AdminApi,
    ConfigWriter,
    audit_of,
    parse_if_match,
)
from gw.server.body import read_body
from gw.server.responses import openai_error_response
from gw.server.services import HttpRequest, ServerServices
from gw.telemetry.explain import iso_utc

if TYPE_CHECKING:
    from gw.server.admin.config_api import Change

SECTION: Final = "switches"
SUBJECT_FIELDS: Final = ("provider", "route", "target")
SETTING: Final = frozenset({"disabled", "breaker_open", "breaker_closed"})
ENDING: Final = {"enabled": "disabled", "breaker_auto": "breaker"}
MAX_BODY_BYTES: Final = 16 * 1024


class SwitchRequest(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    provider: str | None = None
    route: str | None = None
    target: str | None = None
    state: str
    reason: str | None = None


def switch_json(switch: SwitchConfig) -> dict[str, Any]:
    return {**msgspec.structs.asdict(switch), "says": switch_sentence(switch)}


def decode_switch(body: bytes) -> SwitchRequest:
    try:
        request = msgspec.json.decode(body, type=SwitchRequest)
    except msgspec.ValidationError as error:
        raise InvalidRequestError(f"a switch: {error}") from None
    except msgspec.DecodeError:
        raise InvalidRequestError("the body must be a JSON switch object") from None
    if request.state not in SETTING and request.state not in ENDING:
        states = ", ".join([*sorted(SETTING), *ENDING])
        raise InvalidRequestError(f"state must be one of {states}", param="state")
    if request.state in SETTING and not (request.reason or "").strip():
        raise InvalidRequestError(
            "say why: a switch needs a reason (clients and gw explain are told it)",
            param="reason",
        )
    return request


def switch_change(request: SwitchRequest, by: str, reason: str | None) -> Change:
    """The edit of ``switches:`` that sets or ends the requested switch; its flag says
    whether the list changed."""
    subject = {name: getattr(request, name) for name in SUBJECT_FIELDS}
    breaker = request.state.startswith("breaker")

    def same_subject(item: dict[str, Any]) -> bool:
        ours = {name: item.get(name) for name in SUBJECT_FIELDS} == subject
        return ours and str(item.get("state", "disabled")).startswith("breaker") == breaker

    def change(text: str) -> tuple[str, bool]:
        from gw.config.yaml_edit import (  # noqa: PLC0415 - ruamel.yaml: loaded with the first write
            replace_list,
            section_items,
        )

        items = section_items(text, SECTION)
        kept = [item for item in items if not same_subject(item)]
        if request.state in SETTING:
            entry = {name: value for name, value in subject.items() if value is not None}
            stamp = iso_utc(time.time())
            kept.append(entry | {"state": request.state, "reason": reason, "by": by, "at": stamp})
        elif len(kept) == len(items):
            return text, False
        return replace_list(text, SECTION, kept), True

    return change


def switches_handlers(services: ServerServices) -> list[HTTPRouteHandler]:
    api = AdminApi(services)
    writer = ConfigWriter(services)

    @get("/admin/v1/switches", include_in_schema=False)
    async def list_switches(request: HttpRequest) -> Response[bytes]:
        try:
            ctx = await api.begin(request, "admin.switches")
        except RequestFailedError as refused:
            return openai_error_response(refused.error, refused.trace)
        switches = [switch_json(switch) for switch in ctx.snapshot.config.switches]
        return api.answer(ctx, {"revision": ctx.snapshot.revision, "switches": switches})

    @post("/admin/v1/switches", status_code=200, include_in_schema=False)
    async def set_switch(request: HttpRequest) -> Response[bytes]:
        try:
            ctx = await api.begin(request, "admin.switches.write", "admin:config")
        except RequestFailedError as refused:
            return openai_error_response(refused.error, refused.trace)
        try:
            if_match = parse_if_match(request.headers.get("if-match"))
            wanted = decode_switch(await read_body(request, MAX_BODY_BYTES))
            audit = audit_of(ctx, wanted.reason)
            change = switch_change(wanted, audit.actor or "", audit.reason)
            revision, changed = await writer.write(SECTION, if_match, change, audit)
        except GatewayError as error:
            return api.fail(ctx, error)
        current = next(
            (
                switch_json(switch)
                for switch in services.snapshot().config.switches
                if all(getattr(switch, name) == getattr(wanted, name) for name in SUBJECT_FIELDS)
                and switch.state == wanted.state
            ),
            None,
        )
        return api.answer(ctx, {"revision": revision, "changed": changed, "switch": current})

    return [list_switches, set_switch]
