"""error_from_upstream: recorded Gemini error answers, table precedence and retry delays."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gw.codecs.gemini.upstream_errors import (
    GOOGLE_STATUS_TABLE,
    MESSAGE_TABLE,
    REASON_TABLE,
    STATUS_CLASS_TABLE,
    STATUS_TABLE,
    GoogleError,
    classify,
    error_from_payload,
    error_from_upstream,
)
from gw.errors import ALL_ERRORS, PersistentUpstreamError, UpstreamAuthFailedError


def google(code: int, status: str, message: str, *details: dict[str, Any]) -> bytes:
    error: dict[str, Any] = {"code": code, "message": message, "status": status}
    if details:
        error["details"] = list(details)
    return json.dumps({"error": error}).encode()


RETRY_20S = {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "20s"}
BAD_KEY = {
    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
    "reason": "API_KEY_INVALID",
    "domain": "googleapis.com",
    "metadata": {"service": "generativelanguage.googleapis.com"},
}

# (name, status, body, headers, expected gw code, expected retry_after)
RECORDED: list[tuple[str, int, bytes, dict[str, str], str, float | None]] = [
    ("400 unknown field", 400, google(400, "INVALID_ARGUMENT", 'Invalid JSON payload received. Unknown name "foo": Cannot find field.'), {}, "invalid_request", None),
    ("400 API key not valid", 400, google(400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key.", BAD_KEY), {}, "upstream_auth_failed", None),
    ("400 input token limit", 400, google(400, "INVALID_ARGUMENT", "The input token count (3475108) exceeds the maximum number of tokens allowed (1048576)."), {}, "context_length_exceeded", None),
    ("400 free tier region", 400, google(400, "FAILED_PRECONDITION", "User location is not supported for the API use."), {}, "upstream_auth_failed", None),
    ("401 unauthenticated", 401, google(401, "UNAUTHENTICATED", "Request had invalid authentication credentials."), {}, "upstream_auth_failed", None),
    ("403 unregistered caller", 403, google(403, "PERMISSION_DENIED", "Method doesn't allow unregistered callers (callers without established identity)."), {}, "upstream_auth_failed", None),
    ("404 unknown model", 404, google(404, "NOT_FOUND", "models/gemini-9 is not found for API version v1beta, or is not supported for generateContent."), {}, "upstream_error", None),
    ("429 quota with RetryInfo", 429, google(429, "RESOURCE_EXHAUSTED", "You exceeded your current quota.", {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": []}, RETRY_20S), {}, "rate_limited", 20.0),
    ("429 header wins over RetryInfo", 429, google(429, "RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota).", RETRY_20S), {"Retry-After": "3"}, "rate_limited", 3.0),
    ("429 fractional delay", 429, google(429, "RESOURCE_EXHAUSTED", "quota", {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "46.723541104s"}), {}, "rate_limited", 46.723541104),
    ("500 internal", 500, google(500, "INTERNAL", "An internal error has occurred."), {}, "upstream_error", None),
    ("503 overloaded", 503, google(503, "UNAVAILABLE", "The model is overloaded. Please try again later."), {}, "overloaded", None),
    ("504 deadline", 504, google(504, "DEADLINE_EXCEEDED", "Deadline expired before operation could complete."), {}, "upstream_timeout", None),
    ("stream endpoint array shape", 429, b'[{"error": {"code": 429, "message": "x", "status": "RESOURCE_EXHAUSTED"}}]', {}, "rate_limited", None),
    ("html from a proxy", 502, b"<html>Bad Gateway</html>", {}, "upstream_error", None),
    ("empty 400", 400, b"", {}, "invalid_request", None),
    ("unknown 418", 418, b"{}", {}, "invalid_request", None),
]  # fmt: skip


@pytest.mark.parametrize("recorded", RECORDED, ids=[r[0] for r in RECORDED])
def test_recorded_answers(
    recorded: tuple[str, int, bytes, dict[str, str], str, float | None],
) -> None:
    name, status, body, headers, code, retry_after = recorded

    error = error_from_upstream(status, body, headers)

    assert error.code == code, name
    assert error.retry_after == retry_after
    assert error.blame == "upstream"
    assert error.upstream_status == status


def test_message_names_the_status_and_copies_the_upstream_words() -> None:
    error = error_from_upstream(404, google(404, "NOT_FOUND", "models/x is not found."), {})

    assert (
        error.message
        == "upstream answered 404 NOT_FOUND (the upstream does not know this model or endpoint)"
    )
    assert error.upstream_message == "models/x is not found."


def test_auth_errors_never_copy_the_upstream_words() -> None:
    error = error_from_upstream(
        400, google(400, "INVALID_ARGUMENT", "API key AIzaSyFAKE not valid.", BAD_KEY), {}
    )

    assert type(error) is UpstreamAuthFailedError
    assert error.upstream_message is None
    assert "AIza" not in error.client_message


def test_long_upstream_words_are_cut() -> None:
    error = error_from_upstream(400, google(400, "INVALID_ARGUMENT", "x " * 500), {})

    assert error.upstream_message is not None
    assert len(error.upstream_message) == 200


def test_error_in_a_200_stream_uses_its_code() -> None:
    error = error_from_payload(GoogleError(code=503, message="busy", status="UNAVAILABLE"))

    assert (error.code, error.upstream_status, error.message) == (
        "overloaded",
        200,
        "upstream sent an error UNAVAILABLE",
    )


@pytest.mark.parametrize("delay", ["soon", "-1s", "infs"])
def test_unreadable_retry_delays_are_ignored(delay: str) -> None:
    body = google(
        429,
        "RESOURCE_EXHAUSTED",
        "x",
        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay},
    )

    assert error_from_upstream(429, body, {}).retry_after is None


def test_precedence_reason_then_message_then_google_status_then_http() -> None:
    bad_key = GoogleError(
        status="INVALID_ARGUMENT",
        message="The input token count (9) exceeds the maximum number of tokens allowed (1).",
        details=[BAD_KEY],
    )
    too_long = GoogleError(
        status="INVALID_ARGUMENT",
        message="The input token count (9) exceeds the maximum number of tokens allowed (1).",
    )
    # The pattern is anchored: the sentence quoted inside another message does not count.
    quoted = GoogleError(
        status="INVALID_ARGUMENT",
        message="Bad: The input token count (9) exceeds the maximum number of tokens allowed (1).",
    )

    assert classify(400, bad_key).code == "upstream_auth_failed"
    assert classify(400, too_long).code == "context_length_exceeded"
    assert classify(400, quoted).code == "invalid_request"
    assert classify(500, GoogleError(status="UNAVAILABLE")).code == "overloaded"
    assert classify(503, None).code == "overloaded"
    assert classify(599, GoogleError(status="SOMETHING_NEW")).code == "upstream_error"


def test_every_table_entry_is_a_known_gw_error() -> None:
    classes = [
        *STATUS_TABLE.values(),
        *STATUS_CLASS_TABLE.values(),
        *GOOGLE_STATUS_TABLE.values(),
        *REASON_TABLE.values(),
    ]
    classes += [cls for _, _, cls in MESSAGE_TABLE]

    assert set(classes) <= {*ALL_ERRORS, PersistentUpstreamError}


def test_every_google_rpc_code_is_mapped() -> None:
    # google.rpc.Code, minus OK: a new code must be placed in the table on purpose.
    codes = {
        "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS",
        "PERMISSION_DENIED", "UNAUTHENTICATED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED",
        "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS",
    }  # fmt: skip

    assert codes - set(GOOGLE_STATUS_TABLE) == {
        "ALREADY_EXISTS"
    }  # 409: the HTTP table's upstream_error
