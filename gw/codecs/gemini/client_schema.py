"""A Gemini ``Schema`` object (what a client sends as ``parameters`` or ``responseSchema``)
-> the JSON Schema the IR holds; ``gw/codecs/gemini/schema.py`` is the other direction.

Gemini's ``Schema`` is an OpenAPI 3.0 subset written as a protobuf message:

- ``type`` is an enum in upper case (``OBJECT``, ``STRING``, ...; lower case is accepted
  too) and becomes JSON Schema's lower-case name; ``TYPE_UNSPECIFIED`` means no type.
- ``nullable: true`` becomes ``type: [T, "null"]`` (``anyOf`` gets a ``{"type": "null"}``
  branch when there is no single type).
- Keywords may come in snake_case (``any_of``, ``min_items``: gw/codecs/gemini/proto_json.py);
  the int64 ones (``minItems``, ``maxLength``, ...) may arrive as JSON strings, as
  protobuf's JSON mapping writes 64-bit integers; they become integers.
- ``example`` becomes ``examples: [example]``; ``propertyOrdering`` is dropped (the
  ``properties`` object keeps the client's order).
- ``properties``, ``items`` and ``anyOf`` recurse; every other keyword is copied as it is.

A malformed schema raises ``InvalidRequestError`` naming the path of the bad keyword.
"""

from __future__ import annotations

from typing import Any

from gw.codecs.fields import JSONObject, as_list, as_object, invalid
from gw.codecs.gemini.proto_json import integer, message

_INT64_FIELDS = frozenset(
    {"minItems", "maxItems", "minProperties", "maxProperties", "minLength", "maxLength"}
)
_TYPES = frozenset({"string", "number", "integer", "boolean", "array", "object", "null"})
_DROPPED = frozenset({"propertyOrdering", "nullable", "type", "example"})


def json_schema(value: object, param: str) -> JSONObject:
    """The JSON Schema form of the Gemini ``Schema`` at ``param``."""
    schema = message(value, param)
    out: JSONObject = {}
    kind = _type(schema.get("type"), f"{param}.type")
    nullable = schema.get("nullable") is True
    if kind is not None:
        out["type"] = [kind, "null"] if nullable and kind != "null" else kind
    for key, item in schema.items():
        where = f"{param}.{key}"
        if key in _DROPPED:
            continue
        if key == "properties":
            properties = as_object(item, where)
            out[key] = {
                name: json_schema(sub, f"{where}.{name}") for name, sub in properties.items()
            }
        elif key == "items":
            out[key] = json_schema(item, where)
        elif key == "anyOf":
            branches = [
                json_schema(sub, f"{where}[{i}]") for i, sub in enumerate(as_list(item, where))
            ]
            if nullable and kind is None:
                branches.append({"type": "null"})
            out[key] = branches
        elif key in _INT64_FIELDS:
            out[key] = _int64(item, where)
        else:
            out[key] = item
    if "example" in schema:
        out["examples"] = [schema["example"]]
    return out


def _type(value: object, param: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise invalid(param, "a type name such as OBJECT or STRING", value)
    kind = value.lower()
    if kind == "type_unspecified":
        return None
    if kind not in _TYPES:
        raise invalid(param, "one of STRING, NUMBER, INTEGER, BOOLEAN, ARRAY, OBJECT, NULL")
    return kind


def _int64(value: Any, param: str) -> int:
    """An int64 field: a JSON integer, or its decimal string (protobuf's JSON form)."""
    number = integer(value, param)
    if number < 0:
        raise invalid(param, "a non-negative integer")
    return number
