"""Reading what a Gemini client sends as Google's servers read it: protobuf's JSON mapping.

Google parses request bodies as protobuf messages, so a field may arrive under its
lowerCamelCase JSON name or its original snake_case name, and google-genai sends both
(``mimeType`` and ``mime_type``, ``thinkingBudget`` and ``thinking_budget``, ``any_of``
inside a schema); an integer may arrive as a whole float (``"topK": 3.0``) or, for 64-bit
fields, as a decimal string. ``message`` reads one message level with its field names in
camelCase; values below it (a function's ``args``, a property's name, an embedded JSON
Schema) are left as sent.
"""

from __future__ import annotations

from gw.codecs.fields import JSONObject, as_object, decimal, invalid


def camel(name: str) -> str:
    """``thinking_budget`` -> ``thinkingBudget``; a camelCase name is returned as it is."""
    if "_" not in name:
        return name
    head, *rest = name.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)


def message(value: object, param: str) -> JSONObject:
    """The object at ``param`` with its field names in camelCase (one level)."""
    obj = as_object(value, param)
    if not any("_" in key for key in obj):
        return obj
    return {camel(key): item for key, item in obj.items()}


def integer(value: object, param: str) -> int:
    """A protobuf integer: a JSON integer, a whole float, or a decimal string."""
    if isinstance(value, bool):
        raise invalid(param, "an integer", value)
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        number = decimal(value.removeprefix("-"))
        if number is not None:
            return -number if value.startswith("-") else number
    raise invalid(param, "an integer", value)
