"""The shared Redis the tests are given: ``GW_TEST_REDIS_URL``, else the local server at
127.0.0.1:6379. Tests that use it write under a key prefix of their own and delete what
they wrote. Where no Redis answers, a test cannot run: in CI (``CI`` set) it FAILS with the
reason, so the suite never passes without having run; elsewhere it is skipped with it.
(A test that stops or restarts Redis starts its own: tests/fakes/redis_server.py.)"""

from __future__ import annotations

import os
from typing import Final, NoReturn

import pytest

REDIS_URL: Final = os.environ.get("GW_TEST_REDIS_URL") or "redis://127.0.0.1:6379/0"


def redis_unavailable(reason: object) -> NoReturn:
    """Fail in CI, skip elsewhere, saying why."""
    message = f"Redis at {REDIS_URL} is needed and not available: {reason} (set GW_TEST_REDIS_URL)"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)
