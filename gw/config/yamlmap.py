"""YAML text -> plain data, plus a map from field path to line for error messages."""

from __future__ import annotations

from typing import Any

import yaml

from gw.config.problems import ConfigError

# libyaml's parser when PyYAML was built with it (its wheels are): the pure-Python one
# took ~40 ms of every start for the shipped catalog and the config.
_FAST_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def parse_yaml(text: str, source: str) -> tuple[Any, dict[str, int]]:
    """Return the data in ``text`` and ``{"routes[0].targets[1]": line}`` (1-based lines)."""
    try:
        node, data = _load(text, _FAST_LOADER)
    except yaml.YAMLError:
        # libyaml words its errors differently: report the Python parser's error, the one
        # the docs and tests know.
        node, data = _load_or_explain(text, source)
    lines: dict[str, int] = {}
    if node is not None:
        _index(node, "", lines)
    return data, lines


def _load(text: str, loader_class: type[yaml.SafeLoader]) -> tuple[yaml.Node | None, Any]:
    """Parse once: the node tree (for lines) and the data built from that same tree."""
    loader = loader_class(text)
    try:
        node = loader.get_single_node()
        return node, (None if node is None else loader.construct_document(node))
    finally:
        loader.dispose()


def _load_or_explain(text: str, source: str) -> tuple[yaml.Node | None, Any]:
    try:
        return _load(text, yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark else None
        raise ConfigError(source, "", f"not valid YAML: {exc.problem}", line) from None
    except yaml.YAMLError as exc:
        raise ConfigError(source, "", f"not valid YAML: {exc}") from None


def _index(node: yaml.Node, path: str, lines: dict[str, int]) -> None:
    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = str(key_node.value)
            child = f"{path}.{key}" if path else key
            lines[child] = key_node.start_mark.line + 1
            _index_children(value_node, child, lines)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _index(item, f"{path}[{index}]", lines)


def _index_children(node: yaml.Node, path: str, lines: dict[str, int]) -> None:
    key_line = lines[path]
    _index(node, path, lines)
    lines[path] = key_line


def line_of(lines: dict[str, int], path: str) -> int | None:
    """The line of ``path`` or of its nearest ancestor that appears in the file."""
    while path:
        if path in lines:
            return lines[path]
        cut = max(path.rfind("."), path.rfind("["))
        path = path[:cut] if cut > 0 else ""
    return lines.get("")
