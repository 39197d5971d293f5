"""Every httpx failure the adapters catch has its own row in ``TRANSPORT_ERRORS``.

The classes are found by walking ``__subclasses__`` from httpx's root exception, so a class
a new httpx release adds fails here until the table names it (or a parent row covers it).
Only the catch-all class itself (the last row) may land on the last row.
"""

from __future__ import annotations

import httpx
import pytest

from gw.errors import GatewayError, UpstreamTimeoutError
from gw.upstream_http.transport_errors import TRANSPORT_ERRORS, map_transport_error


def _descendants(root: type[BaseException]) -> list[type[BaseException]]:
    """``root`` and every class below it, each once, parents before children."""
    found: list[type[BaseException]] = []
    pending = [root]
    while pending:
        cls = pending.pop(0)
        if cls not in found:
            found.append(cls)
            pending.extend(cls.__subclasses__())
    return found


CATCH_ALL = len(TRANSPORT_ERRORS) - 1
CATCH_ALL_CLASS = TRANSPORT_ERRORS[CATCH_ALL][0]
MAPPED_CLASSES: list[type[httpx.TransportError]] = [
    cls for cls in _descendants(httpx.HTTPError) if issubclass(cls, CATCH_ALL_CLASS)
]
TRANSPORT_CLASSES = [cls for cls in MAPPED_CLASSES if issubclass(cls, httpx.TransportError)]


def _first_row(cls: type[BaseException]) -> int:
    return next(i for i, (kind, _, _) in enumerate(TRANSPORT_ERRORS) if issubclass(cls, kind))


def test_the_walk_finds_every_transport_error() -> None:
    # Guards the parametrization below against passing vacuously.
    for known in (httpx.ConnectTimeout, httpx.ReadError, httpx.RemoteProtocolError):
        assert known in TRANSPORT_CLASSES
    assert len(TRANSPORT_CLASSES) >= 16
    assert set(TRANSPORT_CLASSES) <= set(MAPPED_CLASSES)


def test_the_catch_all_row_covers_every_transport_error() -> None:
    assert issubclass(httpx.TransportError, CATCH_ALL_CLASS)
    assert all(kind is not CATCH_ALL_CLASS for kind, _, _ in TRANSPORT_ERRORS[:CATCH_ALL])


def test_no_row_is_shadowed_by_an_earlier_one() -> None:
    for later, (kind, _, _) in enumerate(TRANSPORT_ERRORS):
        for earlier, (parent, _, _) in enumerate(TRANSPORT_ERRORS[:later]):
            assert not issubclass(kind, parent), (
                f"row {later} ({kind.__name__}) is unreachable behind row {earlier} "
                f"({parent.__name__})"
            )


@pytest.mark.parametrize("cls", MAPPED_CLASSES, ids=lambda cls: cls.__name__)
def test_maps_to_the_first_matching_row(cls: type[httpx.TransportError]) -> None:
    _, expected, message = TRANSPORT_ERRORS[_first_row(cls)]

    error = map_transport_error(cls("low-level detail"), provider="primary")

    assert isinstance(error, GatewayError)
    assert type(error) is expected
    # A full pool is gw's own saturation; everything else is the upstream's.
    assert error.blame == ("gateway" if cls is httpx.PoolTimeout else "upstream")
    assert error.message == f"provider primary: {message}"


@pytest.mark.parametrize("cls", MAPPED_CLASSES, ids=lambda cls: cls.__name__)
def test_only_the_catch_all_class_itself_reaches_the_last_row(
    cls: type[httpx.TransportError],
) -> None:
    if cls is CATCH_ALL_CLASS:
        assert _first_row(cls) == CATCH_ALL
    else:
        assert _first_row(cls) < CATCH_ALL, f"{cls.__name__} has no row of its own"


@pytest.mark.parametrize(
    "cls",
    [
        cls
        for cls in MAPPED_CLASSES
        if issubclass(cls, httpx.TimeoutException) and cls is not httpx.PoolTimeout
    ],
    ids=lambda cls: cls.__name__,
)
def test_timeouts_map_to_upstream_timeout(cls: type[httpx.TransportError]) -> None:
    error = map_transport_error(cls("timed out"), provider="primary")

    assert type(error) is UpstreamTimeoutError
    assert error.code == "upstream_timeout"
    assert error.retryable


@pytest.mark.parametrize(
    "cls",
    [cls for cls in MAPPED_CLASSES if not issubclass(cls, httpx.TimeoutException)],
    ids=lambda cls: cls.__name__,
)
def test_other_failures_are_not_timeouts(cls: type[httpx.TransportError]) -> None:
    error = map_transport_error(cls("failed"), provider="primary")

    assert error.code == "upstream_error"
