"""to_gemini_schema: JSON schema -> Gemini's OpenAPI subset, with a note for every loss."""

from __future__ import annotations

from typing import Any

import pytest

from gw.codecs.gemini.schema import SCHEMA_KEYWORDS, to_gemini_schema


def test_supported_keywords_pass_unchanged() -> None:
    schema: dict[str, Any] = {
        "type": "object",
        "title": "Query",
        "description": "A search",
        "properties": {
            "q": {
                "type": "string",
                "minLength": 1,
                "maxLength": 80,
                "pattern": "^[a-z]+$",
                "format": "date-time",
            },
            "n": {"type": "integer", "minimum": 1, "maximum": 10, "default": 3},
            "tags": {
                "type": "array",
                "items": {"type": "string", "enum": ["a", "b"]},
                "minItems": 1,
                "maxItems": 4,
            },
            "any": {"anyOf": [{"type": "string"}, {"type": "number"}]},
        },
        "required": ["q"],
        "propertyOrdering": ["q", "n", "tags", "any"],
        "minProperties": 1,
        "example": {"q": "cats"},
    }

    assert to_gemini_schema(schema, path="p") == (schema, (), ())


def test_refused_keywords_are_removed_and_noted_by_path() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "when": {"type": "string", "examples": ["today"]},
            "items": {"type": "array", "items": [{"type": "string"}], "uniqueItems": True},
        },
        "additionalProperties": False,
    }

    result, notes, _ = to_gemini_schema(schema, path="tools[0].parameters")

    assert result == {
        "type": "object",
        "properties": {"when": {"type": "string"}, "items": {"type": "array"}},
    }
    assert notes == (
        "tools[0].parameters.$schema: removed",
        "tools[0].parameters.properties.when.examples: removed",
        "tools[0].parameters.properties.items.items: removed",
        "tools[0].parameters.properties.items.uniqueItems: removed",
        "tools[0].parameters.additionalProperties: removed",
    )


@pytest.mark.parametrize(
    ("type_", "expected"),
    [
        (["string", "null"], {"type": "string", "nullable": True}),
        (["null", "integer"], {"type": "integer", "nullable": True}),
        (["string", "number"], {"anyOf": [{"type": "string"}, {"type": "number"}]}),
        (["null"], {"nullable": True}),
    ],
)
def test_type_lists(type_: list[str], expected: dict[str, Any]) -> None:
    assert to_gemini_schema({"type": type_}, path="p")[:2] == (expected, ())


def test_refs_are_inlined_and_definitions_dropped() -> None:
    schema = {
        "type": "object",
        "properties": {"home": {"$ref": "#/$defs/Address", "description": "Where they live"}},
        "$defs": {
            "Address": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "additionalProperties": False,
            }
        },
    }

    result, notes, _ = to_gemini_schema(schema, path="p")

    assert result == {
        "type": "object",
        "properties": {
            "home": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "description": "Where they live",
            }
        },
    }
    assert notes == ("p.properties.home.additionalProperties: removed",)


def test_recursive_and_unknown_refs_are_removed_and_noted() -> None:
    schema = {
        "type": "object",
        "properties": {
            "tree": {"$ref": "#/definitions/Node"},
            "other": {"$ref": "https://example.com/schema.json", "description": "kept"},
        },
        "definitions": {
            "Node": {"type": "object", "properties": {"child": {"$ref": "#/definitions/Node"}}}
        },
    }

    result, notes, _ = to_gemini_schema(schema, path="p")

    assert result["properties"] == {
        "tree": {"type": "object", "properties": {"child": {}}},
        "other": {"description": "kept"},
    }
    assert notes == (
        "p.properties.tree.properties.child: recursive $ref removed",
        "p.properties.other: unresolvable $ref removed",
    )


def test_one_of_const_and_enums() -> None:
    schema = {
        "type": "object",
        "properties": {
            "kind": {"const": "cat"},
            "size": {"type": "integer", "enum": [1, 2]},
            "pet": {"oneOf": [{"type": "string"}, {"type": "boolean"}]},
        },
    }

    result, notes, _ = to_gemini_schema(schema, path="p")

    assert result["properties"] == {
        "kind": {"enum": ["cat"], "type": "string"},
        "size": {"type": "integer"},
        "pet": {"anyOf": [{"type": "string"}, {"type": "boolean"}]},
    }
    assert notes == (
        "p.properties.size.enum: enum with non-string values removed",
        "p.properties.pet.oneOf: oneOf sent as anyOf",
    )


def test_boolean_subschema_is_removed() -> None:
    assert to_gemini_schema({"type": "object", "properties": {"x": True}}, path="p") == (
        {"type": "object", "properties": {"x": {}}},
        ("p.properties.x: boolean schema removed",),
        (),
    )


def test_properties_and_enums_without_a_type_get_theirs() -> None:
    """Gemini refuses properties on anything but OBJECT and enums on anything but STRING."""
    schema = {"properties": {"mode": {"enum": ["a", "b"]}, "n": {"type": "integer"}}}
    assert to_gemini_schema(schema, path="p").schema == {
        "properties": {"mode": {"enum": ["a", "b"], "type": "string"}, "n": {"type": "integer"}},
        "type": "object",
    }


def test_objects_without_properties_are_listed_as_free_form() -> None:
    schema = {
        "type": "object",
        "properties": {
            "headers": {"type": "object", "additionalProperties": {"type": "string"}},
            "body": {"type": "object"},
            "list": {"type": "array", "items": {"type": "object", "properties": {}}},
            "fine": {"type": "object", "properties": {"a": {"type": "string"}}},
        },
    }
    assert to_gemini_schema(schema, path="p").free_form == (
        "p.properties.headers",
        "p.properties.body",
        "p.properties.list.items",
    )
    assert to_gemini_schema({"type": "object"}, path="p").free_form == ("p",)


def test_the_input_is_not_mutated() -> None:
    schema = {"type": ["string", "null"], "additionalProperties": False}

    to_gemini_schema(schema, path="p")

    assert schema == {"type": ["string", "null"], "additionalProperties": False}


def test_keyword_table_is_the_documented_schema_message() -> None:
    # Fields of the v1beta Schema message; a change here is a wire change.
    assert len(SCHEMA_KEYWORDS) == 22
    assert {"additionalProperties", "$ref", "oneOf", "allOf", "const"}.isdisjoint(SCHEMA_KEYWORDS)
