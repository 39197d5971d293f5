"""YAML text -> plain data, plus a map from field path to line for error messages."""

from __future__ import annotations

import contextlib
from typing import Any

import yaml

from gw.config.problems import ConfigError

# libyaml's parser, when PyYAML was built with it (its wheels are), for gw's own files only:
# it accepts a few things the Python parser refuses (tabs as separators, for one), and a
# user's config must load the way ruamel.yaml, which edits it in place, reads it.
_LIBYAML_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def parse_yaml(text: str, source: str, *, own_file: bool = False) -> tuple[Any, dict[str, int]]:
    """Return the data in ``text`` and ``{"routes[0].targets[1]": line}`` (1-based lines).

    ``own_file``: text gw ships (the catalog), parsed by libyaml, ~8x faster; an error is
    still reported in the Python parser's words.
    """
    try:
        if own_file:
            with contextlib.suppress(yaml.YAMLError):
                return _load(text, _LIBYAML_LOADER)
        return _load(text, yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark else None
        raise ConfigError(source, "", f"not valid YAML: {exc.problem}", line) from None
    except yaml.YAMLError as exc:
        raise ConfigError(source, "", f"not valid YAML: {exc}") from None
    except RecursionError:
        raise ConfigError(source, "", "not valid YAML: nested too deeply") from None
    except (ValueError, OverflowError) as exc:  # parsed, but not buildable: 2026-13-45
        raise ConfigError(source, "", f"not valid YAML: {exc}") from None


def _load(text: str, loader_class: type[yaml.SafeLoader]) -> tuple[Any, dict[str, int]]:
    """Parse once: lines are read off the node tree before the data is built from it
    (building flattens ``<<`` merge keys in place)."""
    loader = loader_class(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, {}
        lines = _line_index(node)
        return loader.construct_document(node), lines
    finally:
        loader.dispose()


def _line_index(root: yaml.Node) -> dict[str, int]:
    """``{"routes[0].targets[1]": line}``: a mapping entry's line is its key's. A node that
    aliases refer to is walked once, where it is defined; one that contains an alias to
    itself is refused, as nothing in a config can be recursive."""
    lines: dict[str, int] = {}
    walked: set[int] = set()
    inside: set[int] = set()

    def walk(node: yaml.Node, path: str) -> None:
        if id(node) in inside:
            raise yaml.composer.ComposerError(
                problem="an alias refers to a node that contains it", problem_mark=node.start_mark
            )
        if id(node) in walked:
            return
        walked.add(id(node))
        inside.add(id(node))
        lines[path] = node.start_mark.line + 1
        if isinstance(node, yaml.MappingNode):
            seen: dict[str, int] = {}
            for key_node, value_node in node.value:
                key = str(key_node.value)
                _refuse_a_second(key, key_node, seen)
                child = f"{path}.{key}" if path else key
                walk(value_node, child)
                lines[child] = key_node.start_mark.line + 1
        elif isinstance(node, yaml.SequenceNode):
            for index, item in enumerate(node.value):
                walk(item, f"{path}[{index}]")
        inside.discard(id(node))

    walk(root, "")
    return lines


def _refuse_a_second(key: str, key_node: yaml.Node, seen: dict[str, int]) -> None:
    """YAML keeps only the last of two equal keys, silently: a section written twice (one
    appended at the end, say) would lose the first one's settings. Refused, naming both."""
    line = key_node.start_mark.line + 1
    if key in seen and key != "<<":
        raise yaml.constructor.ConstructorError(
            problem=f"{key!r} is set twice here (lines {seen[key]} and {line}); "
            "YAML would keep only the last: merge them into one",
            problem_mark=key_node.start_mark,
        )
    seen.setdefault(key, line)


def line_of(lines: dict[str, int], path: str) -> int | None:
    """The line of ``path`` or of its nearest ancestor that appears in the file."""
    while path:
        if path in lines:
            return lines[path]
        cut = max(path.rfind("."), path.rfind("["))
        path = path[:cut] if cut > 0 else ""
    return lines.get("")
