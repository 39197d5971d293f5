"""Embeddings through Gemini's ``batchEmbedContents``: one request per input, in order.

Request: ``{"requests": [{"model": "models/M", "content": {"parts": [{"text": T}]},
"outputDimensionality": N}]}``; answer: ``{"embeddings": [{"values": [...]}]}`` in the same
order, with ``usageMetadata.promptTokenCount`` when the API reports it. A call takes at
most ``MAX_BATCH`` inputs, so larger requests go out in several. Gemini embeds text only:
token-id inputs are refused (``native_feature_unsupported``), never detokenised.
"""

from __future__ import annotations

import urllib.parse

import msgspec

from gw.codecs.gemini.upstream_request import API_VERSION
from gw.errors import NativeFeatureUnsupportedError, UpstreamError
from gw.ir import EmbeddingRequest, EmbeddingResponse, Usage


class _Embedding(msgspec.Struct):
    values: tuple[float, ...]


class _UsageIn(msgspec.Struct, rename="camel"):
    prompt_token_count: int = 0


class _Answer(msgspec.Struct, rename="camel"):
    embeddings: list[_Embedding] = []
    usage_metadata: _UsageIn | None = None


_DECODER = msgspec.json.Decoder(_Answer)
MAX_BATCH = 100  # batchEmbedContents refuses more requests than this in one call
_ENCODER = msgspec.json.Encoder()


def batches(request: EmbeddingRequest) -> list[EmbeddingRequest]:
    """``request`` cut into requests of at most ``MAX_BATCH`` inputs, in order."""
    return [
        msgspec.structs.replace(request, inputs=request.inputs[start : start + MAX_BATCH])
        for start in range(0, len(request.inputs), MAX_BATCH)
    ]


def join_answers(answers: list[EmbeddingResponse], *, model: str) -> EmbeddingResponse:
    """The answers to ``batches`` as one; usage is known only if every batch reported it."""
    usages = [answer.usage for answer in answers]
    known = [usage for usage in usages if usage is not None]
    return EmbeddingResponse(
        model=model,
        vectors=tuple(vector for answer in answers for vector in answer.vectors),
        usage=Usage(input_tokens=sum(u.input_tokens for u in known))
        if len(known) == len(usages)
        else None,
    )


def embeddings_path(model: str) -> str:
    """The path under the base URL; ``model`` may carry its ``models/`` prefix."""
    name = model.removeprefix("models/")
    return f"/{API_VERSION}/models/{urllib.parse.quote(name, safe='')}:batchEmbedContents"


def encode_embeddings_request(request: EmbeddingRequest) -> bytes:
    model = f"models/{request.model.removeprefix('models/')}"
    requests: list[dict[str, object]] = []
    for position, text in enumerate(request.inputs):
        if not isinstance(text, str):
            raise NativeFeatureUnsupportedError(
                f"input[{position}] is token ids, and Gemini embeds text only; send text",
                param=f"input[{position}]",
            )
        one: dict[str, object] = {"model": model, "content": {"parts": [{"text": text}]}}
        if request.dimensions is not None:
            one["outputDimensionality"] = request.dimensions
        requests.append(one)
    return _ENCODER.encode({"requests": requests})


def decode_embeddings_response(body: bytes, *, model: str) -> EmbeddingResponse:
    try:
        answer = _DECODER.decode(body)
    except (msgspec.DecodeError, msgspec.ValidationError):
        raise UpstreamError(
            "upstream sent an embeddings answer gw cannot read", blame="upstream"
        ) from None
    usage = answer.usage_metadata
    return EmbeddingResponse(
        model=model,
        vectors=tuple(embedding.values for embedding in answer.embeddings),
        usage=None if usage is None else Usage(input_tokens=usage.prompt_token_count),
    )
