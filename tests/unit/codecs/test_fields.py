"""Typed reads of client JSON: numbers given as text."""

from __future__ import annotations

import pytest

from gw.codecs.fields import decimal


@pytest.mark.parametrize(
    ("text", "number"),
    [("0", 0), ("42", 42), ("²", None), ("٣", None), ("", None), ("-1", None), ("9" * 19, None)],
)
def test_decimal_takes_only_ascii_digits_of_a_bounded_length(text: str, number: int | None) -> None:
    assert decimal(text) == number
