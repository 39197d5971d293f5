"""``previous_response_id``: forwarded to the upstream account that holds that response,
refused everywhere else.

gw keeps no conversation. A Responses request that continues an earlier answer can be
served only by the ``kind: openai_responses`` provider that made it (OpenAI stores it with
``store``), with the same account (a stored response belongs to one project), and under
the upstream's own id. So the id the client holds (``resp_`` + gw's request id) is looked
up (gw/telemetry/response_links.py), the request is pinned to that provider and account
(``RequestContext.pin``: the gateway keeps the chain on the provider, the engine on the
account), and the id in ``extensions["openai_responses"]`` becomes the upstream's.

Refused: an id gw never gave, or gave another API key (404 ``response_not_found``); a
response another kind of upstream made, which kept nothing (400 ``invalid_request``), each
naming the way out: send the whole conversation as ``input``.
"""

from __future__ import annotations

from typing import Final, Protocol

import msgspec

from gw.errors import InvalidRequestError, ResponseNotFoundError
from gw.execution.accounts import AccountPin
from gw.execution.request_context import RequestContext
from gw.ir import ChatRequest
from gw.record import TraceRecord, is_response_id, request_id_of
from gw.store.migrations import StoreError
from gw.telemetry.response_links import RecentResponses, ResponseLink, link_of

FORMAT: Final = "openai_responses"
PARAM: Final = "previous_response_id"
NATIVE_KIND: Final = "openai_responses"
WAY_OUT: Final = (
    "send the whole conversation as input instead (gw stores no prompts), or use a route "
    "whose target is a kind: openai_responses provider, with store: true"
)


class TraceReader(Protocol):
    async def get_trace(self, request_id: str) -> TraceRecord | None: ...


class ResponseLinks:
    """Finds a response's link: recent answers first (in memory), then the trace store."""

    def __init__(self, recent: RecentResponses, traces: TraceReader) -> None:
        self.recent = recent
        self._traces = traces

    async def find(self, request_id: str) -> ResponseLink | None:
        """The link of exactly ``request_id`` (never a prefix match), or None."""
        link = self.recent.get(request_id)
        if link is not None:
            return link
        try:
            trace = await self._traces.get_trace(request_id)
        except StoreError:  # an ambiguous prefix, an unreadable row: not this exact id
            return None
        if trace is None or trace.request_id != request_id:
            return None
        return link_of(trace)


async def pin_previous(
    ctx: RequestContext, chat: ChatRequest, links: ResponseLinks | None
) -> tuple[RequestContext, ChatRequest]:
    """``ctx`` pinned and ``chat`` carrying the upstream's id, when ``chat`` continues a
    response; unchanged otherwise. Raises the errors the module docstring names."""
    kept = chat.extensions.get(FORMAT)
    given = None if kept is None else kept.get(PARAM)
    if given is None:
        return ctx, chat
    if not isinstance(given, str) or not is_response_id(given):
        raise InvalidRequestError(
            f"{PARAM} must be the id of a response gw gave (resp_ and 28 hex digits)",
            param=PARAM,
        )
    link = None if links is None else await links.find(request_id_of(given))
    if link is None or (link.tenant, link.key_id) != (ctx.tenant, ctx.key_id):
        raise ResponseNotFoundError(
            f"{PARAM}: gw holds no response {given} for this caller (never answered, made "
            "with another API key, or pruned with its trace after state.trace_max_age); " + WAY_OUT,
            param=PARAM,
        )
    provider = ctx.snapshot.providers.get(link.provider)
    if link.provider_kind != NATIVE_KIND or not link.upstream_response_id:
        raise InvalidRequestError(
            f"{PARAM}: {given} was answered by provider {link.provider} (kind "
            f"{link.provider_kind}), which keeps no conversation; " + WAY_OUT,
            param=PARAM,
        )
    accounts = {account.name for account in ctx.snapshot.accounts.get(link.provider, ())}
    if provider is None or provider.kind != NATIVE_KIND or link.account not in accounts:
        raise InvalidRequestError(
            f"{PARAM}: {given} is held by provider {link.provider} (account {link.account}), "
            "which the config no longer defines as it was; " + WAY_OUT,
            param=PARAM,
        )
    pin = AccountPin(provider=link.provider, account=str(link.account))
    extensions = {**chat.extensions, FORMAT: {**(kept or {}), PARAM: link.upstream_response_id}}
    return (
        msgspec.structs.replace(ctx, pin=pin),
        msgspec.structs.replace(chat, extensions=extensions),
    )
