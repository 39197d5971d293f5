"""Every test of gw's own HTTP/1.1 client runs on uvloop (what gw serve runs on) and on
asyncio's own loop."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

import pytest
import uvloop


@pytest.fixture(params=["uvloop", "asyncio"])
def run(request: pytest.FixtureRequest) -> Callable[[Coroutine[Any, Any, Any]], Any]:
    if request.param == "uvloop":
        return uvloop.run
    return asyncio.run
