"""Every 429 and 503 gw answers says when to come back (Retry-After): the wait gw knows,
rounded up, or DEFAULT_RETRY_AFTER_S; in each client's error shape. So does the 409 of an
Idempotency-Key whose first request is still being answered."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from litestar import Response

from gw.errors import ALL_ERRORS, DEFAULT_RETRY_AFTER_S, GatewayError
from gw.record import TraceRecord
from gw.server.responses import (
    anthropic_error_response,
    gemini_error_response,
    openai_error_response,
)

Render = Callable[[GatewayError, TraceRecord], Response[bytes]]
RENDERERS = [openai_error_response, anthropic_error_response, gemini_error_response]
WAITING = [cls for cls in ALL_ERRORS if cls.status in (429, 503)]
PASSING_CONFLICTS = [cls for cls in ALL_ERRORS if cls.status == 409 and cls.retryable]


def trace(status: int) -> TraceRecord:
    return TraceRecord(
        request_id="req-1",
        time=1.0,
        endpoint="/v1/chat/completions",
        requested_model="chat",
        stream=False,
        status=status,
        revision=1,
        latency_ms=1.0,
    )


def test_the_429s_and_503s_are_the_ones_expected() -> None:
    codes = {cls.code for cls in WAITING}
    assert codes == {"rate_limited", "concurrency_limited", "no_route", "overloaded"}


@pytest.mark.parametrize("render", RENDERERS)
@pytest.mark.parametrize("cls", WAITING)
def test_without_a_known_wait_the_default_is_said(render: Render, cls: type[GatewayError]) -> None:
    response = render(cls("busy"), trace(cls.status))
    assert response.status_code == cls.status
    assert response.headers["retry-after"] == str(DEFAULT_RETRY_AFTER_S)


@pytest.mark.parametrize(("wait", "said"), [(0.2, "1"), (1.4, "2"), (30.0, "30")])
def test_a_known_wait_is_said_rounded_up(wait: float, said: str) -> None:
    for cls in WAITING:
        response = openai_error_response(cls("busy", retry_after=wait), trace(cls.status))
        assert response.headers["retry-after"] == said


def test_a_key_in_use_says_when_to_come_back() -> None:
    assert [cls.code for cls in PASSING_CONFLICTS] == ["idempotency_key_in_use"]
    for render in RENDERERS:
        response = render(PASSING_CONFLICTS[0]("in use", retry_after=1), trace(409))
        assert response.headers["retry-after"] == "1"


def test_other_errors_carry_no_retry_after() -> None:
    for cls in ALL_ERRORS:
        if cls.status not in (429, 503) and cls not in PASSING_CONFLICTS:
            response = openai_error_response(cls("no", retry_after=5.0), trace(cls.status))
            assert "retry-after" not in response.headers
