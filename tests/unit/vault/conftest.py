"""Vault fixtures: a state dir, and keyrings to put behind it (none, or an in-memory one).

No test here touches the real OS keyring: every ``Vault`` is given its keyring."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from gw.vault import OsKeyring, Vault


def no_keyring() -> OsKeyring:
    return OsKeyring.disabled("no keyring in unit tests")


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "state"


@pytest.fixture
def make_vault(home: Path) -> Callable[..., Vault]:
    """``make_vault(environ=..., keyring=...)``: a vault in ``home``, keyring-less unless
    a keyring factory is given."""

    def make(
        environ: dict[str, str] | None = None, keyring: Callable[[], OsKeyring] = no_keyring
    ) -> Vault:
        return Vault(home, environ or {}, keyring)

    return make


@pytest.fixture
def vault(make_vault: Callable[..., Vault]) -> Vault:
    return make_vault()
