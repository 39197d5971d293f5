"""The OpenAI embeddings codec, both directions: every rejection names its param."""

from __future__ import annotations

import array
import base64
import json
from typing import Any

import msgspec
import pytest

from gw.codecs.openai_chat import (
    decode_embeddings_request,
    decode_upstream_embeddings_response,
    encode_embeddings_response,
    encode_upstream_embeddings_request,
    requested_encoding,
)
from gw.errors import GatewayError, InvalidRequestError, RateLimitedError, UpstreamError
from gw.ir import EmbeddingRequest, EmbeddingResponse, Usage


def decode(**body: Any) -> EmbeddingRequest:
    return decode_embeddings_request(json.dumps({"model": "emb", **body}).encode())


def float32(values: list[float]) -> tuple[float, ...]:
    return tuple(array.array("f", values))


# --- client request ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "inputs"),
    [
        ("hello", ("hello",)),
        (["a", "bb"], ("a", "bb")),
        ([1, 2, 3], ((1, 2, 3),)),
        ([[1, 2], [0]], ((1, 2), (0,))),
        (["x"] * 2048, ("x",) * 2048),
    ],
)
def test_every_input_shape_openai_accepts(value: Any, inputs: tuple[Any, ...]) -> None:
    request = decode(input=value)
    assert request.model == "emb"
    assert request.inputs == inputs
    assert (request.dimensions, request.user, request.extensions) == (None, None, {})


def test_optional_fields_and_unknown_keys() -> None:
    request = decode(input="x", dimensions=256, user="u-1", encoding_format="base64", vendor=1)
    assert (request.dimensions, request.user) == (256, "u-1")
    assert request.extensions == {"openai": {"encoding_format": "base64", "vendor": 1}}
    assert requested_encoding(request) == "base64"
    assert requested_encoding(decode(input="x", encoding_format="float")) == "float"
    assert requested_encoding(decode(input="x")) == "float"


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"input": "x", "model": None}, "model"),
        ({"input": "x", "model": 7}, "model"),
        ({"input": "x", "model": ""}, "model"),
        ({}, "input"),
        ({"input": None}, "input"),
        ({"input": ""}, "input"),
        ({"input": 5}, "input"),
        ({"input": {"text": "x"}}, "input"),
        ({"input": []}, "input"),
        ({"input": ["x"] * 2049}, "input"),
        ({"input": [1] * 2049}, "input"),
        ({"input": ["a", ""]}, "input[1]"),
        ({"input": ["a", 3]}, "input[1]"),
        ({"input": [1, "a"]}, "input[1]"),
        ({"input": [1, -2]}, "input[1]"),
        ({"input": [1, 2.5]}, "input[1]"),
        ({"input": [1, True]}, "input[1]"),
        ({"input": [[1], []]}, "input[1]"),
        ({"input": [[1], "a"]}, "input[1]"),
        ({"input": [[1], [2, -1]]}, "input[1][1]"),
        ({"input": [[1], [2, "3"]]}, "input[1][1]"),
        ({"input": [True]}, "input[0]"),
        ({"input": [None]}, "input[0]"),
        ({"input": [1.5]}, "input[0]"),
        ({"input": "x", "encoding_format": "int8"}, "encoding_format"),
        ({"input": "x", "encoding_format": 1}, "encoding_format"),
        ({"input": "x", "dimensions": 0}, "dimensions"),
        ({"input": "x", "dimensions": "9"}, "dimensions"),
        ({"input": "x", "dimensions": 1.0}, "dimensions"),
        ({"input": "x", "dimensions": True}, "dimensions"),
        ({"input": "x", "user": 5}, "user"),
    ],
)
def test_rejections_name_the_param(body: dict[str, Any], param: str) -> None:
    payload = {"model": "emb", **body}
    with pytest.raises(InvalidRequestError) as caught:
        decode_embeddings_request(json.dumps(payload).encode())
    assert caught.value.param == param
    assert caught.value.status == 400


@pytest.mark.parametrize("body", [b"not json", b"[1, 2]", b'"input"', b"[" * 100_000])
def test_unreadable_bodies(body: bytes) -> None:
    with pytest.raises(InvalidRequestError):
        decode_embeddings_request(body)


def test_rejection_never_quotes_the_input() -> None:
    with pytest.raises(InvalidRequestError) as caught:
        decode(input=["secret text", ""])
    assert "secret" not in caught.value.message


# --- client response -----------------------------------------------------------------------

RESPONSE = EmbeddingResponse(
    model="text-embedding-3-small",
    vectors=(float32([0.5, -0.25, 1e-3]), float32([0.0, 1.0, -1.0])),
    usage=Usage(input_tokens=7),
)


def test_float_response_is_openai_s_list_shape() -> None:
    body = json.loads(encode_embeddings_response(RESPONSE, model="emb-1", encoding_format="float"))
    assert body == {
        "object": "list",
        "data": [
            {"object": "embedding", "index": 0, "embedding": list(RESPONSE.vectors[0])},
            {"object": "embedding", "index": 1, "embedding": list(RESPONSE.vectors[1])},
        ],
        "model": "emb-1",
        "usage": {"prompt_tokens": 7, "total_tokens": 7},
    }
    assert list(body) == ["object", "data", "model", "usage"]


def test_base64_response_is_little_endian_float32() -> None:
    body = json.loads(encode_embeddings_response(RESPONSE, model="m", encoding_format="base64"))
    for item, vector in zip(body["data"], RESPONSE.vectors, strict=True):
        raw = base64.b64decode(item["embedding"])
        assert raw == b"".join(array.array("f", [v]).tobytes() for v in vector)
        assert array.array("f", raw).tolist() == list(vector)
    assert base64.b64decode(body["data"][1]["embedding"])[4:8] == b"\x00\x00\x80\x3f"  # 1.0f


def test_unknown_usage_is_null() -> None:
    response = msgspec.structs.replace(RESPONSE, usage=None)
    body = json.loads(encode_embeddings_response(response, model="m", encoding_format="float"))
    assert body["usage"] is None


# --- upstream request ----------------------------------------------------------------------


def test_upstream_request_always_asks_for_floats() -> None:
    request = decode(
        input=["a", "b"], encoding_format="base64", dimensions=64, user="u", vendor={"k": 1}
    )
    body = json.loads(encode_upstream_embeddings_request(request, model="target-emb"))
    assert body == {
        "model": "target-emb",
        "input": ["a", "b"],
        "encoding_format": "float",
        "dimensions": 64,
        "user": "u",
        "vendor": {"k": 1},
    }


def test_upstream_request_token_arrays_and_protected_keys() -> None:
    request = EmbeddingRequest(
        model="route",
        inputs=((1, 2), (3,)),
        extensions={"openai": {"model": "evil", "input": "evil", "encoding_format": "base64"}},
    )
    body = json.loads(encode_upstream_embeddings_request(request, model="m"))
    assert body == {"model": "m", "input": [[1, 2], [3]], "encoding_format": "float"}


# --- upstream response ---------------------------------------------------------------------


def upstream_body(data: list[Any], **extra: Any) -> bytes:
    return json.dumps({"object": "list", "data": data, "model": "emb-v1", **extra}).encode()


def test_upstream_response_floats_and_usage() -> None:
    body = upstream_body(
        [{"object": "embedding", "index": 0, "embedding": [0.5, -1, 2e-3]}],
        usage={"prompt_tokens": 9, "total_tokens": 9},
    )
    response = decode_upstream_embeddings_response(body)
    assert response == EmbeddingResponse(
        model="emb-v1", vectors=((0.5, -1.0, 2e-3),), usage=Usage(input_tokens=9)
    )


def test_upstream_response_is_put_in_index_order_and_reads_base64() -> None:
    packed = base64.b64encode(array.array("f", [0.25, -0.5]).tobytes()).decode()
    body = upstream_body(
        [
            {"object": "embedding", "index": 1, "embedding": [1.0, 2.0]},
            {"object": "embedding", "index": 0, "embedding": packed},
        ]
    )
    response = decode_upstream_embeddings_response(body)
    assert response.vectors == ((0.25, -0.5), (1.0, 2.0))
    assert response.usage is None


def test_upstream_response_without_indexes_keeps_positions() -> None:
    body = upstream_body([{"embedding": [1.0]}, {"embedding": [2.0]}])
    assert decode_upstream_embeddings_response(body).vectors == ((1.0,), (2.0,))


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b'{"data": "x"}',
        upstream_body([]),
        upstream_body([{"index": 0}]),
        upstream_body([{"index": 0, "embedding": ["a"]}]),
        upstream_body([{"index": 0, "embedding": [1.0]}, {"index": 0, "embedding": [2.0]}]),
        upstream_body([{"index": 3, "embedding": [1.0]}]),
        upstream_body([{"index": 0, "embedding": "not base64!"}]),
        upstream_body([{"index": 0, "embedding": base64.b64encode(b"abc").decode()}]),
    ],
)
def test_malformed_upstream_responses_are_upstream_errors(body: bytes) -> None:
    with pytest.raises(UpstreamError) as caught:
        decode_upstream_embeddings_response(body)
    assert caught.value.blame == "upstream"
    assert "malformed" in caught.value.message


def test_an_error_object_with_status_200_is_mapped() -> None:
    body = json.dumps({"error": {"message": "slow down", "code": 429}}).encode()
    with pytest.raises(GatewayError) as caught:
        decode_upstream_embeddings_response(body)
    assert isinstance(caught.value, RateLimitedError)


def test_client_to_upstream_round_trip_keeps_every_input() -> None:
    request = decode(input=[[5, 6, 7], [8]])
    body = json.loads(encode_upstream_embeddings_request(request, model="m"))
    assert decode(input=body["input"]).inputs == request.inputs
