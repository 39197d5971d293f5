"""Which upstream account holds a response gw gave, for ``previous_response_id``.

gw stores no prompts, so a Responses request that continues an earlier one can only be
served by the upstream that stored it: a ``kind: openai_responses`` provider, reached with
the same account, and sent its own response id. That is read from the earlier request's
trace (its answering attempt records the provider, account, wire format and the
upstream's response id, never content).

Traces reach the database off the hot path, a few milliseconds after the answer, and an
agent sends its next turn at once: so the links of recent answers are also kept in memory
(``RecentResponses``, a trace consumer, bounded); older ones are read from the trace store
(gw/server/inference/previous_response.py).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Final

import msgspec

from gw.record import AttemptRecord, TraceRecord

RESPONSES_ENDPOINT: Final = "responses"
MAX_RECENT: Final = 10_000


class ResponseLink(msgspec.Struct, frozen=True, kw_only=True):
    """Who asked for a response, and which upstream account made it, under which id."""

    request_id: str
    tenant: str | None
    key_id: str | None
    provider: str
    account: str | None
    provider_kind: str | None
    upstream_response_id: str | None


def link_of(trace: TraceRecord) -> ResponseLink | None:
    """The link of a Responses request that was answered; None for any other trace."""
    if trace.endpoint != RESPONSES_ENDPOINT or not trace.answered:
        return None
    attempt = _answering(trace.attempts)
    if attempt is None:
        return None
    return ResponseLink(
        request_id=trace.request_id,
        tenant=trace.tenant,
        key_id=trace.key_id,
        provider=attempt.provider,
        account=attempt.account,
        provider_kind=attempt.provider_kind,
        upstream_response_id=attempt.upstream_response_id,
    )


def _answering(attempts: tuple[AttemptRecord, ...]) -> AttemptRecord | None:
    """The attempt whose answer the client got (a committed stream's is its last)."""
    for attempt in reversed(attempts):
        if attempt.outcome == "answered" or attempt.ttft_ms is not None:
            return attempt
    return None


class RecentResponses:
    """A ``TraceSink``: the links of the last ``MAX_RECENT`` answered Responses requests."""

    def __init__(self, capacity: int = MAX_RECENT) -> None:
        self._capacity = capacity
        self._links: OrderedDict[str, ResponseLink] = OrderedDict()

    def submit(self, trace: TraceRecord) -> None:
        if trace.endpoint != RESPONSES_ENDPOINT:
            return
        link = link_of(trace)
        if link is None:
            return
        self._links[trace.request_id] = link
        if len(self._links) > self._capacity:
            self._links.popitem(last=False)

    def get(self, request_id: str) -> ResponseLink | None:
        return self._links.get(request_id)
