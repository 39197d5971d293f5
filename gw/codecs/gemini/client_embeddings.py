"""Gemini's embedding calls, client side: ``:embedContent`` and ``:batchEmbedContents``
(which google-genai's ``embed_content`` uses) <-> the IR's embeddings request and answer.

``embedContent`` is ``{"content": {"parts": [{"text"}]}, "taskType", "title",
"outputDimensionality"}`` and answers ``{"embedding": {"values": [...]}}``;
``batchEmbedContents`` is ``{"requests": [<that>, ...]}`` and answers
``{"embeddings": [{"values"}, ...]}`` in order. One content is one input: the text of its
parts, joined by newlines. ``outputDimensionality`` -> ``dimensions``; ``taskType`` and
``title`` have no IR field and go to ``extensions["gemini"]``. The IR holds one value of
each for the whole request, so a batch whose requests set different ones is refused, as
is a request naming another model than the path's. Gemini embeds text only: other parts
are refused (``native_feature_unsupported``).
"""

from __future__ import annotations

from typing import Any

import msgspec

from gw.codecs.fields import (
    JSONObject,
    as_list,
    as_str,
    invalid,
    required,
)
from gw.codecs.gemini.client_request import decode_json_object
from gw.codecs.gemini.proto_json import integer, message
from gw.errors import InvalidRequestError, NativeFeatureUnsupportedError
from gw.ir import EmbeddingRequest, EmbeddingResponse

MAX_BATCH = 100  # Gemini's limit on requests in one batchEmbedContents call
_SHARED = ("outputDimensionality", "taskType", "title")
_ENCODER = msgspec.json.Encoder()


def decode_embed_request(body: bytes, *, model: str) -> EmbeddingRequest:
    """An ``embedContent`` body for ``model`` (the path's)."""
    return _request([decode_json_object(body)], "", model=model)


def decode_batch_embed_request(body: bytes, *, model: str) -> EmbeddingRequest:
    """A ``batchEmbedContents`` body for ``model`` (the path's)."""
    obj = decode_json_object(body)
    requests = as_list(required(obj, "requests", "requests"), "requests")
    if not requests:
        raise invalid("requests", "a non-empty array")
    if len(requests) > MAX_BATCH:
        raise invalid("requests", f"an array of at most {MAX_BATCH} requests")
    items = [message(item, f"requests[{i}]") for i, item in enumerate(requests)]
    return _request(items, "requests", model=model)


def encode_embed_response(response: EmbeddingResponse) -> bytes:
    values = list(response.vectors[0]) if response.vectors else []
    return _ENCODER.encode({"embedding": {"values": values}})


def encode_batch_embed_response(response: EmbeddingResponse) -> bytes:
    body: JSONObject = {"embeddings": [{"values": list(vector)} for vector in response.vectors]}
    if response.usage is not None:
        tokens = response.usage.input_tokens
        body["usageMetadata"] = {"promptTokenCount": tokens, "totalTokenCount": tokens}
    return _ENCODER.encode(body)


def _request(items: list[JSONObject], prefix: str, *, model: str) -> EmbeddingRequest:
    inputs: list[str] = []
    shared: dict[str, Any] = {}
    for i, item in enumerate(items):
        where = f"{prefix}[{i}]" if prefix else ""
        _check_model(item, where, model)
        inputs.append(
            _text(required(item, "content", _at(where, "content")), _at(where, "content"))
        )
        for key in _SHARED:
            _share(shared, key, item.get(key), _at(where, key), batched=bool(prefix))
    dimensions = shared.pop("outputDimensionality", None)
    return EmbeddingRequest(
        model=model,
        inputs=tuple(inputs),
        dimensions=dimensions,
        extensions={"gemini": shared} if shared else {},
    )


def _at(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def _check_model(item: JSONObject, where: str, model: str) -> None:
    named = item.get("model")
    if named is None:
        return
    if as_str(named, _at(where, "model")).removeprefix("models/") != model:
        raise InvalidRequestError(
            f"`{_at(where, 'model')}` must name the model of the request's path",
            param=_at(where, "model"),
        )


def _share(shared: dict[str, Any], key: str, value: object, param: str, *, batched: bool) -> None:
    if value is None:
        return
    if key == "outputDimensionality":
        value = integer(value, param)
        if value < 1:
            raise invalid(param, "an integer >= 1")
    else:
        value = as_str(value, param)
    if key in shared and shared[key] != value:
        raise NativeFeatureUnsupportedError(
            f"`{param}` differs from an earlier request's; gw sends one {key} for the whole "
            "batch: send requests with different ones apart",
            param=param,
        )
    if not batched or key not in shared:
        shared[key] = value


def _text(value: object, param: str) -> str:
    content = message(value, param)
    parts = as_list(required(content, "parts", f"{param}.parts"), f"{param}.parts")
    texts: list[str] = []
    for j, item in enumerate(parts):
        where = f"{param}.parts[{j}]"
        part = message(item, where)
        if "text" not in part:
            raise NativeFeatureUnsupportedError(
                f"`{where}`: gw embeds text parts only", param=where
            )
        texts.append(as_str(part["text"], f"{where}.text"))
    if not texts:
        raise invalid(f"{param}.parts", "a non-empty array")
    return "\n".join(texts)
