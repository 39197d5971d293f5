"""Predicates on what an adapter sent: does the upstream body carry a field?

Each check reads one upstream format's own shape, by path: ``at("generationConfig.topK",
3)`` is true when the body has 3 there. A path is dotted keys, with ``[*]`` for every
element of an array and ``[N]`` for one. ``mentions`` looks for a marker string anywhere
below a path (a text, a base64 payload, an id), for the conversation's content.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from conformance.upstreams import Sent

Check = Callable[[Sent], bool]


@dataclass(frozen=True)
class Concept:
    """What a client field means once in the IR: one check per upstream format that has a
    place for it (a format missing here can only note, refuse or drop it), and the words a
    lossy-translation note naming it contains."""

    checks: Mapping[str, Check]  # upstream format -> does the body carry it
    terms: tuple[str, ...]  # words a note naming it contains (any one, any case)


_TOKEN = re.compile(r"([^.\[\]]+)|\[(\d+|\*)\]")
_PRESENT = object()


def find(value: Any, path: str) -> Iterator[Any]:
    """Every value at ``path`` below ``value`` (none when the path leads nowhere)."""
    found = [value]
    for key, index in _TOKEN.findall(path):
        found = [item for parent in found for item in _step(parent, key, index)]
    return iter(found)


def _step(parent: Any, key: str, index: str) -> list[Any]:
    if key:
        return [parent[key]] if isinstance(parent, dict) and key in parent else []
    if not isinstance(parent, list):
        return []
    if index == "*":
        return list(parent)
    return [parent[int(index)]] if int(index) < len(parent) else []


def at(path: str, expected: object = _PRESENT) -> Check:
    """The body has ``expected`` at ``path`` (any value, when none is given)."""

    def check(sent: Sent) -> bool:
        return any(expected is _PRESENT or item == expected for item in find(sent.body, path))

    return check


def where(path: str, **fields: object) -> Check:
    """Some object at ``path`` has every one of ``fields`` with its value."""

    def check(sent: Sent) -> bool:
        return any(
            isinstance(item, dict) and all(item.get(key) == value for key, value in fields.items())
            for item in find(sent.body, path)
        )

    return check


def mentions(path: str, marker: str) -> Check:
    """A string containing ``marker`` is somewhere below ``path``."""

    def check(sent: Sent) -> bool:
        return any(_holds(item, marker) for item in find(sent.body, path))

    return check


def _holds(value: Any, marker: str) -> bool:
    if isinstance(value, str):
        return marker in value
    if isinstance(value, dict):
        return any(_holds(item, marker) for item in value.values())
    if isinstance(value, list):
        return any(_holds(item, marker) for item in value)
    return False


def header(name: str, part: str) -> Check:
    """The request header ``name`` holds ``part``."""
    return lambda sent: part in sent.headers.get(name, "")


def url_has(part: str) -> Check:
    return lambda sent: part in sent.url


def both(*checks: Check) -> Check:
    return lambda sent: all(check(sent) for check in checks)


def either(*checks: Check) -> Check:
    return lambda sent: any(check(sent) for check in checks)


def some(path: str, test: Callable[[Any], bool]) -> Check:
    """Some value at ``path`` passes ``test``."""
    return lambda sent: any(test(item) for item in find(sent.body, path))


def holds(value: Any, marker: str) -> bool:
    """A string containing ``marker`` is somewhere in ``value``."""
    return _holds(value, marker)


def has_key(path: str, key: str) -> Check:
    """Some object below ``path`` (at any depth) has ``key``."""

    def check(sent: Sent) -> bool:
        return any(_has_key(item, key) for item in find(sent.body, path))

    return check


def _has_key(value: Any, key: str) -> bool:
    if isinstance(value, dict):
        return key in value or any(_has_key(item, key) for item in value.values())
    if isinstance(value, list):
        return any(_has_key(item, key) for item in value)
    return False
