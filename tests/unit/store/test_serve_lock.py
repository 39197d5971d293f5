"""ServeLock: one holder at a time, dropped on release; ``serving`` tests without keeping."""

from __future__ import annotations

from pathlib import Path

import pytest

from gw.store.serve_lock import ServeLock, StateDirBusyError, serving


def test_a_second_holder_is_refused_until_the_first_releases(tmp_path: Path) -> None:
    first, second = ServeLock(tmp_path / "home"), ServeLock(tmp_path / "home")
    first.acquire()
    assert (tmp_path / "home" / "serve.lock").stat().st_mode & 0o777 == 0o600
    with pytest.raises(StateDirBusyError):
        second.acquire()
    assert serving(tmp_path / "home")
    first.release()
    assert not serving(tmp_path / "home")
    second.acquire()  # free again
    second.release()


def test_a_directory_never_served_is_not_serving(tmp_path: Path) -> None:
    assert not serving(tmp_path / "nothing-here")
    assert not (tmp_path / "nothing-here").exists()  # the probe creates nothing
