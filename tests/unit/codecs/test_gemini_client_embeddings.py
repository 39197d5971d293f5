"""Gemini embeddings, client side: what google-genai's embed_content sends becomes the IR,
and the IR's vectors come back as it parses them."""

from __future__ import annotations

import json

import httpx
import pytest
from google.genai import types
from unit.codecs.gemini_sdk import SDK, answer

from gw.codecs.gemini.client_embeddings import (
    decode_batch_embed_request,
    decode_embed_request,
    encode_batch_embed_response,
    encode_embed_response,
)
from gw.errors import InvalidRequestError, NativeFeatureUnsupportedError
from gw.ir import EmbeddingRequest, EmbeddingResponse, Usage

VECTORS = ((0.5, -0.25), (1.0, 0.0))


def test_the_sdks_batch_becomes_one_request() -> None:
    sdk = SDK(lambda _: httpx.Response(200, json={"embeddings": [{"values": [0.0]}] * 2}))
    config = types.EmbedContentConfig(output_dimensionality=2, task_type="RETRIEVAL_QUERY")
    sdk.client.models.embed_content(model="text-embed", contents=["a", "b"], config=config)
    assert sdk.requests[-1].url.path == "/v1/models/text-embed:batchEmbedContents"
    request = decode_batch_embed_request(sdk.body, model="text-embed")
    assert request == EmbeddingRequest(
        model="text-embed",
        inputs=("a", "b"),
        dimensions=2,
        extensions={"gemini": {"taskType": "RETRIEVAL_QUERY"}},
    )


def test_the_sdk_parses_the_vectors() -> None:
    response = EmbeddingResponse(model="m", vectors=VECTORS, usage=Usage(input_tokens=3))
    sdk = answer(encode_batch_embed_response(response))
    parsed = sdk.client.models.embed_content(model="m", contents=["a", "b"])
    assert [e.values for e in parsed.embeddings or []] == [[0.5, -0.25], [1.0, 0.0]]


def test_embed_content_is_one_input() -> None:
    body = {"content": {"parts": [{"text": "a"}, {"text": "b"}]}, "title": "T"}
    request = decode_embed_request(json.dumps(body).encode(), model="m")
    assert request.inputs == ("a\nb",)
    assert request.extensions == {"gemini": {"title": "T"}}
    one = EmbeddingResponse(model="m", vectors=VECTORS[:1])
    assert json.loads(encode_embed_response(one)) == {"embedding": {"values": [0.5, -0.25]}}


@pytest.mark.parametrize(
    ("body", "error", "param"),
    [
        ({"requests": []}, InvalidRequestError, "requests"),
        (
            {"requests": [{"model": "models/other", "content": {"parts": [{"text": "a"}]}}]},
            InvalidRequestError,
            "requests[0].model",
        ),
        (
            {"requests": [{"content": {"parts": [{"inlineData": {}}]}}]},
            NativeFeatureUnsupportedError,
            "requests[0].content.parts[0]",
        ),
        (
            {
                "requests": [
                    {"content": {"parts": [{"text": "a"}]}, "outputDimensionality": 2},
                    {"content": {"parts": [{"text": "b"}]}, "outputDimensionality": 3},
                ]
            },
            NativeFeatureUnsupportedError,
            "requests[1].outputDimensionality",
        ),
    ],
)
def test_bad_batches_are_named(body: object, error: type[Exception], param: str) -> None:
    with pytest.raises(error) as caught:
        decode_batch_embed_request(json.dumps(body).encode(), model="m")
    assert getattr(caught.value, "param", None) == param
