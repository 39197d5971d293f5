"""Every config field has a description (gw/config/field_docs/): the JSON Schema and
docs/reference/config.md are made from them, so a new field without one fails here."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import msgspec
import pytest

from gw.config.config_struct import ConfigStruct
from gw.config.field_docs import SECTIONS
from gw.config.json_schema import MissingDocError, config_json_schema, field_doc, struct_of
from gw.config.schema import Config, ServerConfig


def _reachable(struct: type, seen: set[type] | None = None) -> Iterator[type]:
    """Every Struct a config file can hold, from ``Config`` down."""
    seen = set() if seen is None else seen
    if struct in seen:
        return
    seen.add(struct)
    yield struct
    for info in msgspec.structs.fields(struct):
        inner = struct_of(info.type)
        if inner is not None:
            yield from _reachable(inner, seen)


STRUCTS = list(_reachable(Config))


def test_every_section_and_field_has_a_description() -> None:
    missing = [
        f"{struct.__name__}.{info.name}"
        for struct in STRUCTS
        for info in msgspec.structs.fields(struct)
        if not (struct in SECTIONS and SECTIONS[struct].fields.get(info.name, None))
        or not SECTIONS[struct].fields[info.name].description.strip()
    ]
    summaries = [s.__name__ for s in STRUCTS if s in SECTIONS and not SECTIONS[s].summary.strip()]
    assert not missing, (
        "describe these config fields in gw/config/field_docs/ (then regenerate "
        "docs/reference/config.md, see tests/unit/config/test_config_reference.py): "
        + ", ".join(missing)
    )
    assert not summaries, f"give these sections a summary: {summaries}"


def test_no_description_is_left_for_a_field_that_is_gone() -> None:
    stale = [
        f"{struct.__name__}.{name}"
        for struct, section in SECTIONS.items()
        for name in section.fields
        if struct not in STRUCTS or name not in {f.name for f in msgspec.structs.fields(struct)}
    ]
    assert not stale, f"remove from gw/config/field_docs/: {stale}"


def test_a_field_without_a_description_is_named() -> None:
    class Novel(ConfigStruct, frozen=True, kw_only=True):
        shiny: int = 1

    with pytest.raises(MissingDocError, match="no section for Novel"):
        field_doc(Novel, "shiny")
    with pytest.raises(MissingDocError, match=r"no description for ServerConfig\.shiny"):
        field_doc(ServerConfig, "shiny")


def _properties(node: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every property of a schema, nested ones too (not those of if/then conditions)."""
    for name, prop in node.get("properties", {}).items():
        yield name, prop
        yield from _properties(prop)
    for option in node.get("anyOf", []):
        yield from _properties(option)
    if isinstance(node.get("items"), dict):
        yield from _properties(node["items"])


def test_every_property_of_the_schema_carries_its_description() -> None:
    """What an editor shows on hover is never empty."""
    found = list(_properties(config_json_schema()))
    # At least every field once: a section used in two places (a budget) is inlined twice.
    assert len(found) >= sum(len(msgspec.structs.fields(s)) for s in STRUCTS)
    assert [name for name, prop in found if not prop.get("description", "").strip()] == []


@pytest.mark.parametrize("struct", STRUCTS, ids=lambda struct: struct.__name__)
def test_value_rules_are_valid_python_patterns(struct: type) -> None:
    for field in SECTIONS[struct].fields.values():
        if field.text is not None:
            re.compile(field.text.pattern)
