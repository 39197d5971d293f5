"""YAML text -> plain data, plus a map from field path to line for error messages."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Mapping
from typing import Any

import yaml

from gw.config.problems import ConfigError

# libyaml's parser, when PyYAML was built with it (its wheels are): ~5x faster than the
# Python parser. It accepts tabs as separators, which the Python parser and ruamel.yaml
# (which edits the file in place) refuse, so text with a tab goes to the Python parser: a
# file must not load and then refuse admin edits. So does text with a bare `!` tag, which
# libyaml builds as '' where the Python parser builds null. Any other text libyaml refuses is parsed
# again by the Python parser too, so an error is reported in its words (and a text only
# the Python parser accepts still loads).
_LIBYAML_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_PYTHON_PARSER_ONLY = re.compile(r"\t|(?:^|[\s\[{,])!(?:[\s\]},]|$)", re.MULTILINE)


def parse_yaml(text: str, source: str, *, own_file: bool = False) -> tuple[Any, LineIndex]:
    """Return the data in ``text`` and ``{"routes[0].targets[1]": line}`` (1-based lines).

    ``own_file``: text gw ships (the catalog), which libyaml reads whatever it holds.
    """
    try:
        if own_file or not ("\t" in text or ("!" in text and _PYTHON_PARSER_ONLY.search(text))):
            with contextlib.suppress(_SyntaxError):
                return _load(text, _LIBYAML_LOADER)
        return _load(text, yaml.SafeLoader)
    except _SyntaxError as exc:
        raise _config_error(source, exc.error, text) from None
    except yaml.MarkedYAMLError as exc:
        raise _config_error(source, exc, text) from None
    except yaml.YAMLError as exc:
        raise ConfigError(source, "", f"not valid YAML: {exc}") from None
    except RecursionError:
        raise ConfigError(source, "", "not valid YAML: nested too deeply") from None
    except (ValueError, OverflowError) as exc:  # parsed, but not buildable: 2026-13-45
        raise ConfigError(source, "", f"not valid YAML: {exc}") from None


class _SyntaxError(Exception):
    """The parser refused the text (as opposed to gw's own checks on a parsed tree, whose
    errors read the same from either parser)."""

    def __init__(self, error: yaml.YAMLError) -> None:
        self.error = error


# The parser's words for the usual slips, and what they mean in a config file.
_MEANINGS = (
    (
        "expected <block end>",
        "this line is indented differently from the lines above it, or a"
        " bracket or quote before it is not closed",
    ),
    (
        "mapping values are not allowed",
        "a ':' where YAML expects none: check this line's"
        " indentation, or quote a value that holds ': '",
    ),
    ("could not find expected ':'", "a key without its ':', or a quote that is not closed"),
    ("found character '\\t'", "a tab: indent with spaces"),
    ("while scanning a quoted scalar", "a quote that is not closed"),
)
_SHOWN_LINE_CHARS = 80


def _config_error(source: str, exc: yaml.YAMLError, text: str) -> ConfigError:
    if not isinstance(exc, yaml.MarkedYAMLError) or exc.problem_mark is None:
        return ConfigError(source, "", f"not valid YAML: {exc}")
    mark = exc.problem_mark
    reason = f"not valid YAML: {exc.problem}"
    lines = text.splitlines()
    if 0 <= mark.line < len(lines):
        shown = lines[mark.line][:_SHOWN_LINE_CHARS]
        reason += f" at column {mark.column + 1} of {shown!r}"
    said = f"{exc.problem} {exc.context or ''}"
    meaning = next((means for words, means in _MEANINGS if words in said), None)
    if meaning is not None:
        reason += f": {meaning}"
    return ConfigError(source, "", reason, mark.line + 1)


def _load(text: str, loader_class: type[yaml.SafeLoader]) -> tuple[Any, LineIndex]:
    """Parse once: the node tree is checked (``_check_tree``) before the data is built
    from it; the lines are read off a second parse, only if an error asks for one."""
    loader = loader_class(text)
    try:
        try:
            node = loader.get_single_node()
        except yaml.YAMLError as exc:
            raise _SyntaxError(exc) from None
        if node is None:
            return None, LineIndex(None, loader_class)
        _check_tree(node)
        try:
            data = _build(loader, node)
        except _NotPlainError:
            data = loader.construct_document(node)
        return data, LineIndex(text, loader_class)
    finally:
        loader.dispose()


_STR, _SEQ, _MAP = "tag:yaml.org,2002:str", "tag:yaml.org,2002:seq", "tag:yaml.org,2002:map"


_PLAIN_KEYS = frozenset(
    f"tag:yaml.org,2002:{name}" for name in ("str", "int", "float", "bool", "null")
)


class _NotPlainError(Exception):
    """The tree holds what only PyYAML's constructor builds (a merge key, a set, a mapping
    as a key): it builds the whole document instead."""


def _build(loader: yaml.SafeLoader, root: yaml.Node) -> Any:
    """The data of a checked tree of plain lists, mappings and scalars, as PyYAML's safe
    constructor would build it, 4x faster (it took half a 5,000-route config's load): a
    string is its node's value, any other scalar goes to PyYAML's constructor, an aliased
    node is built once and shared."""
    built: dict[int, Any] = {}

    def build(node: yaml.Node) -> Any:
        if isinstance(node, yaml.ScalarNode):
            return node.value if node.tag == _STR else loader.construct_object(node)
        if id(node) in built:
            return built[id(node)]
        if isinstance(node, yaml.SequenceNode) and node.tag == _SEQ:
            items: list[Any] = []
            built[id(node)] = items
            items.extend([build(item) for item in node.value])
            return items
        if isinstance(node, yaml.MappingNode) and node.tag == _MAP:
            mapping: dict[Any, Any] = {}
            built[id(node)] = mapping
            for key_node, value_node in node.value:
                if not isinstance(key_node, yaml.ScalarNode) or key_node.tag not in _PLAIN_KEYS:
                    raise _NotPlainError
                mapping[build(key_node)] = build(value_node)
            return mapping
        raise _NotPlainError

    return build(root)


class LineIndex(Mapping[str, int]):
    """``{"routes[0].targets[1]": line}``, built when first read: only an error needs a
    line, and building the index took a fifth of a 5,000-route config's load. Lines are
    read off the node tree, before building the data flattens ``<<`` merge keys."""

    def __init__(self, text: str | None, loader_class: type[yaml.SafeLoader]) -> None:
        self._text = text
        self._loader_class = loader_class
        self._lines: dict[str, int] | None = None if text is not None else {}

    def _index(self) -> dict[str, int]:
        if self._lines is None:
            loader = self._loader_class(self._text or "")
            try:
                node = loader.get_single_node()
                self._lines = _line_index(node) if node is not None else {}
            finally:
                loader.dispose()
            self._text = None
        return self._lines

    def __getitem__(self, path: str) -> int:
        return self._index()[path]

    def __iter__(self) -> Iterator[str]:
        return iter(self._index())

    def __len__(self) -> int:
        return len(self._index())


def _check_tree(root: yaml.Node) -> None:
    """What ``_line_index`` refuses, without building paths (5x faster): a key set twice in
    one mapping, an alias to a node that contains it."""
    walked: set[int] = set()
    inside: set[int] = set()

    def walk(node: yaml.Node) -> None:
        if id(node) in inside:
            raise yaml.composer.ComposerError(
                problem="an alias refers to a node that contains it", problem_mark=node.start_mark
            )
        if id(node) in walked:
            return
        walked.add(id(node))
        inside.add(id(node))
        if isinstance(node, yaml.MappingNode):
            seen: dict[str, int] = {}
            for key_node, value_node in node.value:
                _refuse_a_second(str(key_node.value), key_node, seen)
                if not isinstance(value_node, yaml.ScalarNode):
                    walk(value_node)
        elif isinstance(node, yaml.SequenceNode):
            for item in node.value:
                if not isinstance(item, yaml.ScalarNode):
                    walk(item)
        inside.discard(id(node))

    walk(root)


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


def line_of(lines: Mapping[str, int], path: str) -> int | None:
    """The line of ``path`` or of its nearest ancestor that appears in the file."""
    while path:
        if path in lines:
            return lines[path]
        cut = max(path.rfind("."), path.rfind("["))
        path = path[:cut] if cut > 0 else ""
    return lines.get("")
