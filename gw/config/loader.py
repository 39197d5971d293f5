"""Config text -> validated ``Config``, with errors naming the file, field path and line."""

from __future__ import annotations

import copy
import difflib
import re
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import msgspec

from gw.config.builtin import DEFAULT_CONFIG
from gw.config.limits import ConfigLimits, check_expansion, check_size
from gw.config.problems import ConfigError
from gw.config.schema import Config
from gw.config.units import decode_unit
from gw.config.validate import Problem, find_problems
from gw.config.yamlmap import line_of, parse_yaml

BUILTIN_SOURCE = "<built-in default>"
DEFAULT_LIMITS = ConfigLimits()
# YAML 1.1, which PyYAML reads, takes a bare yes/no/on/off as a boolean.
_BARE_WORD_HINT = "; YAML reads a bare true/false/yes/no/on/off as a boolean: quote the word"
_UNKNOWN_FIELD = re.compile(r"^object contains unknown field `(?P<key>[^`]*)`$")
_PATH_PART = re.compile(r"\[\d+\]|[^.\[\]]+")
# Values gw once took and no longer does, by section and field: what to say instead of
# "invalid enum value" (the rest of the file still loads in an older gw, not in this one).
RETIRED_VALUES: dict[tuple[str, str], dict[str, str]] = {
    ("server", "upstream_transport"): {
        "aiohttp": "aiohttp is no longer one of gw's upstream clients (gw's own measured "
        "faster); use builtin (the default) or httpx",
    },
}
_MSGSPEC_PATH = re.compile(r"^(?P<reason>.*?)(?: - at `\$(?P<path>[^`]*)`)?$", re.DOTALL)
OutsideCheck = Callable[[Config], Iterable[Problem]]


def load_config(
    text: str | None,
    source: str,
    overrides: Mapping[str, Any] | None = None,
    limits: ConfigLimits = DEFAULT_LIMITS,
    *,
    outside: OutsideCheck | None = None,
) -> Config:
    """Parse and validate ``text`` (``None``: the built-in default), then apply ``overrides``.

    ``overrides`` maps dotted paths (``server.port``) to values that win over the file:
    this is how ``GW_*`` variables and command-line flags take precedence. A text over
    ``limits`` is refused before it is parsed (gw/config/limits.py). ``outside`` checks
    what the config names outside itself (files, say: this module reads none), once the
    config is valid; its problems are reported as the others, with their line.
    """
    if text is None:
        data: Any = copy.deepcopy(DEFAULT_CONFIG)
        lines: Mapping[str, int] = {}
    else:
        check_size(source, _utf8_size(text, limits.max_bytes), limits)
        data, lines = parse_yaml(text, source)
        check_expansion(source, data, limits)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(source, "", "the top level must be a mapping of sections", 1)
    for dotted, value in (overrides or {}).items():
        _set_path(data, dotted, value)
    _refuse_retired(data, source, lines)
    try:
        config = msgspec.convert(data, Config, strict=True, dec_hook=decode_unit)
    except msgspec.ValidationError as exc:
        path, reason = _split_msgspec_error(str(exc))
        path, reason = _with_choices(path, reason)
        raise ConfigError(source, path, reason, line_of(lines, path)) from None
    problems = find_problems(config)
    if not problems and outside is not None:
        problems = list(outside(config))
    if problems:
        path, reason = problems[0]
        raise ConfigError(source, path, reason, line_of(lines, path))
    return config


def _refuse_retired(data: dict[str, Any], source: str, lines: Mapping[str, int]) -> None:
    for (section, field), retired in RETIRED_VALUES.items():
        values = data.get(section)
        value = values.get(field) if isinstance(values, dict) else None
        if isinstance(value, str) and value in retired:
            path = f"{section}.{field}"
            raise ConfigError(source, path, retired[value], line_of(lines, path))


def _utf8_size(text: str, limit: int) -> int:
    """The text's size in bytes, encoded only when its length leaves it in doubt."""
    if len(text) > limit or len(text) * 4 <= limit:
        return len(text)
    return len(text.encode("utf-8", "surrogatepass"))


def _set_path(data: dict[str, Any], dotted: str, value: Any) -> None:
    *parents, leaf = dotted.split(".")
    node = data
    for key in parents:
        child = node.get(key)
        if not isinstance(child, dict):
            child = {}
            node[key] = child
        node = child
    node[leaf] = value


def _with_choices(path: str, reason: str) -> tuple[str, str]:
    """Say what a field accepts: an enum's values, or the fields of the section that got an
    unknown one (the nearest first; the error then points at the unknown key's line)."""
    declared = _field_type(path)
    choices = [arg for arg in typing.get_args(declared) if isinstance(arg, str)]
    listed = f"; one of: {', '.join(choices)}" if choices else ""
    if reason.endswith("got `bool`") and _takes_words(declared):
        return path, reason + _BARE_WORD_HINT + listed
    if reason.startswith("invalid enum value") and listed:
        return path, reason + listed
    unknown = _UNKNOWN_FIELD.match(reason)
    if unknown:
        section = _field_type(path)
        if isinstance(section, type) and issubclass(section, msgspec.Struct):
            fields = [field.name for field in msgspec.structs.fields(section)]
            key = unknown.group("key")
            near = difflib.get_close_matches(key, fields, n=1)
            hint = f"did you mean `{near[0]}`? " if near else ""
            return (
                f"{path}.{key}" if path else key,
                f"unknown field; {hint}fields here: {', '.join(fields)}",
            )
    return path, reason


def _takes_words(declared: Any) -> bool:
    """A text field, or a choice of words (where a bare ``off`` read as false belongs)."""
    options = typing.get_args(declared) or (declared,)
    return any(option is str or isinstance(option, str) for option in options)


def _field_type(path: str) -> Any:
    """The type ``Config`` declares at an error's path (``providers[0].kind``); Any when
    the path leaves the declared types."""
    declared: Any = Config
    for part in _PATH_PART.findall(path):
        declared = _without_none(declared)
        if part.startswith("["):
            items = typing.get_args(declared)
            declared = items[0] if items else Any
        elif isinstance(declared, type) and issubclass(declared, msgspec.Struct):
            fields = {field.name: field.type for field in msgspec.structs.fields(declared)}
            declared = fields.get(part, Any)
        elif typing.get_origin(declared) in (dict, Mapping):
            declared = typing.get_args(declared)[1]
        else:
            return Any
    return _without_none(declared)


def _without_none(declared: Any) -> Any:
    """``X | None`` -> ``X``; any other type as it is."""
    options = [arg for arg in typing.get_args(declared) if arg is not type(None)]
    if typing.get_origin(declared) in (typing.Union, types.UnionType) and len(options) == 1:
        return options[0]
    return declared


def _split_msgspec_error(message: str) -> tuple[str, str]:
    match = _MSGSPEC_PATH.match(message)
    if match is None:  # pragma: no cover - the pattern matches any text
        return "", message
    path = (match.group("path") or "").lstrip(".")
    reason = match.group("reason")
    return path, reason[0].lower() + reason[1:] if reason else reason
