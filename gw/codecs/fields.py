"""Typed reads from decoded client JSON; each failure names the field path in ``param``.

Strategy: the client body is decoded untyped once, then walked by hand. A typed msgspec
decode would be faster but its errors are text meant for humans; walking by hand lets every
error carry ``param`` (``messages[2].content[0].type``) and say what was expected, without
parsing error strings. Messages never quote a value the client sent (it may be prompt text).
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from gw.errors import InvalidRequestError

JSONObject = dict[str, Any]

_TYPE_NAMES: dict[type, str] = {
    str: "a string",
    bool: "a boolean",
    int: "an integer",
    float: "a number",
    list: "an array",
    dict: "an object",
}


_JSON = msgspec.json.Decoder()


def decode_object(body: bytes) -> JSONObject:
    """A client's request body, which must be a JSON object (decoded untyped, see above)."""
    try:
        raw = _JSON.decode(body)
    except msgspec.DecodeError:
        raise InvalidRequestError("the request body is not valid JSON") from None
    except RecursionError:
        raise InvalidRequestError("the request body nests JSON too deeply") from None
    if not isinstance(raw, dict):
        raise InvalidRequestError("the request body must be a JSON object")
    return raw


_TYPE_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,63}")


def is_type_name(kind: str) -> bool:
    """Whether a ``type`` value the client sent looks like a type name, and so may be
    quoted in a message: anything else may be prompt text, and messages go to traces."""
    return _TYPE_NAME.fullmatch(kind) is not None


def decimal(text: str, *, max_digits: int = 18) -> int | None:
    """``text`` as a non-negative integer when it is 1 to ``max_digits`` ASCII digits;
    None otherwise. (``str.isdigit`` takes "²" and other digits ``int`` refuses, and
    ``int`` refuses more than 4,300 digits: both were 500s.)"""
    if 0 < len(text) <= max_digits and text.isascii() and text.isdigit():
        return int(text)
    return None


def describe(value: object) -> str:
    """The JSON type of ``value`` in words, for error messages."""
    if value is None:
        return "null"
    return _TYPE_NAMES.get(type(value), "an unexpected value")


def invalid(param: str, expected: str, value: object = ...) -> InvalidRequestError:
    """The error for a bad ``param`` (raise it); ``value`` is described by its type only."""
    got = "" if value is ... else f", got {describe(value)}"
    return InvalidRequestError(f"`{param}` must be {expected}{got}", param=param)


def as_object(value: object, param: str) -> JSONObject:
    if not isinstance(value, dict):
        raise invalid(param, "an object", value)
    return value


def as_list(value: object, param: str) -> list[Any]:
    if not isinstance(value, list):
        raise invalid(param, "an array", value)
    return value


def as_str(value: object, param: str) -> str:
    if not isinstance(value, str):
        raise invalid(param, "a string", value)
    return value


def as_bool(value: object, param: str) -> bool:
    if not isinstance(value, bool):
        raise invalid(param, "a boolean", value)
    return value


def as_int(value: object, param: str) -> int:
    # bool is an int subclass in Python but not an integer in JSON.
    if isinstance(value, bool) or not isinstance(value, int):
        raise invalid(param, "an integer", value)
    return value


def as_number(value: object, param: str, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise invalid(param, "a number", value)
    if not low <= value <= high:
        raise invalid(param, f"between {low:g} and {high:g}")
    return float(value)


def required(obj: JSONObject, key: str, param: str) -> object:
    """``obj[key]``; missing and null are both an error."""
    value = obj.get(key)
    if value is None:
        raise InvalidRequestError(f"`{param}` is required", param=param)
    return value


def optional_str(obj: JSONObject, key: str, param: str) -> str | None:
    value = obj.get(key)
    return None if value is None else as_str(value, param)


def optional_bool(obj: JSONObject, key: str, param: str) -> bool | None:
    value = obj.get(key)
    return None if value is None else as_bool(value, param)
