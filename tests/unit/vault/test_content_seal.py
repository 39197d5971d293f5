"""ContentSeal: job content sealed with the vault's own identity, which survives restarts,
is created where `gw vault init` would put it, and is looked for only when first needed."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from unit.vault.conftest import no_keyring

from gw.vault import Identity, OsKeyring, Vault, VaultUnreadableError
from gw.vault.content_seal import ContentSeal
from gw.vault.sealing import is_age_file


def test_sealed_content_is_an_age_file_that_a_new_seal_opens_after_a_restart(home: Path) -> None:
    sealed = ContentSeal(home, {}, no_keyring).seal(b"MARKER prompt text")
    assert is_age_file(sealed)
    assert b"MARKER" not in sealed
    assert (home / "vault.key").exists()  # no keyring, no GW_VAULT_KEY: the key file
    assert ContentSeal(home, {}, no_keyring).open(sealed) == b"MARKER prompt text"


def test_the_vault_adopts_the_identity_and_gw_vault_key_is_used_first(
    home: Path, make_vault: Callable[..., Vault]
) -> None:
    identity = Identity.generate()
    environ = {"GW_VAULT_KEY": identity.secret_text()}
    sealed = ContentSeal(home, environ, no_keyring).seal(b"x")
    assert not (home / "vault.key").exists()
    assert ContentSeal(home, environ, no_keyring).identity() == identity
    made = ContentSeal(home, {}, no_keyring)
    made.seal(b"y")
    assert make_vault().init().recipient == made.identity().recipient  # no second key store
    with pytest.raises(VaultUnreadableError, match="another identity"):
        made.open(sealed)


def test_the_keyring_is_not_touched_until_content_is_sealed(home: Path) -> None:
    asked: list[str] = []

    def keyring() -> OsKeyring:
        asked.append("detect")
        return no_keyring()

    seal = ContentSeal(home, {}, keyring)
    assert asked == []
    seal.seal(b"x")
    assert asked == ["detect"]


def test_damaged_content_is_reported_not_decrypted(home: Path) -> None:
    with pytest.raises(VaultUnreadableError, match="not age-encrypted"):
        ContentSeal(home, {}, no_keyring).open(b"plain")
