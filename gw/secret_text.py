"""The credentials gw has sent upstream, so that no upstream text shown to a client holds one.

An upstream may echo the key it was sent in an error message ("Incorrect API key provided:
sk-..."), and gw passes a trimmed copy of an upstream's error text to the client
(``GatewayError.upstream_message``). Every credential is remembered here when it is
resolved for a call, and ``scrub`` replaces each one found in such text.
"""

from __future__ import annotations

MASK = "***"
# Shorter values are not credentials worth a search, and would mask ordinary words.
MIN_LENGTH = 8

_known: set[str] = set()
_longest_first: tuple[str, ...] = ()  # a token inside a longer secret is masked with it


def remember_secret(value: str) -> None:
    """Note ``value`` (and the token of a ``Bearer`` or ``Basic`` value) as a credential."""
    global _longest_first  # noqa: PLW0603 -- one process-wide list, rebuilt only on news
    for candidate in (value, value.partition(" ")[2]):
        if len(candidate) >= MIN_LENGTH and candidate not in _known:
            _known.add(candidate)
            _longest_first = tuple(sorted(_known, key=len, reverse=True))


def scrub(text: str) -> str:
    """``text`` with every remembered credential replaced by ``***``."""
    for secret in _longest_first:
        if secret in text:
            text = text.replace(secret, MASK)
    return text
