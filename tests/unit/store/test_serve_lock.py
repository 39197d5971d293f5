"""ServeLock: one holder at a time, dropped on release, private to its owner."""

from __future__ import annotations

from pathlib import Path

import pytest

from gw.store.serve_lock import ServeLock, StateDirBusyError


def test_a_second_holder_is_refused_until_the_first_releases(tmp_path: Path) -> None:
    first, second = ServeLock(tmp_path / "home"), ServeLock(tmp_path / "home")
    first.acquire()
    assert (tmp_path / "home" / "serve.lock").stat().st_mode & 0o777 == 0o600
    with pytest.raises(StateDirBusyError):
        second.acquire()
    first.release()
    second.acquire()  # free again
    second.release()
    second.release()  # releasing twice is harmless
