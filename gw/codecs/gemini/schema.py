"""A tool's JSON schema -> the Gemini ``Schema`` object (a subset of OpenAPI 3.0), with notes.

Gemini parses ``FunctionDeclaration.parameters`` and ``GenerationConfig.responseSchema``
as a protobuf message: a key it does not know fails the whole request with 400 ("Unknown
name ... Cannot find field"). So every keyword outside ``SCHEMA_KEYWORDS`` is removed, and
each removal is recorded as a note naming where it was (``...properties.when.format``
never appears: only keyword names and property paths, never values).

Strategy, keyword by keyword:

- ``type: [T, "null"]`` becomes ``type: T`` plus ``nullable: true``; several non-null types
  become ``anyOf`` of one schema per type.
- ``$ref`` into the root's ``$defs`` / ``definitions`` is inlined; a reference that points
  back into itself (a recursive schema) or anywhere else is removed and noted.
- ``oneOf`` is sent as ``anyOf`` (Gemini has no exclusive union; noted, as it is looser).
- ``const`` with a string becomes a one-value ``enum``; an ``enum`` holding non-strings is
  removed (Gemini's ``enum`` is a list of strings) and noted.
- ``default`` and ``example`` are values, copied untouched; everything else recurses.
- A schema with ``properties`` but no ``type`` gets ``type: object``, one with ``enum`` but
  no type ``type: string``: Gemini refuses properties and enums on any other type.

The API also takes plain JSON Schema (``parametersJsonSchema`` and ``responseJsonSchema``,
Gemini 2.5 and newer only); gw sends the ``Schema`` subset, which every Gemini model
accepts, and says what it dropped. One shape has no form in that subset: an object with no
``properties`` (a free-form object, common in MCP tools), which Gemini refuses ("should be
non-empty for OBJECT type"). ``free_form`` lists where they are, so the caller can send
the schema as JSON Schema instead.
"""

from __future__ import annotations

from typing import Any, NamedTuple

JSONObject = dict[str, Any]

# Fields of the v1beta ``Schema`` message (ai.google.dev/api/caching#Schema).
SCHEMA_KEYWORDS = frozenset(
    {
        "type",
        "format",
        "title",
        "description",
        "nullable",
        "enum",
        "maxItems",
        "minItems",
        "properties",
        "required",
        "minProperties",
        "maxProperties",
        "minLength",
        "maxLength",
        "pattern",
        "example",
        "anyOf",
        "propertyOrdering",
        "default",
        "items",
        "minimum",
        "maximum",
    }
)
# Copied as they are: values, or lists of names.
_VERBATIM = frozenset({"default", "example", "required", "propertyOrdering"})
_DEFINITIONS = ("$defs", "definitions")
_MAX_INLINE_DEPTH = 32  # a $ref chain deeper than this is treated like a cycle


class GeminiSchema(NamedTuple):
    schema: JSONObject
    notes: tuple[str, ...]  # what could not be expressed
    free_form: tuple[str, ...]  # paths of objects without properties, the root's included


def to_gemini_schema(schema: JSONObject, *, path: str) -> GeminiSchema:
    """The Gemini form of ``schema``; ``path`` names it in notes (``tools[0].parameters``)."""
    translator = _Translator(schema)
    body = {key: value for key, value in schema.items() if key not in _DEFINITIONS}
    result = translator.translate(body, path, refs=())
    return GeminiSchema(result, tuple(translator.notes), tuple(translator.free_form))


class _Translator:
    def __init__(self, root: JSONObject) -> None:
        self.notes: list[str] = []
        self.free_form: list[str] = []
        self._definitions: dict[str, Any] = {}
        for key in _DEFINITIONS:
            table = root.get(key)
            if isinstance(table, dict):
                for name, value in table.items():
                    self._definitions[f"#/{key}/{name}"] = value

    def note(self, path: str, what: str) -> None:
        self.notes.append(f"{path}: {what}")

    def translate(self, schema: object, path: str, *, refs: tuple[str, ...]) -> JSONObject:
        if not isinstance(schema, dict):
            # true / false schemas (JSON Schema draft 6+) have no Gemini form.
            self.note(path, "boolean schema removed")
            return {}
        ref = schema.get("$ref")
        if isinstance(ref, str):
            return self._inline(ref, schema, path, refs=refs)
        out: JSONObject = {}
        for key, value in schema.items():
            self._keyword(out, key, value, f"{path}.{key}", refs=refs)
        if "type" not in out and "anyOf" not in out:
            if "properties" in out:
                out["type"] = "object"
            elif "enum" in out:
                out["type"] = "string"
        if str(out.get("type", "")).lower() == "object" and not out.get("properties"):
            self.free_form.append(path)
        return out

    def _inline(
        self, ref: str, schema: JSONObject, path: str, *, refs: tuple[str, ...]
    ) -> JSONObject:
        target = self._definitions.get(ref)
        if target is None or ref in refs or len(refs) >= _MAX_INLINE_DEPTH:
            reason = "recursive $ref removed" if ref in refs else "unresolvable $ref removed"
            self.note(path, reason)
            return {"description": schema["description"]} if "description" in schema else {}
        inlined = self.translate(target, path, refs=(*refs, ref))
        # Keywords beside $ref (a description, mostly) refine the referenced schema.
        siblings = {key: value for key, value in schema.items() if key != "$ref"}
        return {**inlined, **self.translate(siblings, path, refs=refs)} if siblings else inlined

    def _keyword(
        self, out: JSONObject, key: str, value: object, path: str, *, refs: tuple[str, ...]
    ) -> None:
        if key == "type":
            self._type(out, value, path)
        elif key == "properties" and isinstance(value, dict):
            out["properties"] = {
                name: self.translate(sub, f"{path}.{name}", refs=refs)
                for name, sub in value.items()
            }
        elif key == "items" and isinstance(value, dict):
            out["items"] = self.translate(value, path, refs=refs)
        elif key in ("anyOf", "oneOf") and isinstance(value, list):
            if key == "oneOf":
                self.note(path, "oneOf sent as anyOf")
            out["anyOf"] = [
                self.translate(sub, f"{path}[{i}]", refs=refs) for i, sub in enumerate(value)
            ]
        elif key == "enum" and isinstance(value, list):
            if all(isinstance(item, str) for item in value):
                out["enum"] = value
            else:
                self.note(path, "enum with non-string values removed")
        elif key == "const" and isinstance(value, str):
            out["enum"] = [value]
        elif key in _VERBATIM or (key in SCHEMA_KEYWORDS and not isinstance(value, dict | list)):
            out[key] = value
        else:
            self.note(path, "removed")

    def _type(self, out: JSONObject, value: object, path: str) -> None:
        if isinstance(value, str):
            out["type"] = value
            return
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            self.note(path, "removed")
            return
        kinds = [item for item in value if item != "null"]
        if len(kinds) < len(value):
            out["nullable"] = True
        if len(kinds) == 1:
            out["type"] = kinds[0]
        elif kinds:
            out["anyOf"] = [{"type": kind} for kind in kinds]
