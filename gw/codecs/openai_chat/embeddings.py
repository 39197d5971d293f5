"""OpenAI's embeddings wire format (``POST /v1/embeddings``), both directions, sans I/O.

Client side: ``decode_embeddings_request`` (strict, like OpenAI: ``input`` is a non-empty
string, or a non-empty array of at most 2048 strings, token ids or token-id arrays) and
``encode_embeddings_response`` (float arrays, or base64 of little-endian float32 when the
client asked for ``encoding_format: base64``, which the OpenAI SDK does by default).
Upstream side: ``encode_upstream_embeddings_request`` always asks for floats, whatever the
client wants, so gw holds plain numbers and re-encodes for its own client;
``decode_upstream_embeddings_response`` reads floats or base64 all the same. Upstream
errors go through ``error_from_upstream`` like chat.
"""

from __future__ import annotations

import array
import base64
import sys
from typing import Annotated, Any, Literal

import msgspec

from gw.codecs.fields import (
    JSONObject,
    as_int,
    as_str,
    decode_object,
    invalid,
    optional_str,
    required,
)
from gw.codecs.openai_chat.upstream_errors import error_from_payload
from gw.errors import InvalidRequestError, PersistentUpstreamError
from gw.ir import EmbeddingInput, EmbeddingRequest, EmbeddingResponse, Usage

EncodingFormat = Literal["float", "base64"]

MAX_INPUTS = 2048  # OpenAI's maxItems for every array form of ``input``
_INPUT_SHAPES = "a string, an array of strings, an array of token ids or an array of token arrays"
_FORMATS: dict[object, EncodingFormat] = {"float": "float", "base64": "base64"}
# Keys read into IR fields; everything else lands in extensions["openai"].
_CONSUMED = frozenset({"model", "input", "encoding_format", "dimensions", "user"})
# Keys of extensions["openai"] that never reach the upstream: gw sets them itself (the
# client's encoding_format is kept there for its own answer).
_PROTECTED = _CONSUMED
_TOKENS = tuple[Annotated[int, msgspec.Meta(ge=0)], ...]
_ENCODER = msgspec.json.Encoder()


# --- client side ----------------------------------------------------------------------------


def decode_embeddings_request(body: bytes) -> EmbeddingRequest:
    """Parse a client embeddings request; ``InvalidRequestError`` names the bad ``param``.

    A valid ``encoding_format`` is kept in ``extensions["openai"]`` for the answer
    (``requested_encoding``); unknown keys go there too, for OpenAI-shaped upstreams.
    """
    obj = decode_object(body)
    model = as_str(required(obj, "model", "model"), "model")
    if not model:
        raise invalid("model", "a non-empty string")
    extensions = {
        key: value for key, value in obj.items() if key not in _CONSUMED and value is not None
    }
    encoding = obj.get("encoding_format")
    if encoding is not None:
        if encoding not in _FORMATS:
            raise invalid("encoding_format", "`float` or `base64`", encoding)
        extensions["encoding_format"] = encoding
    return EmbeddingRequest(
        model=model,
        inputs=_inputs(obj.get("input")),
        dimensions=_dimensions(obj.get("dimensions")),
        user=optional_str(obj, "user", "user"),
        extensions={"openai": extensions} if extensions else {},
    )


def requested_encoding(request: EmbeddingRequest) -> EncodingFormat:
    """The ``encoding_format`` the client asked for (``float`` when it named none)."""
    return _FORMATS.get(request.extensions.get("openai", {}).get("encoding_format"), "float")


def _inputs(value: object) -> tuple[EmbeddingInput, ...]:
    if value is None:
        raise InvalidRequestError("`input` is required", param="input")
    if isinstance(value, str):
        return (_text(value, "input"),)
    if not isinstance(value, list):
        raise invalid("input", _INPUT_SHAPES, value)
    if not value:
        raise invalid("input", "a non-empty array")
    if len(value) > MAX_INPUTS:
        raise invalid("input", f"an array of at most {MAX_INPUTS} items")
    first = value[0]
    if isinstance(first, str):
        return tuple(_text(item, f"input[{i}]") for i, item in enumerate(value))
    if isinstance(first, list):
        return tuple(_token_array(item, f"input[{i}]") for i, item in enumerate(value))
    if isinstance(first, int) and not isinstance(first, bool):
        return (_tokens(value, "input"),)
    raise invalid("input[0]", "a string, a token id or an array of token ids", first)


def _text(value: object, param: str) -> str:
    text = as_str(value, param)
    if not text:
        raise invalid(param, "a non-empty string")
    return text


def _token_array(value: object, param: str) -> tuple[int, ...]:
    if not isinstance(value, list):
        raise invalid(param, "an array of token ids", value)
    if not value:
        raise invalid(param, "a non-empty array of token ids")
    return _tokens(value, param)


def _tokens(items: list[Any], param: str) -> tuple[int, ...]:
    """Non-negative integers; checked in C first, walked only to name a bad item."""
    try:
        return msgspec.convert(items, _TOKENS)
    except msgspec.ValidationError:
        pass
    for i, item in enumerate(items):
        if as_int(item, f"{param}[{i}]") < 0:
            raise invalid(f"{param}[{i}]", "a non-negative integer (a token id)")
    raise AssertionError("unreachable: msgspec refused a valid token array")  # pragma: no cover


def _dimensions(value: object) -> int | None:
    if value is None:
        return None
    dimensions = as_int(value, "dimensions")
    if dimensions < 1:
        raise invalid("dimensions", "a positive integer")
    return dimensions


class _UsageOut(msgspec.Struct):
    prompt_tokens: int
    total_tokens: int


class _EmbeddingOut(msgspec.Struct):
    object: str
    index: int
    embedding: tuple[float, ...] | str


class _ListOut(msgspec.Struct):
    object: str
    data: list[_EmbeddingOut]
    model: str
    usage: _UsageOut | None


def encode_embeddings_response(
    response: EmbeddingResponse, *, model: str, encoding_format: EncodingFormat
) -> bytes:
    """The ``list`` body; ``model`` is the upstream model that answered. ``usage`` is null
    when unknown, as in gw's chat answers."""
    pack = _base64_float32 if encoding_format == "base64" else _as_is
    data = [
        _EmbeddingOut(object="embedding", index=index, embedding=pack(vector))
        for index, vector in enumerate(response.vectors)
    ]
    usage = response.usage
    body = _ListOut(
        object="list",
        data=data,
        model=model,
        usage=None
        if usage is None
        else _UsageOut(prompt_tokens=usage.input_tokens, total_tokens=usage.total_tokens),
    )
    return _ENCODER.encode(body)


def _as_is(vector: tuple[float, ...]) -> tuple[float, ...]:
    return vector


def _base64_float32(vector: tuple[float, ...]) -> str:
    packed = array.array("f", vector)
    if sys.byteorder == "big":  # the wire format is little-endian whatever the host is
        packed.byteswap()
    return base64.b64encode(packed.tobytes()).decode("ascii")


# --- upstream side --------------------------------------------------------------------------


def encode_upstream_embeddings_request(request: EmbeddingRequest, *, model: str) -> bytes:
    """The body for ``POST {base_url}/embeddings``: ``input`` always as an array, floats
    always asked for; the client's other OpenAI keys pass through."""
    body: JSONObject = {"model": model, "input": request.inputs, "encoding_format": "float"}
    if request.dimensions is not None:
        body["dimensions"] = request.dimensions
    if request.user is not None:
        body["user"] = request.user
    for key, value in request.extensions.get("openai", {}).items():
        if key not in _PROTECTED:
            body[key] = value
    return _ENCODER.encode(body)


class _UsageIn(msgspec.Struct):
    prompt_tokens: int | None = None


class _EmbeddingIn(msgspec.Struct):
    embedding: tuple[float, ...] | str
    index: int | None = None


class _ListIn(msgspec.Struct):
    data: list[_EmbeddingIn] | None = None
    model: str = ""
    usage: _UsageIn | None = None
    # Some compatible servers answer 200 with an error object instead of a list.
    error: object | None = None


_LIST_DECODER = msgspec.json.Decoder(_ListIn)


def decode_upstream_embeddings_response(body: bytes) -> EmbeddingResponse:
    """Parse an upstream ``list``; ``UpstreamError`` (or the mapped error) on failure.

    Vectors come back in ``index`` order (position order when a server sends no index).
    """
    try:
        answer = _LIST_DECODER.decode(body)
    except msgspec.ValidationError as exc:
        raise _malformed(str(exc)) from None
    except msgspec.DecodeError:
        raise _malformed("not JSON") from None
    if answer.error is not None:
        raise error_from_payload(answer.error)
    if not answer.data:
        raise _malformed("no data")
    return EmbeddingResponse(
        model=answer.model,
        vectors=_ordered_vectors(answer.data),
        usage=None
        if answer.usage is None or answer.usage.prompt_tokens is None
        else Usage(input_tokens=answer.usage.prompt_tokens),
    )


def _ordered_vectors(data: list[_EmbeddingIn]) -> tuple[tuple[float, ...], ...]:
    count = len(data)
    vectors: list[tuple[float, ...] | None] = [None] * count
    for position, item in enumerate(data):
        index = position if item.index is None else item.index
        if not 0 <= index < count or vectors[index] is not None:
            raise _malformed("the data indexes are not 0..n-1")
        vectors[index] = _floats(item.embedding)
    # Every slot is filled: count distinct indexes in range(count).
    return tuple(vector for vector in vectors if vector is not None)


def _floats(embedding: tuple[float, ...] | str) -> tuple[float, ...]:
    if not isinstance(embedding, str):
        return embedding
    try:
        raw = base64.b64decode(embedding, validate=True)
    except ValueError:
        raise _malformed("an embedding is neither numbers nor base64") from None
    if len(raw) % 4:
        raise _malformed("a base64 embedding is not a whole number of float32 values")
    packed = array.array("f", raw)
    if sys.byteorder == "big":
        packed.byteswap()
    return tuple(packed)


def _malformed(reason: str) -> PersistentUpstreamError:
    """The error for a body gw cannot read; ``reason`` never quotes the body."""
    return PersistentUpstreamError(
        f"upstream sent a malformed embeddings list: {reason}", blame="upstream"
    )
