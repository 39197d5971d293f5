"""printable: client text made safe to print on an operator's terminal.

A model name, a route or ``provider/<anything>`` is whatever the client sent. Printed as is,
``ESC ] 52`` could write the operator's clipboard, ``ESC [ 2J`` clear the screen, a CR or a
bidi override disguise a line. Every control character (Unicode category C: C0, DEL, C1,
format characters such as U+202E, and unassigned or private code points) and the line and
paragraph separators are shown escaped (``\\x1b``), and long text is cut with an ellipsis.
"""

from __future__ import annotations

import unicodedata
from typing import Final

TEXT_MAX_CHARS: Final = 200
"""How much client text one line shows: keeps log lines bounded."""
ELLIPSIS: Final = "…"
_LINE_BREAKING: Final = frozenset({"Zl", "Zp"})


def printable(text: str, limit: int = TEXT_MAX_CHARS) -> str:
    """``text`` with every control character escaped, at most ``limit`` characters long
    (the last one an ellipsis when it was cut)."""
    # str.isprintable is false for every category C character (and more): the usual name
    # takes this fast path.
    safe = text if text.isprintable() else "".join(_escaped(char) for char in text)
    if len(safe) <= limit:
        return safe
    return safe[: max(limit - 1, 0)] + ELLIPSIS


def _escaped(char: str) -> str:
    category = unicodedata.category(char)
    if category[0] != "C" and category not in _LINE_BREAKING:
        return char
    code = ord(char)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"
