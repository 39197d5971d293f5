"""The annotated example in docs/guides/configuration.md: it loads as a config, and it names
every key the schema has, so a new setting cannot go undocumented there."""

from __future__ import annotations

import types
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import yaml

from gw.config import load_config
from gw.config.config_struct import ConfigStruct
from gw.config.schema import Config

CONFIG_GUIDE = Path(__file__).parents[3] / "docs" / "guides" / "configuration.md"


def example() -> str:
    text = CONFIG_GUIDE.read_text(encoding="utf-8")
    return text.split("```yaml\n", 1)[1].split("```", 1)[0]


def schema_keys(struct: type[ConfigStruct], where: str = "") -> Iterator[str]:
    """Every key path of ``struct`` (``server.host``, ``providers[].mock.seed``, ...)."""
    hints = typing.get_type_hints(struct)
    for field in msgspec.structs.fields(struct):
        path = f"{where}{field.name}"
        yield path
        for inner in _structs_in(hints[field.name]):
            suffix = "[]." if _is_sequence(hints[field.name]) else "."
            yield from schema_keys(inner, path + suffix)


def _structs_in(hint: Any) -> Iterator[type[ConfigStruct]]:
    if isinstance(hint, type) and issubclass(hint, ConfigStruct):
        yield hint
    for argument in typing.get_args(hint):
        yield from _structs_in(argument)


def _is_sequence(hint: Any) -> bool:
    origin = typing.get_origin(hint)
    if origin is tuple:
        return True
    if origin in (typing.Union, types.UnionType):
        return any(_is_sequence(argument) for argument in typing.get_args(hint))
    return False


def example_keys(value: object, where: str = "") -> Iterator[str]:
    if isinstance(value, dict):
        for key, inner in value.items():
            path = f"{where}{key}"
            yield path
            yield from example_keys(inner, path + ".")
    elif isinstance(value, list):
        for item in value:
            yield from example_keys(item, where.removesuffix(".") + "[].")


def test_the_example_loads() -> None:
    config = load_config(example(), "configuration.md")
    assert config.providers
    assert config.tenants


def test_the_example_names_every_key_of_the_schema() -> None:
    shown = set(example_keys(yaml.safe_load(example())))
    missing = sorted(set(schema_keys(Config)) - shown)
    assert not missing, f"docs/guides/configuration.md does not show: {', '.join(missing)}"
