"""Config text -> validated ``Config``, with errors naming the file, field path and line."""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any

import msgspec

from gw.config.builtin import DEFAULT_CONFIG
from gw.config.problems import ConfigError
from gw.config.schema import Config
from gw.config.units import decode_unit
from gw.config.validate import find_problems
from gw.config.yamlmap import line_of, parse_yaml

BUILTIN_SOURCE = "<built-in default>"
# YAML 1.1, which PyYAML reads, takes a bare yes/no/on/off as a boolean.
_BARE_WORD_HINT = (
    '; YAML reads a bare true/false/yes/no/on/off as a boolean: quote the word ("off")'
)
_MSGSPEC_PATH = re.compile(r"^(?P<reason>.*?)(?: - at `\$(?P<path>[^`]*)`)?$", re.DOTALL)


def load_config(
    text: str | None, source: str, overrides: Mapping[str, Any] | None = None
) -> Config:
    """Parse and validate ``text`` (``None``: the built-in default), then apply ``overrides``.

    ``overrides`` maps dotted paths (``server.port``) to values that win over the file:
    this is how ``GW_*`` variables and command-line flags take precedence.
    """
    if text is None:
        data: Any = copy.deepcopy(DEFAULT_CONFIG)
        lines: dict[str, int] = {}
    else:
        data, lines = parse_yaml(text, source)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(source, "", "the top level must be a mapping of sections", 1)
    for dotted, value in (overrides or {}).items():
        _set_path(data, dotted, value)
    try:
        config = msgspec.convert(data, Config, strict=True, dec_hook=decode_unit)
    except msgspec.ValidationError as exc:
        path, reason = _split_msgspec_error(str(exc))
        raise ConfigError(source, path, reason, line_of(lines, path)) from None
    problems = find_problems(config)
    if problems:
        path, reason = problems[0]
        raise ConfigError(source, path, reason, line_of(lines, path))
    return config


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


def _split_msgspec_error(message: str) -> tuple[str, str]:
    match = _MSGSPEC_PATH.match(message)
    if match is None:  # pragma: no cover - the pattern matches any text
        return "", message
    path = (match.group("path") or "").lstrip(".")
    reason = match.group("reason")
    if reason.endswith("got `bool`"):
        reason += _BARE_WORD_HINT
    return path, reason[0].lower() + reason[1:] if reason else reason
