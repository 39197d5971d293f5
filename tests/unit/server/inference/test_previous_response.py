"""previous_response_id: found through the trace of the response it names (recent ones in
memory, older ones in the store), forwarded pinned to the account that made it as the
upstream's own id, and refused, naming the way out, for anything else."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from gw.config import compile_snapshot, load_config
from gw.errors import GatewayError
from gw.execution.accounts import AccountPin
from gw.execution.request_context import RequestContext
from gw.ir import ChatRequest, TextPart, UserMessage
from gw.record import AttemptRecord, TraceRecord
from gw.server.inference.previous_response import ResponseLinks, pin_previous
from gw.store.trace_reads import AmbiguousRequestIdError
from gw.telemetry.response_links import RecentResponses, link_of

CONFIG = """
providers:
  - name: native
    kind: openai_responses
    base_url: http://127.0.0.1:1/v1
    accounts: [{name: one, api_key: env:ONE}, {name: two, api_key: env:TWO}]
  - {name: chat, kind: openai_compatible, base_url: "http://127.0.0.1:2/v1"}
routes:
  - name: r
    targets: [{provider: native, model: gpt-x}, {provider: chat, model: llama}]
"""
SNAPSHOT = compile_snapshot(load_config(CONFIG, "t.yaml"), revision=1, source="t")


def trace(
    request_id: str = "req_0000000000010000000000000000",
    *,
    provider: str = "native",
    kind: str = "openai_responses",
    account: str = "two",
    upstream_id: str | None = "resp_upstream",
    endpoint: str = "responses",
    key_id: str | None = "key_a",
    tenant: str | None = "team",
) -> TraceRecord:
    attempts = (
        AttemptRecord(
            number=1, provider=provider, model="m", account="one", started_at=0.0,
            latency_ms=1.0, ttft_ms=None, outcome="next_account", provider_kind=kind,
        ),
        AttemptRecord(
            number=2, provider=provider, model="m", account=account, started_at=0.0,
            latency_ms=1.0, ttft_ms=None, outcome="answered", provider_kind=kind,
            upstream_response_id=upstream_id,
        ),
    )  # fmt: skip
    return TraceRecord(
        request_id=request_id, time=0.0, endpoint=endpoint, requested_model="r",
        stream=False, status=200, revision=1, latency_ms=2.0, provider=provider, model="m",
        attempts=attempts, tenant=tenant, key_id=key_id,
    )  # fmt: skip


class Store:
    def __init__(self, *traces: TraceRecord, error: Exception | None = None) -> None:
        self.traces = {t.request_id: t for t in traces}
        self.error = error
        self.asked: list[str] = []

    async def get_trace(self, request_id: str) -> TraceRecord | None:
        self.asked.append(request_id)
        if self.error is not None:
            raise self.error
        return self.traces.get(request_id)


def ctx(key_id: str | None = "key_a", tenant: str | None = "team") -> RequestContext:
    return RequestContext(
        request_id="req_now", snapshot=SNAPSHOT, endpoint="responses",
        started_at=0.0, started_mono=0.0, key_id=key_id, tenant=tenant,
    )  # fmt: skip


def chat(**kept: Any) -> ChatRequest:
    return ChatRequest(
        model="r",
        messages=(UserMessage(content=(TextPart(text="and then?"),)),),
        extensions={"openai_responses": {"store": True, **kept}} if kept else {},
    )


def pin(links: ResponseLinks | None, request: ChatRequest, **who: Any) -> Any:
    return asyncio.run(pin_previous(ctx(**who), request, links))


def test_a_request_without_previous_response_id_is_untouched() -> None:
    request = chat()
    assert pin(None, request) == (ctx(), request)


def test_the_id_is_forwarded_as_the_upstreams_pinned_to_the_account_that_made_it() -> None:
    recent = RecentResponses()
    recent.submit(trace())
    store = Store()
    pinned_ctx, pinned = pin(
        ResponseLinks(recent, store), chat(previous_response_id="resp_0000000000010000000000000000")
    )
    assert pinned_ctx.pin == AccountPin(provider="native", account="two")
    assert pinned.extensions["openai_responses"] == {
        "store": True,
        "previous_response_id": "resp_upstream",
    }
    assert store.asked == []  # a recent answer is found in memory


def test_an_older_response_is_found_in_the_trace_store_by_its_exact_id() -> None:
    store = Store(trace())
    links = ResponseLinks(RecentResponses(), store)
    pinned_ctx, _ = pin(links, chat(previous_response_id="resp_0000000000010000000000000000"))
    assert pinned_ctx.pin == AccountPin(provider="native", account="two")
    assert store.asked == ["req_0000000000010000000000000000"]
    ambiguous = ResponseLinks(RecentResponses(), Store(error=AmbiguousRequestIdError("two")))
    with pytest.raises(GatewayError) as refused:
        pin(ambiguous, chat(previous_response_id="resp_0000000000010000000000000000"))
    assert refused.value.code == "response_not_found"


@pytest.mark.parametrize(
    ("who", "stored"),
    [
        ({"key_id": "key_b"}, trace()),  # another API key's response
        ({}, trace(request_id="req_other")),  # never answered here
        ({}, trace(endpoint="chat.completions")),  # not a Responses answer
    ],
)
def test_an_id_this_caller_does_not_hold_is_not_found(
    who: dict[str, Any], stored: TraceRecord
) -> None:
    links = ResponseLinks(RecentResponses(), Store(stored))
    with pytest.raises(GatewayError) as refused:
        pin(links, chat(previous_response_id="resp_0000000000010000000000000000"), **who)
    assert (refused.value.status, refused.value.code) == (404, "response_not_found")
    assert refused.value.param == "previous_response_id"
    assert "send the whole conversation as input" in refused.value.message


def test_a_response_a_chat_upstream_made_is_refused_with_the_way_out() -> None:
    links = ResponseLinks(
        RecentResponses(), Store(trace(provider="chat", kind="openai_compatible"))
    )
    with pytest.raises(GatewayError) as refused:
        pin(links, chat(previous_response_id="resp_0000000000010000000000000000"))
    error = refused.value
    assert (error.status, error.code, error.param) == (
        400,
        "invalid_request",
        "previous_response_id",
    )
    assert "keeps no conversation" in error.message
    assert "kind: openai_responses provider, with store" in error.message


@pytest.mark.parametrize(
    "stored",
    [trace(account="gone"), trace(provider="renamed"), trace(upstream_id=None)],
)
def test_a_holder_the_config_no_longer_has_or_an_unknown_upstream_id_is_refused(
    stored: TraceRecord,
) -> None:
    links = ResponseLinks(RecentResponses(), Store(stored))
    with pytest.raises(GatewayError) as refused:
        pin(links, chat(previous_response_id="resp_0000000000010000000000000000"))
    assert refused.value.code == "invalid_request"


@pytest.mark.parametrize("given", [42, "chatcmpl-1", ""])
def test_an_id_gw_never_gives_is_a_bad_request(given: object) -> None:
    with pytest.raises(GatewayError) as refused:
        pin(None, chat(previous_response_id=given))
    assert (refused.value.code, refused.value.param) == ("invalid_request", "previous_response_id")


def test_recent_links_are_bounded_and_only_answered_responses_count() -> None:
    recent = RecentResponses(capacity=2)
    for n in range(3):
        recent.submit(trace(request_id=f"req_{n}"))
    recent.submit(trace(request_id="req_chat", endpoint="chat.completions"))
    assert [recent.get(f"req_{n}") is not None for n in range(3)] == [False, True, True]
    assert recent.get("req_chat") is None
    unanswered = TraceRecord(
        request_id="req_x", time=0.0, endpoint="responses", requested_model="r", stream=False,
        status=502, revision=1, latency_ms=1.0, error_code="upstream_error",
    )  # fmt: skip
    assert link_of(unanswered) is None
