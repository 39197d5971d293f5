"""What an error quotes of a client's value, and any message, is bounded (gw/errors.py)."""

from __future__ import annotations

from gw.errors import (
    CLIENT_VALUE_MAX_CHARS,
    MESSAGE_MAX_CHARS,
    InvalidRequestError,
    client_value,
    clipped,
)


def test_a_short_value_is_quoted_whole() -> None:
    assert client_value("gpt-4o") == "'gpt-4o'"


def test_a_long_value_is_cut_and_its_length_said() -> None:
    quoted = client_value("m" * 1_000_000)
    assert quoted == repr("m" * CLIENT_VALUE_MAX_CHARS) + "... (1000000 characters)"


def test_clipped_keeps_the_limit() -> None:
    assert clipped("abc", 5) == "abc"
    assert clipped("abcdefgh", 5) == "abcd…"


def test_every_message_is_cut_at_the_backstop() -> None:
    error = InvalidRequestError("`" + "f" * 2_000_000 + "` is not a field")
    assert len(error.message) == MESSAGE_MAX_CHARS
    assert str(error) == error.message
