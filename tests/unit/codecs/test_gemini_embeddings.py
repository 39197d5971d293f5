"""Gemini batchEmbedContents: the request gw sends and the answer it reads."""

from __future__ import annotations

import json

import pytest

from gw.codecs.gemini.embeddings import (
    batches,
    decode_embeddings_response,
    embeddings_path,
    encode_embeddings_request,
    join_answers,
)
from gw.errors import NativeFeatureUnsupportedError, UpstreamError
from gw.ir import EmbeddingRequest, EmbeddingResponse, Usage


def test_one_request_per_input_in_order_with_the_dimensions() -> None:
    request = EmbeddingRequest(model="gemini-embedding-001", inputs=("a", "b"), dimensions=256)
    body = json.loads(encode_embeddings_request(request))
    assert body == {
        "requests": [
            {
                "model": "models/gemini-embedding-001",
                "content": {"parts": [{"text": text}]},
                "outputDimensionality": 256,
            }
            for text in ("a", "b")
        ]
    }


def test_the_path_quotes_the_model_and_takes_a_models_prefix() -> None:
    assert embeddings_path("models/text embed") == (
        "/v1beta/models/text%20embed:batchEmbedContents"
    )
    assert embeddings_path("gemini-embedding-001") == (
        "/v1beta/models/gemini-embedding-001:batchEmbedContents"
    )


def test_token_ids_are_refused_by_name() -> None:
    request = EmbeddingRequest(model="m", inputs=("a", (1, 2, 3)))
    with pytest.raises(NativeFeatureUnsupportedError) as caught:
        encode_embeddings_request(request)
    assert caught.value.param == "input[1]"


def test_the_answer_keeps_order_and_usage_when_reported() -> None:
    body = json.dumps(
        {
            "embeddings": [{"values": [0.1, 0.2]}, {"values": [0.3, 0.4]}],
            "usageMetadata": {"promptTokenCount": 7},
        }
    ).encode()
    answer = decode_embeddings_response(body, model="m")
    assert answer.vectors == ((0.1, 0.2), (0.3, 0.4))
    assert answer.usage == Usage(input_tokens=7)
    bare = decode_embeddings_response(b'{"embeddings": [{"values": [1.0]}]}', model="m")
    assert bare.usage is None


def test_an_unreadable_answer_is_an_upstream_error() -> None:
    with pytest.raises(UpstreamError):
        decode_embeddings_response(b'{"embeddings": [{"values": "x"}]}', model="m")


def test_large_requests_go_out_in_batches_of_at_most_100_and_join_in_order() -> None:
    request = EmbeddingRequest(model="m", inputs=tuple(str(n) for n in range(250)))
    parts = batches(request)
    assert [len(part.inputs) for part in parts] == [100, 100, 50]
    assert [text for part in parts for text in part.inputs] == list(request.inputs)
    answers = [
        EmbeddingResponse(model="m", vectors=((float(n),),), usage=Usage(input_tokens=n))
        for n in (1, 2, 3)
    ]
    joined = join_answers(answers, model="m")
    assert joined.vectors == ((1.0,), (2.0,), (3.0,))
    assert joined.usage == Usage(input_tokens=6)
    partial = [answers[0], EmbeddingResponse(model="m", vectors=((4.0,),))]
    assert join_answers(partial, model="m").usage is None
