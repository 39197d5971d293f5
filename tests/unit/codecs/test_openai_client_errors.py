"""encode_error: OpenAI's error shape, with a type for every gw error code."""

from __future__ import annotations

import json

import httpx2
import openai
import pytest

from gw.codecs.openai_chat import ERROR_TYPES, encode_error
from gw.errors import ALL_ERRORS, GatewayError, InvalidRequestError, RateLimitedError


def test_every_gw_error_code_has_an_openai_type() -> None:
    assert {cls.code for cls in ALL_ERRORS} <= set(ERROR_TYPES)


@pytest.mark.parametrize("cls", ALL_ERRORS, ids=lambda cls: cls.code)
def test_error_body_shape(cls: type[GatewayError]) -> None:
    raw = encode_error(cls("went wrong", param="messages[0]"), gw_block={"request_id": "r1"})
    assert json.loads(raw) == {
        "error": {
            "message": "went wrong",
            "type": ERROR_TYPES[cls.code],
            "code": cls.code,
            "param": "messages[0]",
        },
        "gw": {"request_id": "r1"},
    }


def test_types_follow_status() -> None:
    assert ERROR_TYPES["invalid_request"] == "invalid_request_error"
    assert ERROR_TYPES["authentication_failed"] == "authentication_error"
    assert ERROR_TYPES["permission_denied"] == "permission_error"
    assert ERROR_TYPES["model_not_found"] == "not_found_error"
    assert ERROR_TYPES["rate_limited"] == "rate_limit_error"
    assert ERROR_TYPES["upstream_error"] == "server_error"


def test_unknown_code_falls_back_by_status() -> None:
    class TeapotError(GatewayError):
        code = "teapot"
        status = 418

    assert json.loads(encode_error(TeapotError("x"), gw_block={}))["error"]["type"] == (
        "invalid_request_error"
    )


def test_sdk_reads_code_type_and_param() -> None:
    raw = encode_error(InvalidRequestError("bad", param="model"), gw_block={"request_id": "r"})

    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(400, content=raw, headers={"content-type": "application/json"})

    client = openai.OpenAI(
        api_key="t",
        base_url="http://gw.test/v1",
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
    )
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    assert (caught.value.code, caught.value.type, caught.value.param) == (
        "invalid_request",
        "invalid_request_error",
        "model",
    )


def test_retry_after_is_not_part_of_the_body() -> None:
    raw = encode_error(RateLimitedError("slow down", retry_after=3), gw_block={})
    assert "retry" not in raw.decode()
