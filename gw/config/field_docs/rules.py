"""The shape of a field's docs and the value rules they may state (gw/config/field_docs/)."""

from __future__ import annotations

from typing import NamedTuple

from gw.errors import ERRORS_BY_CODE


class Text(NamedTuple):
    """A rule for a string: a pattern that ECMA-262 (editors) and Python read alike."""

    pattern: str
    reads: str  # what it takes, as docs/reference/config.md and an editor's message say it


class Field(NamedTuple):
    description: str
    minimum: float | None = None
    maximum: float | None = None  # for a duration: in seconds
    above: float | None = None  # an exclusive minimum: for a duration, 0 means "longer than 0s"
    text: Text | None = None  # for a string, or each string of a list
    min_items: int | None = None
    choices: tuple[str, ...] | None = None  # for a string, or each string of a list


class Section(NamedTuple):
    summary: str
    fields: dict[str, Field]


def section(summary: str, **fields: Field) -> Section:
    return Section(summary, fields)


# No '/', which separates provider and model; not blank; no control characters.
_PRINTABLE = r"[^\x00-\x1f\x7f-\x9f]"
SLASHLESS_NAME = Text(
    r"^[^/\x00-\x1f\x7f-\x9f]*[^/\s\x00-\x1f\x7f-\x9f][^/\x00-\x1f\x7f-\x9f]*$",
    "a name: not blank, no `/`, no control characters",
)
NAME = Text(
    rf"^{_PRINTABLE}*[^\s\x00-\x1f\x7f-\x9f]{_PRINTABLE}*$",
    "a name: not blank, no control characters",
)
PRINTABLE = Text(rf"^{_PRINTABLE}*$", "text without control characters")
SECRET_REFERENCE = Text(r"^(env|vault):[\s\S]", "`env:NAME` or `vault:NAME`")
# The part before the first / ? or # holds no user:password@.
UPSTREAM_URL = Text(
    r"^https?://[^/?#@]+([/?#][\s\S]*)?$", "an `http://` or `https://` URL without `user:password@`"
)
HTTP_URL = Text(r"^https?://", "an `http://` or `https://` URL")
ERROR_CODES = tuple(sorted(ERRORS_BY_CODE))
