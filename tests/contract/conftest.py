"""One fake OpenAI upstream per test module, reset before each test that uses it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

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
