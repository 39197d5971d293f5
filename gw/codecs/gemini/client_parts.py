"""One part of a Gemini client's ``Content``: checked, and read where the IR has a form.

A part holds one kind of data (``text``, ``inlineData``, ``fileData``, ``functionCall``,
``functionResponse``, ``executableCode``, ``codeExecutionResult``) and may carry
modifiers (``thought``, ``thoughtSignature``, ``partMetadata``, ``mediaResolution``); a
part of only a signature is allowed (Gemini sends one with empty text). Any other key is
refused (``native_feature_unsupported``), and so is ``videoMetadata`` (a clip of a video,
which no other provider could honour). A user's media: ``inlineData`` -> ``ImagePart``
for ``image/*``, else ``FilePart``; ``fileData`` (``fileUri``) -> the same, by URL.
"""

from __future__ import annotations

import msgspec

from gw.codecs.fields import (
    JSONObject,
    as_str,
    is_type_name,
    optional_str,
    required,
)
from gw.codecs.gemini.proto_json import message
from gw.codecs.gemini.upstream_request import SKIP_SIGNATURE
from gw.errors import InvalidRequestError, NativeFeatureUnsupportedError
from gw.ir import ContentPart, FilePart, ImagePart, TextPart

_DATA = frozenset({"text", "inlineData", "fileData", "functionCall", "functionResponse"})
MODEL_NATIVE = frozenset({"executableCode", "codeExecutionResult", "inlineData", "fileData"})
_MODIFIERS = frozenset({"thought", "thoughtSignature", "partMetadata", "mediaResolution"})
_KNOWN = _DATA | MODEL_NATIVE | _MODIFIERS
_ENCODER = msgspec.json.Encoder()
_URL_SAFE = str.maketrans("-_", "+/")


def signature_in(value: str) -> str:
    """A signature a client sent back, in base64's standard alphabet (module docstring)."""
    return value if value == SKIP_SIGNATURE else value.translate(_URL_SAFE)


def check_part(value: object, param: str) -> JSONObject:
    """A part, checked to hold one known kind of data (or only a signature)."""
    part = message(value, param)
    for key in part:
        if key not in _KNOWN:
            if key == "videoMetadata":
                raise NativeFeatureUnsupportedError(
                    f"`{param}.videoMetadata` is not supported by gw; send the clip itself",
                    param=f"{param}.videoMetadata",
                )
            # Only a name-like key is quoted: anything else may be the client's text.
            shown = f"`{key}` parts are" if is_type_name(key) else "this part kind is"
            raise NativeFeatureUnsupportedError(
                f"`{param}`: {shown} not supported by gw", param=param
            )
    kinds = [key for key in part if key in _DATA or key in MODEL_NATIVE]
    if len(kinds) > 1:
        raise InvalidRequestError(
            f"`{param}` holds {' and '.join(kinds)}; a part holds one kind of data", param=param
        )
    if not kinds and "thoughtSignature" not in part:
        raise InvalidRequestError(f"`{param}` holds no data", param=param)
    return part


def data_kind(part: JSONObject) -> str | None:
    return next((key for key in part if key in _DATA or key in MODEL_NATIVE), None)


def part_signature(part: JSONObject, param: str) -> str | None:
    value = part.get("thoughtSignature")
    if value is None:
        return None
    return signature_in(as_str(value, f"{param}.thoughtSignature")) or None


def user_part(part: JSONObject, param: str) -> ContentPart | None:
    """A user's text or media part; None for empty text or a part of modifiers only."""
    if "text" in part:
        text = as_str(part["text"], f"{param}.text")
        return TextPart(text=text) if text else None
    if "inlineData" in part:
        return _inline(part["inlineData"], f"{param}.inlineData")
    if "fileData" in part:
        return _file(part["fileData"], f"{param}.fileData")
    return None


def _inline(value: object, where: str) -> ContentPart:
    blob = message(value, where)
    media_type = as_str(required(blob, "mimeType", f"{where}.mimeType"), f"{where}.mimeType")
    data = as_str(required(blob, "data", f"{where}.data"), f"{where}.data")
    if media_type.startswith("image/"):
        return ImagePart(data=data, media_type=media_type)
    return FilePart(data=data, media_type=media_type)


def _file(value: object, where: str) -> ContentPart:
    file = message(value, where)
    url = as_str(required(file, "fileUri", f"{where}.fileUri"), f"{where}.fileUri")
    kind = optional_str(file, "mimeType", f"{where}.mimeType")
    if kind is not None and kind.startswith("image/"):
        return ImagePart(url=url, media_type=kind)
    return FilePart(url=url, media_type=kind)


def result_text(response: JSONObject) -> str:
    """A ``functionResponse.response`` as the result's text (see the module docstring)."""
    if len(response) == 1:
        value = response.get("output", response.get("error"))
        if isinstance(value, str):
            return value
        if value is not None:
            return _ENCODER.encode(value).decode()
    return _ENCODER.encode(response).decode() if response else ""
