"""The mock's embeddings: deterministic unit vectors, sized by ``dimensions``, failing on cue."""

from __future__ import annotations

import array
import asyncio
import math

import pytest

from gw.adapters.mock import DEFAULT_EMBEDDING_DIMENSIONS, MockUpstream, mock_embedding
from gw.config.schema import MockOptions, ProviderConfig
from gw.errors import InvalidRequestError, OverloadedError, UpstreamError
from gw.ir import EmbeddingInput, EmbeddingRequest, EmbeddingResponse, Usage
from gw.ports import AttemptTimeouts, EmbeddingCall, EmbeddingUpstream

PROVIDER = ProviderConfig(name="mock", kind="mock")


def embed(
    *inputs: EmbeddingInput, dimensions: int | None = None, options: MockOptions | None = None
) -> EmbeddingResponse:
    call = EmbeddingCall(
        request_id="req-1",
        provider=PROVIDER,
        request=EmbeddingRequest(model="mock-emb", inputs=inputs, dimensions=dimensions),
        account=None,
        timeouts=AttemptTimeouts(connect=1.0, read=1.0),
    )
    return asyncio.run(MockUpstream(options).embed(call))


def test_the_mock_is_an_embedding_upstream() -> None:
    assert isinstance(MockUpstream(None), EmbeddingUpstream)


def test_unit_vectors_of_the_default_size_with_usage() -> None:
    response = embed("hello world", (1, 2, 3))
    assert response.model == "mock-emb"
    assert [len(vector) for vector in response.vectors] == [DEFAULT_EMBEDDING_DIMENSIONS] * 2
    for vector in response.vectors:
        assert math.fsum(value * value for value in vector) == pytest.approx(1.0, abs=1e-6)
        assert tuple(array.array("f", vector)) == vector  # float32 values exactly
    assert response.usage == Usage(input_tokens=3 + 3)  # 11 characters -> 3, 3 token ids


def test_the_same_input_always_gets_the_same_vector_and_others_differ() -> None:
    first = embed("a", "b", dimensions=32).vectors
    again = embed("b", "a", dimensions=32).vectors
    assert first == again[::-1]
    assert first[0] != first[1]
    assert mock_embedding("12", 8) != mock_embedding((12,), 8)
    assert len(embed("a", dimensions=3).vectors[0]) == 3


def test_too_many_dimensions_is_refused() -> None:
    with pytest.raises(InvalidRequestError) as caught:
        embed("a", dimensions=100_000)
    assert caught.value.param == "dimensions"


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        (MockOptions(fail_status=500), UpstreamError),
        (MockOptions(fail_code="overloaded"), OverloadedError),
        (MockOptions(failure_rate=1.0), UpstreamError),
    ],
)
def test_fail_options_apply_as_for_chat(options: MockOptions, expected: type[Exception]) -> None:
    with pytest.raises(expected):
        embed("a", options=options)
