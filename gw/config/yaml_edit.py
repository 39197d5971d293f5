"""Edit one named item of a config list (``routes:``, ``policies:``) in YAML text, keeping
the rest of the file as the user wrote it: comments, key order, quoting, flow or block style.

Text in, text out, no I/O: the admin API (gw/server/admin/config_api.py) validates the result
with ``load_config`` before it writes anything.

Strategy: ruamel.yaml's round-trip mode keeps comments and order, but it writes one
indentation for the whole document; so the file's own indentation is measured first and
handed to the dumper, and an item being replaced is updated key by key in place (its
comments stay attached to the keys that remain) rather than swapped for a new mapping.
"""

from __future__ import annotations

import io
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import YAMLError

from gw.config.problems import YamlEditError

Section = Literal["routes", "policies"]
_WIDTH = 4096  # never re-wrap a user's long lines
_KEY_LINE = re.compile(r"^( *)[^\s#-][^#]*:\s*(#.*)?$")
_DASH_LINE = re.compile(r"^( *)- ")
_CHILD_LINE = re.compile(r"^( *)[^\s#-]")
# ``key:  # note`` -> ``key: []  # note``
_EMPTY_LIST = re.compile(r"^([^#]*:)([ \t]*(#.*)?\r?\n?)$")


class Indent:
    """The indentation a file uses: mapping, sequence (to the item text) and dash offset."""

    def __init__(self, mapping: int = 2, sequence: int = 4, offset: int = 2) -> None:
        self.mapping, self.sequence, self.offset = mapping, sequence, offset


def measure_indent(text: str) -> Indent:
    """The file's indentation, from the first nested block mapping and the first block
    sequence under a key; gw's own style (2, 4, 2) where the file shows none."""
    lines = text.splitlines()
    mapping: int | None = None
    offset: int | None = None
    for index, line in enumerate(lines[:-1]):
        key = _KEY_LINE.match(line)
        if key is None:
            continue
        following = _next_content_line(lines, index + 1)
        if following is None:
            continue
        parent = len(key.group(1))
        dash = _DASH_LINE.match(following)
        child = _CHILD_LINE.match(following)
        if dash is not None and offset is None:
            offset = max(0, len(dash.group(1)) - parent)
        elif dash is None and child is not None and mapping is None:
            width = len(child.group(1)) - parent
            mapping = width if width > 0 else None
        if mapping is not None and offset is not None:
            break
    mapping = mapping or 2
    offset = 2 if offset is None else offset
    return Indent(mapping=mapping, sequence=offset + 2, offset=offset)


def _next_content_line(lines: list[str], start: int) -> str | None:
    for line in lines[start:]:
        if line.strip() and not line.lstrip().startswith("#"):
            return line
    return None


def upsert_item(text: str, section: Section, item: Mapping[str, Any]) -> tuple[str, bool]:
    """``text`` with ``item`` in ``section``, replacing the item of the same ``name`` (in
    place, at its position) or appended; also whether it was created."""
    yaml, document = _load(text)
    items = _section(document, section)
    index = None if items is None else _find(items, str(item["name"]))
    if items is None or not _block_items(items):
        # No block list to splice into: rewrite the document (keeps comments, not wrapping).
        if items is None:
            if section in document:  # ``routes:`` with nothing under it
                del document[section]
            items = CommentedSeq()
            document[section] = items
        if index is None:
            items.append(_plain(item))
        else:
            items[index] = _plain(item)
        return _dump(yaml, document), index is None
    lines = text.splitlines(keepends=True)
    if index is None:
        last = len(items) - 1
        _, end = _span(lines, items, last, document, section)
        dash = _dash_column(lines, items.lc.item(last)[0])
        rendered = _render(yaml, _plain(item), dash)
        return "".join([*lines[:end], *_terminated(lines[:end]), rendered, *lines[end:]]), True
    current = items[index]
    if isinstance(current, CommentedMap):
        _update_map(current, item)
    else:
        current = _plain(item)
    start, end = _span(lines, items, index, document, section)
    rendered = _render(yaml, current, _dash_column(lines, start))
    return "".join([*lines[:start], rendered, *lines[end:]]), False


def delete_item(text: str, section: Section, name: str) -> str | None:
    """``text`` without the item named ``name`` in ``section``; None when there is none.
    Comment lines right above the item (at its indentation) go with it."""
    yaml, document = _load(text)
    items = _section(document, section)
    index = None if items is None else _find(items, name)
    if items is None or index is None:
        return None
    if not _block_items(items):
        del items[index]
        return _dump(yaml, document)
    lines = text.splitlines(keepends=True)
    start, end = _span(lines, items, index, document, section)
    dash = _dash_column(lines, start)
    while start > 0 and _is_comment(lines[start - 1]) and _column(lines[start - 1]) == dash:
        start -= 1
    if len(items) == 1:  # the section stays a list: ``routes:`` alone would be null
        key_line = document.lc.key(section)[0]
        lines[key_line] = _EMPTY_LIST.sub(r"\1 []\2", lines[key_line], count=1)
    return "".join([*lines[:start], *lines[end:]])


def replace_list(text: str, section: str, items: Sequence[Mapping[str, Any]]) -> str:
    """``text`` with the list ``section`` replaced by ``items`` (the key removed when they
    are none); the rest of the document keeps its comments and order. For a list whose
    items have no names to edit one by one (``switches``)."""
    yaml, document = _load(text)
    if items:
        document[section] = _plain(items)
    elif section in document:
        del document[section]
    return _dump(yaml, document)


def section_items(text: str, section: str) -> list[dict[str, Any]]:
    """The mappings of the list ``section``, as plain data, in file order."""
    _, document = _load(text)
    items = document.get(section)
    if items is None:
        return []
    if not isinstance(items, CommentedSeq):
        raise YamlEditError(f"{section} must be a list")
    return [dict(_plain(item)) for item in items if isinstance(item, Mapping)]


def item_names(text: str, section: Section) -> list[str]:
    """The names in ``section``, in file order."""
    _, document = _load(text)
    items = _section(document, section)
    if items is None:
        return []
    return [str(entry["name"]) for entry in items if isinstance(entry, Mapping) and "name" in entry]


def _block_items(items: CommentedSeq) -> bool:
    """Whether ``items`` is a non-empty block sequence (``- name: ...`` lines)."""
    return len(items) > 0 and not items.fa.flow_style()


def _span(
    lines: list[str], items: CommentedSeq, index: int, document: CommentedMap, section: str
) -> tuple[int, int]:
    """Lines ``[start, end)`` of item ``index``: from its dash line to its last content line
    (blank and comment lines after it belong to what follows)."""
    start = _dash_line(lines, items.lc.item(index)[0])
    if index + 1 < len(items):
        end = _dash_line(lines, items.lc.item(index + 1)[0])
    else:
        end = _section_end(lines, document, section)
    while end > start + 1 and (not lines[end - 1].strip() or _is_comment(lines[end - 1])):
        end -= 1
    return start, end


def _section_end(lines: list[str], document: CommentedMap, section: str) -> int:
    keys = list(document)
    position = keys.index(section)
    if position + 1 < len(keys):
        return int(document.lc.key(keys[position + 1])[0])
    return len(lines)


def _dash_line(lines: list[str], line: int) -> int:
    """The line of the ``-`` that starts the item whose content starts on ``line``."""
    while line > 0 and not lines[line].lstrip().startswith("-"):
        line -= 1
    return line


def _dash_column(lines: list[str], line: int) -> int:
    return _column(lines[_dash_line(lines, line)])


def _column(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _is_comment(line: str) -> bool:
    return line.lstrip().startswith("#")


def _terminated(lines: list[str]) -> list[str]:
    """A newline to add when the text before an insertion does not end with one."""
    return ["\n"] if lines and not lines[-1].endswith("\n") else []


def _render(yaml: YAML, item: Any, dash: int) -> str:
    """``item`` as one block sequence entry whose dash sits at column ``dash``; comments
    that trail it (they introduce the next item) are left out."""
    out = io.StringIO()
    yaml.dump({"x": [item]}, out)
    rendered = out.getvalue().splitlines(keepends=True)[1:]
    while rendered and (not rendered[-1].strip() or _is_comment(rendered[-1])):
        rendered.pop()
    shift = dash - _column(rendered[0])
    if shift >= 0:
        rendered = [" " * shift + line if line.strip() else line for line in rendered]
    else:
        rendered = [line[-shift:] if line[:-shift].isspace() else line for line in rendered]
    if not rendered[-1].endswith("\n"):
        rendered[-1] += "\n"
    return "".join(rendered)


def _load(text: str) -> tuple[YAML, CommentedMap]:
    indent = measure_indent(text)
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = _WIDTH
    yaml.indent(mapping=indent.mapping, sequence=indent.sequence, offset=indent.offset)
    try:
        document = yaml.load(text)
    except YAMLError as exc:
        # Line and problem only: ruamel's own message quotes the offending line, which
        # may hold a secret, and this message reaches API responses and traces.
        raise YamlEditError(f"not valid YAML{_where(exc)}: {_problem(exc)}") from None
    if document is None:
        document = CommentedMap()
    if not isinstance(document, CommentedMap):
        raise YamlEditError("the top level must be a mapping of sections")
    return yaml, document


def _where(exc: YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    return "" if mark is None else f" at line {mark.line + 1}, column {mark.column + 1}"


def _problem(exc: YAMLError) -> str:
    problem = getattr(exc, "problem", None)
    return problem if isinstance(problem, str) else type(exc).__name__


def _section(document: CommentedMap, section: Section) -> CommentedSeq | None:
    items = document.get(section)
    if items is None:
        return None
    if not isinstance(items, CommentedSeq):
        raise YamlEditError(f"{section} must be a list")
    return items


def _find(items: CommentedSeq, name: str) -> int | None:
    for index, entry in enumerate(items):
        if isinstance(entry, Mapping) and str(entry.get("name")) == name:
            return index
    return None


def _update_map(current: CommentedMap, new: Mapping[str, Any]) -> None:
    """Make ``current`` equal ``new`` key by key: kept keys keep their comments and
    position, nested mappings are updated the same way, new keys go last."""
    for key in [key for key in current if key not in new]:
        del current[key]
    for key, value in new.items():
        existing = current.get(key)
        if isinstance(existing, CommentedMap) and isinstance(value, Mapping):
            _update_map(existing, value)
        elif existing != value or key not in current:
            current[key] = _plain(value)


def _plain(value: Any) -> Any:
    """JSON-shaped data as plain builtins (ruamel writes those in block style)."""
    if isinstance(value, Mapping):
        return {str(key): _plain(child) for key, child in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(child) for child in value]
    return value


def _dump(yaml: YAML, document: CommentedMap) -> str:
    out = io.StringIO()
    yaml.dump(document, out)
    return out.getvalue()
