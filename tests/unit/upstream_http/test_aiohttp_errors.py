"""Every aiohttp client error maps, by table, to a gw error; timeouts to upstream_timeout."""

from __future__ import annotations

import aiohttp
import pytest

from gw.errors import UpstreamTimeoutError
from gw.upstream_http.aiohttp_errors import AIOHTTP_ERRORS, CAUGHT, map_aiohttp_error


def subclasses(root: type[BaseException]) -> list[type[BaseException]]:
    found: list[type[BaseException]] = [root]
    for child in root.__subclasses__():
        found += [cls for cls in subclasses(child) if cls not in found]
    return found


ALL = subclasses(aiohttp.ClientError)


def instance(cls: type[BaseException]) -> BaseException:
    """An instance without running constructors that need live connection objects."""
    return cls.__new__(cls)


@pytest.mark.parametrize("cls", ALL, ids=lambda c: c.__name__)
def test_each_aiohttp_error_takes_the_first_matching_row(cls: type[BaseException]) -> None:
    error = instance(cls)
    expected = next(row for row in AIOHTTP_ERRORS if isinstance(error, row[0]))
    mapped = map_aiohttp_error(error, provider="p")
    assert type(mapped) is expected[1]
    assert mapped.message == f"provider p: {expected[2]}"
    assert mapped.blame == "upstream"


@pytest.mark.parametrize("cls", ALL, ids=lambda c: c.__name__)
def test_only_clienterror_itself_reaches_the_generic_row(cls: type[BaseException]) -> None:
    error = instance(cls)
    row = next(row for row in AIOHTTP_ERRORS if isinstance(error, row[0]))
    assert (row[0] is aiohttp.ClientError) == (cls is aiohttp.ClientError)


def test_timeouts_are_upstream_timeouts() -> None:
    for cls in ALL:
        if issubclass(cls, TimeoutError):
            assert isinstance(map_aiohttp_error(instance(cls), provider="p"), UpstreamTimeoutError)
    assert isinstance(map_aiohttp_error(TimeoutError(), provider="p"), UpstreamTimeoutError)


def test_the_adapter_catches_exactly_what_the_table_maps() -> None:
    assert set(CAUGHT) == {aiohttp.ClientError, TimeoutError}
