"""A vault file gw cannot open (not age, another identity, damaged, not a gw vault) gives
an error that says what is wrong, which file, and what to do, and nothing overwrites it."""

from __future__ import annotations

from collections.abc import Callable

import pyrage
import pytest

from gw.vault import Identity, Vault, VaultError, VaultExistsError, VaultUnreadableError

SECRET = "sk-unreadable-0123456789"


def changes(vault: Vault) -> dict[str, Callable[[], object]]:
    return {
        "set": lambda: vault.set("new", "sk-new-0123"),
        "rm": lambda: vault.remove("openai"),
        "rotate": vault.rotate,
        "read": vault.read,
        "status": vault.status,
    }


def assert_untouched(vault: Vault, before: bytes, key_before: bytes, match: str) -> None:
    for name, action in changes(vault).items():
        with pytest.raises(VaultUnreadableError, match=match) as caught:
            action()
        message = str(caught.value)
        assert str(vault.path) in message, name
        assert "untouched" in message, name
        assert SECRET not in message, name
    with pytest.raises(VaultExistsError):
        vault.init()
    assert vault.path.read_bytes() == before
    assert vault.identities.key_path.read_bytes() == key_before


@pytest.fixture
def filled(vault: Vault) -> Vault:
    vault.init()
    vault.set("openai", SECRET)
    return vault


@pytest.mark.parametrize(
    "content",
    [b"", b"garbage \x00\x01\x02", b'{"openai": "sk-plaintext"}', b"age-encryption.org/v2\n"],
    ids=["empty", "binary garbage", "plain JSON", "another format"],
)
def test_a_file_that_is_not_age_is_reported_and_kept(filled: Vault, content: bytes) -> None:
    filled.path.write_bytes(content)
    key_before = filled.identities.key_path.read_bytes()

    assert_untouched(filled, content, key_before, "is not an age-encrypted file")


def test_a_file_for_another_identity_is_reported_and_kept(filled: Vault) -> None:
    stranger = Identity.generate()
    foreign = pyrage.encrypt(b'{"theirs": "sk-theirs"}', [stranger.native_recipient()])
    filled.path.write_bytes(foreign)
    key_before = filled.identities.key_path.read_bytes()

    assert_untouched(filled, foreign, key_before, "does not decrypt with the vault identity")
    # The owner of that identity still reads every byte of it.
    assert pyrage.decrypt(filled.path.read_bytes(), [stranger.native]) == b'{"theirs": "sk-theirs"}'


def test_a_truncated_vault_is_reported_and_kept(filled: Vault) -> None:
    damaged = filled.path.read_bytes()[:-20]
    filled.path.write_bytes(damaged)
    key_before = filled.identities.key_path.read_bytes()

    assert_untouched(filled, damaged, key_before, "does not decrypt")


@pytest.mark.parametrize(
    ("document", "reason"),
    [
        (b"not json at all " + SECRET.encode(), "not JSON"),
        (b'["a", "list"]', "not an object of NAME -> secret"),
        (b'{"openai": 42}', "not an object of NAME -> secret"),
        (b'{"has space": "' + SECRET.encode() + b'"}', "names gw does not accept"),
    ],
)
def test_an_age_file_that_is_not_a_gw_vault_is_reported_and_kept(
    filled: Vault, document: bytes, reason: str
) -> None:
    identity = filled.identities.require().identity
    sealed = pyrage.encrypt(document, [identity.native_recipient()])
    filled.path.write_bytes(sealed)
    key_before = filled.identities.key_path.read_bytes()

    assert_untouched(filled, sealed, key_before, reason)


def test_every_vault_error_is_a_vault_error() -> None:
    assert issubclass(VaultUnreadableError, VaultError)
