"""Credentials gw sent upstream are masked in upstream text passed on to clients."""

from __future__ import annotations

from gw.codecs.upstream_failure import upstream_failure
from gw.errors import InvalidRequestError
from gw.secret_text import remember_secret, scrub


def test_a_remembered_secret_and_its_bearer_token_are_masked() -> None:
    remember_secret("Bearer sk-unit-secret-4242")
    assert scrub("got Bearer sk-unit-secret-4242 twice: sk-unit-secret-4242") == (
        "got *** twice: ***"
    )


def test_short_values_are_not_searched_for() -> None:
    remember_secret("abc")
    assert scrub("abc abc") == "abc abc"


def test_an_upstream_error_echoing_a_key_reaches_the_client_masked() -> None:
    remember_secret("sk-echoed-9f8e7d6c")
    error = upstream_failure(
        InvalidRequestError,
        "upstream answered 400",
        upstream_text="Incorrect API key provided: sk-echoed-9f8e7d6c.",
        upstream_status=400,
        retry_after=None,
    )
    assert error.client_message == "upstream answered 400: Incorrect API key provided: ***."
