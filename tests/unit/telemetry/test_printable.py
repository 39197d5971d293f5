"""printable: client text with no control character left, cut to a bound."""

from __future__ import annotations

import pytest

from gw.telemetry.printable import printable

OSC52 = "\x1b]52;c;ZWNobyBwd25lZA==\x07"  # would set the operator's clipboard
CLEAR = "\x1b[2J"


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("gpt-4o-mini", "gpt-4o-mini"),
        ("modèle-日本", "modèle-日本"),  # non-ASCII letters are not controls
        (f"m{CLEAR}x", "m\\x1b[2Jx"),
        (OSC52, "\\x1b]52;c;ZWNobyBwd25lZA==\\x07"),
        ("a\rb\nc\x7f", "a\\x0db\\x0ac\\x7f"),
        ("csi\x9b2J", "csi\\x9b2J"),  # C1 CSI
        ("rtl\u202eevil", "rtl\\u202eevil"),  # a bidi override (category Cf)
        ("line\u2028sep", "line\\u2028sep"),
        ("private\U000f0000", "private\\U000f0000"),
    ],
)
def test_controls_are_escaped(text: str, shown: str) -> None:
    assert printable(text) == shown


def test_long_text_is_cut_with_an_ellipsis() -> None:
    assert printable("x" * 5000, 10) == "x" * 9 + "…"
    assert printable("x" * 10, 10) == "x" * 10
    assert len(printable("\x1b" * 100, 20)) == 20
