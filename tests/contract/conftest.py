"""One fake OpenAI upstream per test module, reset before each test that uses it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from contract.upstream_harness import TRANSPORT_KINDS, use_transport
from fakes.openai_upstream import Behavior, FakeOpenAI


@pytest.fixture(scope="module")
def fake_server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


@pytest.fixture
def fake(fake_server: FakeOpenAI) -> FakeOpenAI:
    """The module's fake with no recorded requests, no script and the default behavior."""
    fake_server.clear()
    fake_server.default = Behavior()
    return fake_server


@pytest.fixture(autouse=True, params=TRANSPORT_KINDS)
def transport(request: pytest.FixtureRequest) -> Iterator[str]:
    """Every contract test runs once per upstream transport: both must keep the contract."""
    use_transport(request.param)
    yield request.param
    use_transport(TRANSPORT_KINDS[0])
