"""The vault as its commands use it: init, set, list, rm, rotate, status, with the key
file as the identity's home (no keyring)."""

from __future__ import annotations

import stat
from collections.abc import Callable
from pathlib import Path

import pyrage
import pytest

from gw.vault import (
    Identity,
    IdentityError,
    InvalidNameError,
    UnknownSecretError,
    Vault,
    VaultError,
    VaultExistsError,
)
from gw.vault.sources import LocatedIdentity

SECRET = "sk-proj-roundtrip-0123456789"


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_init_creates_an_empty_vault_and_an_owner_only_key_file(vault: Vault, home: Path) -> None:
    result = vault.init()

    assert result.created_identity
    assert result.identity_source == "file"
    assert result.identity_location == str(home / "vault.key")
    assert result.recipient.startswith("age1")
    assert mode_of(home / "vault.key") == 0o600
    assert mode_of(home / "vault.age") == 0o600
    assert vault.names() == []
    key_text = (home / "vault.key").read_text()
    assert key_text.startswith("# created: ")
    assert f"# public key: {result.recipient}\n" in key_text


def test_set_list_read_and_remove_round_trip(vault: Vault) -> None:
    vault.init()

    assert vault.set("openai", SECRET) == 1
    assert vault.set("anthropic.prod-2", "sk-ant-0123") == 2
    assert vault.names() == ["anthropic.prod-2", "openai"]
    assert vault.read()["openai"] == SECRET

    assert vault.set("openai", "sk-replaced") == 2
    assert vault.read()["openai"] == "sk-replaced"

    assert vault.remove("openai") == 1
    assert vault.names() == ["anthropic.prod-2"]


def test_a_secret_keeps_every_character(vault: Vault) -> None:
    vault.init()
    odd = ' multi\nline "quoted" \\ unicode é ✓ \t '
    vault.set("odd", odd)
    assert vault.read()["odd"] == odd


@pytest.mark.parametrize("name", ["", "has space", "slash/name", "x" * 65, "tab\t", "vault:x"])
def test_invalid_names_are_refused_before_anything_is_written(vault: Vault, name: str) -> None:
    vault.init()
    before = vault.path.read_bytes()
    with pytest.raises(InvalidNameError, match=r"A-Z a-z 0-9 _ \. -"):
        vault.set(name, SECRET)
    assert vault.path.read_bytes() == before


def test_the_longest_name_is_accepted(vault: Vault) -> None:
    vault.init()
    vault.set("n" * 64, SECRET)
    assert vault.names() == ["n" * 64]


def test_an_empty_secret_is_refused(vault: Vault) -> None:
    vault.init()
    with pytest.raises(VaultError, match="empty"):
        vault.set("openai", "")
    assert vault.names() == []


def test_removing_an_unknown_name_changes_nothing(vault: Vault) -> None:
    vault.init()
    vault.set("openai", SECRET)
    before = vault.path.read_bytes()
    with pytest.raises(UnknownSecretError, match="no secret named 'ghost'"):
        vault.remove("ghost")
    assert vault.path.read_bytes() == before


def test_init_refuses_an_existing_vault_and_keeps_it(vault: Vault) -> None:
    vault.init()
    vault.set("openai", SECRET)
    before = vault.path.read_bytes()
    with pytest.raises(VaultExistsError, match="already exists"):
        vault.init()
    assert vault.path.read_bytes() == before
    assert vault.read()["openai"] == SECRET


def test_init_reuses_an_identity_that_already_exists(vault: Vault, home: Path) -> None:
    first = vault.init()
    vault.path.unlink()  # the user moved the vault away to start over

    again = vault.init()

    assert not again.created_identity
    assert again.recipient == first.recipient


def test_rotate_re_encrypts_to_a_new_identity_and_keeps_every_secret(
    vault: Vault, home: Path
) -> None:
    first = vault.init()
    vault.set("openai", SECRET)
    vault.set("anthropic", "sk-ant-0123")
    old_identity = Identity.parse((home / "vault.key").read_text(), where="old key")

    result = vault.rotate()

    assert result.old_recipient == first.recipient
    assert result.recipient != first.recipient
    assert result.secrets == 2
    assert result.identity_source == "file"
    assert mode_of(home / "vault.key") == 0o600
    assert dict(vault.read()) == {"openai": SECRET, "anthropic": "sk-ant-0123"}
    with pytest.raises(pyrage.DecryptError):
        pyrage.decrypt(vault.path.read_bytes(), [old_identity.native])


def test_rotate_refuses_an_identity_from_the_environment(
    make_vault: Callable[..., Vault],
) -> None:
    key = Identity.generate().secret_text()
    vault = make_vault(environ={"GW_VAULT_KEY": key})
    vault.init()
    vault.set("openai", SECRET)
    before = vault.path.read_bytes()

    with pytest.raises(IdentityError, match="GW_VAULT_KEY, which gw cannot change"):
        vault.rotate()

    assert vault.path.read_bytes() == before


def test_status_reports_the_source_the_recipient_and_the_count(vault: Vault, home: Path) -> None:
    before = vault.status()
    assert not before.exists
    assert before.identity_source is None
    assert before.secrets is None

    created = vault.init()
    vault.set("openai", SECRET)
    after = vault.status()

    assert after.exists
    assert after.path == str(home / "vault.age")
    assert after.identity_source == "file"
    assert after.identity_location == str(home / "vault.key")
    assert after.recipient == created.recipient
    assert after.secrets == 1
    assert after.keyring == "unavailable: no keyring in unit tests"


def test_no_repr_shows_a_secret_or_the_identity(vault: Vault) -> None:
    vault.init()
    vault.set("openai", SECRET)
    identity = vault.identities.require()
    key = identity.identity.secret_text()
    shown = " ".join(
        repr(thing)
        for thing in (
            vault,
            vault.read(),
            identity,
            identity.identity,
            vault.status(),
            LocatedIdentity(identity=identity.identity, source="file", where="x"),
        )
    )
    assert SECRET not in shown
    assert key not in shown
    assert "openai" in repr(vault.read())
