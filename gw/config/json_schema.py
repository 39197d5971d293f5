"""A JSON Schema (draft 2020-12) of gw.yaml, for editors to check and complete the file:
what ``gw config schema`` prints.

Built from the config Structs (gw/config/schema.py) and their descriptions and value rules
(gw/config/field_docs.py), so it says what the loader does: unknown keys, wrong types,
values outside an enum or a bound are refused, and every config gw loads validates. What
it cannot say (names that must exist or be unique) stays with ``gw config validate``.

Every section is written inline where it is used, with no ``$ref``: some editors read
draft-07 only, which ignores a description beside a ``$ref``.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from gw.config.field_docs import SECTIONS, Field
from gw.config.schema import Config, OtlpConfig, ProviderConfig
from gw.config.units import DURATION_PATTERN, SIZE_PATTERN, ByteSize, Duration, encode_unit
from gw.config.validate import NEEDS_BASE_URL

DIALECT = "https://json-schema.org/draft/2020-12/schema"

JSON = dict[str, Any]
# "server.host" -> ("GW_HOST", "--host"): what else sets a field, for its description.
AlsoSetBy = Mapping[str, Sequence[str]]


class MissingDocError(LookupError):
    """A config field or section with no entry in gw/config/field_docs.py."""


def config_json_schema(also_set_by: AlsoSetBy | None = None) -> JSON:
    """The schema of a whole gw.yaml."""
    root = _struct(Config, "", also_set_by or {})
    return {"$schema": DIALECT, "title": "gw.yaml", **root}


def field_doc(struct: type, name: str) -> Field:
    """The docs of ``struct``'s field ``name``; MissingDocError names what to add."""
    section = SECTIONS.get(struct)
    if section is None:
        raise MissingDocError(f"gw/config/field_docs/ has no section for {struct.__name__}")
    field = section.fields.get(name)
    if field is None or not field.description.strip():
        raise MissingDocError(
            f"gw/config/field_docs/ has no description for {struct.__name__}.{name}"
        )
    return field


def struct_of(declared: Any) -> type[msgspec.Struct] | None:
    """The Struct a field holds (itself, in a list, or or-null), else None."""
    for option in (declared, *typing.get_args(declared)):
        if isinstance(option, type) and issubclass(option, msgspec.Struct):
            return option
        if typing.get_origin(option) is tuple:
            return struct_of(typing.get_args(option)[0])
    return None


def default_value(info: msgspec.structs.FieldInfo) -> Any:
    """A field's default as JSON data (units as text), or NODEFAULT when it is required."""
    if info.default is not msgspec.NODEFAULT:
        default = info.default
    elif info.default_factory is not msgspec.NODEFAULT:
        default = info.default_factory()
    else:
        return msgspec.NODEFAULT
    return msgspec.json.decode(msgspec.json.encode(default, enc_hook=encode_unit))


def _struct(struct: type[msgspec.Struct], path: str | None, also_set_by: AlsoSetBy) -> JSON:
    """``path``: the dotted path of the section (``server``), "" for the root, None inside
    a list (where no GW_* variable or flag reaches)."""
    section = SECTIONS.get(struct)
    if section is None:
        raise MissingDocError(f"gw/config/field_docs/ has no section for {struct.__name__}")
    properties: JSON = {}
    required = []
    for info in msgspec.structs.fields(struct):
        doc = field_doc(struct, info.name)
        here = None if path is None else f"{path}.{info.name}".lstrip(".")
        node = _value(info.type, doc, here, also_set_by)
        description = _description(info, doc, here, also_set_by)
        # VS Code and the YAML language server render markdownDescription (backticks as
        # code) on hover; other tools read description.
        prop: JSON = {"description": description, "markdownDescription": description}
        prop.update(
            (k, v) for k, v in node.items() if k not in ("description", "markdownDescription")
        )
        default = default_value(info)
        if default is msgspec.NODEFAULT:
            required.append(info.name)
        elif not isinstance(info.default, msgspec.Struct):  # a section: its fields say
            prop["default"] = default
        properties[info.name] = prop
    schema: JSON = {"type": "object", "description": section.summary, "properties": properties}
    if required:
        schema["required"] = required
    schema["additionalProperties"] = False
    schema.update(_conditions(struct))
    return schema


def _description(
    info: msgspec.structs.FieldInfo, doc: Field, path: str | None, also_set_by: AlsoSetBy
) -> str:
    """The field's text, then its section's summary when it holds one (an editor shows
    only the property's), then what else sets it."""
    parts = [doc.description]
    inner = struct_of(info.type)
    if inner is not None and inner in SECTIONS:
        summary = SECTIONS[inner].summary
        if summary != doc.description:
            parts.append(summary)
    if path is not None and (others := also_set_by.get(path)):
        parts.append(f"Also set by {', '.join(f'`{name}`' for name in others)}.")
    return "\n\n".join(parts)


def split_optional(declared: Any) -> tuple[Any, bool]:
    """``X | None`` -> ``(X, True)``; any other type -> ``(it, False)``."""
    if typing.get_origin(declared) not in (typing.Union, types.UnionType):
        return declared, False
    options = [arg for arg in typing.get_args(declared) if arg is not type(None)]
    if len(options) != 1:
        raise TypeError(f"only X | None unions are described, not {declared!r}")
    return options[0], True


def _value(declared: Any, doc: Field, path: str | None, also_set_by: AlsoSetBy) -> JSON:
    inner, nullable = split_optional(declared)
    node = _plain(inner, doc, path, also_set_by)
    if not nullable:
        return node
    if "enum" in node:
        return {**node, "enum": [*node["enum"], None]}
    return {"anyOf": [node, {"type": "null"}]}


def _plain(declared: Any, doc: Field, path: str | None, also_set_by: AlsoSetBy) -> JSON:
    origin = typing.get_origin(declared)
    if origin is typing.Literal:
        return {"enum": list(typing.get_args(declared))}
    if origin is tuple:
        item = typing.get_args(declared)[0]
        array: JSON = {"type": "array", "items": _value(item, doc, None, also_set_by)}
        if doc.min_items is not None:
            array["minItems"] = doc.min_items
        return array
    if origin is dict:
        values = _value(typing.get_args(declared)[1], doc, None, also_set_by)
        return {"type": "object", "additionalProperties": values}
    if isinstance(declared, type) and issubclass(declared, msgspec.Struct):
        return _struct(declared, path, also_set_by)
    if declared is Any:
        return {}  # any YAML value (a plugin's settings): gw does not read it
    return _scalar(declared, doc, path)


def _scalar(declared: Any, doc: Field, path: str | None) -> JSON:
    if declared is Duration:
        number = _bounded({"type": "number", "minimum": 0}, doc)
        positive = doc.above is not None
        pattern = _nonzero(DURATION_PATTERN) if positive else DURATION_PATTERN
        said = _DURATION_SAID + (", longer than 0s" if positive else "")
        return {"anyOf": [_text(pattern, said), number]}
    if declared is ByteSize:
        number = {"type": "integer", "minimum": 1}
        return {"anyOf": [_text(_nonzero(SIZE_PATTERN), _SIZE_SAID), number]}
    if declared is str:
        if doc.choices is not None:
            return {"enum": list(doc.choices)}
        if doc.text is not None:
            return _text(doc.text.pattern, doc.text.reads.replace("`", ""))
        return {"type": "string"}
    names = {bool: "boolean", int: "integer", float: "number"}
    if declared not in names:
        raise TypeError(f"{path}: no JSON Schema for {declared!r}")
    return _bounded({"type": names[declared]}, doc)


_DURATION_SAID = "a duration such as 150ms, 2s, 10m, 1h or 7d (a bare number is seconds)"
_SIZE_SAID = "a size such as 512KiB or 8MiB (a bare number is bytes), above 0"


def _text(pattern: str, said: str) -> JSON:
    """A string ``pattern``; ``patternErrorMessage`` (read by the YAML language server and
    VS Code, ignored by other validators) says what it wants instead of showing the regex."""
    return {"type": "string", "pattern": pattern, "patternErrorMessage": f"Expected {said}."}


def _nonzero(pattern: str) -> str:
    """``pattern`` (anchored with ^) that also needs a digit other than 0: the loader
    refuses a size of 0 bytes, and a positive duration of 0s (ECMA-262 and Python both read
    the lookahead)."""
    return "^(?=[^1-9]*[1-9])" + pattern.removeprefix("^")


def _bounded(number: JSON, doc: Field) -> JSON:
    if doc.minimum is not None:
        number["minimum"] = doc.minimum
    if doc.above is not None:
        number.pop("minimum", None)
        number["exclusiveMinimum"] = doc.above
    if doc.maximum is not None:
        number["maximum"] = doc.maximum
    return number


def _conditions(struct: type) -> JSON:
    """Rules across a section's fields that validate.py checks and a schema can state."""
    if struct is ProviderConfig:
        # openai_compatible and azure_openai need a base_url, theirs or every account's.
        has_url = {"required": ["base_url"], "properties": {"base_url": {"type": "string"}}}
        accounts_have_urls = {
            "required": ["accounts"],
            "properties": {"accounts": {"minItems": 1, "items": has_url}},
        }
        needs_url = {"properties": {"kind": {"enum": sorted(NEEDS_BASE_URL)}}, "required": ["kind"]}
        return {"if": needs_url, "then": {"anyOf": [has_url, accounts_have_urls]}}
    if struct is OtlpConfig:
        enabled = {"properties": {"enabled": {"const": True}}, "required": ["enabled"]}
        endpoint = {"properties": {"endpoint": {"type": "string", "minLength": 1}}}
        return {"if": enabled, "then": {"required": ["endpoint"], **endpoint}}
    return {}
