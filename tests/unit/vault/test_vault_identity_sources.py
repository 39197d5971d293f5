"""Where the identity comes from: GW_VAULT_KEY, else a usable OS keyring, else the key
file (0600 only). Headless machines have no keyring: that path must just work."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from keyring.backends import chainer, fail, null
from keyring.errors import KeyringLocked, NoKeyringError

from gw.vault import Identity, IdentityError, OsKeyring, Vault
from gw.vault.os_keyring import SERVICE, keyring_username

SECRET = "sk-sources-0123456789"


class MemoryKeyring:
    """A stand-in for a working keyring backend (duck-typed: subclassing keyring's
    KeyringBackend would register it with keyring for the whole test process)."""

    def __init__(self) -> None:
        self.entries: dict[tuple[str, str], str] = {}
        self.reads = 0

    def get_password(self, service: str, username: str) -> str | None:
        self.reads += 1
        return self.entries.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.entries[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        self.entries.pop((service, username), None)


def keyring_of(backend: object) -> Callable[[], OsKeyring]:
    return lambda: OsKeyring(backend)  # type: ignore[arg-type]


def never_asked() -> OsKeyring:
    raise AssertionError("the keyring must not be consulted while GW_VAULT_KEY is set")


# --- GW_VAULT_KEY -------------------------------------------------------------------


def test_the_environment_comes_first_and_the_keyring_is_never_touched(
    make_vault: Callable[..., Vault], home: Path
) -> None:
    identity = Identity.generate()
    vault = make_vault(environ={"GW_VAULT_KEY": identity.secret_text()}, keyring=never_asked)

    result = vault.init()
    vault.set("openai", SECRET)

    assert result.identity_source == "env"
    assert result.identity_location == "$GW_VAULT_KEY"
    assert result.recipient == identity.recipient
    assert not result.created_identity
    assert not (home / "vault.key").exists()
    assert vault.read()["openai"] == SECRET


def test_the_environment_wins_over_a_key_file(make_vault: Callable[..., Vault]) -> None:
    make_vault().init()  # identity in vault.key
    other = Identity.generate()
    vault = make_vault(environ={"GW_VAULT_KEY": other.secret_text()}, keyring=never_asked)

    located = vault.identities.require()

    assert located.source == "env"
    assert located.identity.recipient == other.recipient


def test_a_malformed_environment_key_is_named_but_never_quoted(
    make_vault: Callable[..., Vault],
) -> None:
    bogus = "AGE-SECRET-KEY-1NOTAREALKEYATALL"
    vault = make_vault(environ={"GW_VAULT_KEY": bogus}, keyring=never_asked)

    with pytest.raises(IdentityError) as caught:
        vault.init()

    assert "$GW_VAULT_KEY" in str(caught.value)
    assert bogus not in str(caught.value)


# --- a usable keyring ----------------------------------------------------------------


def test_a_usable_keyring_holds_a_new_identity_and_no_key_file_is_written(
    make_vault: Callable[..., Vault], home: Path
) -> None:
    backend = MemoryKeyring()
    vault = make_vault(keyring=keyring_of(backend))

    result = vault.init()
    vault.set("openai", SECRET)

    assert result.identity_source == "keyring"
    assert keyring_username(home) in result.identity_location
    assert not (home / "vault.key").exists()
    stored = backend.entries[(SERVICE, keyring_username(home))]
    assert Identity.parse(stored, where="test").recipient == result.recipient
    # A fresh process (a new Vault) finds it there.
    assert make_vault(keyring=keyring_of(backend)).read()["openai"] == SECRET


def test_one_keyring_entry_per_state_dir(tmp_path: Path) -> None:
    assert keyring_username(tmp_path / "a") != keyring_username(tmp_path / "b")
    assert keyring_username(tmp_path / "a" / ".." / "a") == keyring_username(tmp_path / "a")


def test_rotate_stores_the_new_identity_in_the_keyring(make_vault: Callable[..., Vault]) -> None:
    backend = MemoryKeyring()
    vault = make_vault(keyring=keyring_of(backend))
    vault.init()
    vault.set("openai", SECRET)

    result = vault.rotate()

    assert result.identity_source == "keyring"
    assert make_vault(keyring=keyring_of(backend)).status().recipient == result.recipient
    assert make_vault(keyring=keyring_of(backend)).read()["openai"] == SECRET


def test_a_key_file_is_used_when_the_keyring_has_no_entry(
    make_vault: Callable[..., Vault],
) -> None:
    created = make_vault().init()  # made on a machine without a keyring
    vault = make_vault(keyring=keyring_of(MemoryKeyring()))  # a keyring appeared since

    status = vault.status()

    assert status.identity_source == "file"
    assert status.recipient == created.recipient
    assert status.keyring.startswith("usable: ")


# --- keyrings that are not usable ------------------------------------------------------


class RaisingKeyring(MemoryKeyring):
    """A backend that fails on use, as a D-Bus without a secret-service daemon does."""

    def __init__(self, error: Exception) -> None:
        super().__init__()
        self.error = error

    def get_password(self, service: str, username: str) -> str | None:
        raise self.error

    def set_password(self, service: str, username: str, password: str) -> None:
        raise self.error


class ForgetfulKeyring(MemoryKeyring):
    """Accepts a value and keeps nothing (a chainer whose backends all decline)."""

    def set_password(self, service: str, username: str, password: str) -> None:
        pass


UNUSABLE: dict[str, Callable[[], object]] = {
    "fail backend": fail.Keyring,
    "null backend": null.Keyring,
    "chainer with nothing to chain": chainer.ChainerBackend,
    "RuntimeError on use (D-Bus, no daemon)": lambda: RaisingKeyring(
        RuntimeError("org.freedesktop.DBus.Error.ServiceUnknown")
    ),
    "NoKeyringError on use": lambda: RaisingKeyring(NoKeyringError("no backend")),
    "locked keyring": lambda: RaisingKeyring(KeyringLocked("locked")),
    "keeps nothing": ForgetfulKeyring,
}


@pytest.mark.parametrize("kind", list(UNUSABLE))
def test_an_unusable_keyring_falls_back_to_the_key_file(
    make_vault: Callable[..., Vault], home: Path, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What a chainer would chain depends on the machine; here it has nothing.
    monkeypatch.setattr(chainer.ChainerBackend, "backends", [])
    backend = UNUSABLE[kind]()
    vault = make_vault(keyring=keyring_of(backend))

    result = vault.init()
    vault.set("openai", SECRET)

    assert result.identity_source == "file"
    assert (home / "vault.key").exists()
    assert vault.status().keyring.startswith("unavailable: ")
    status = make_vault(keyring=keyring_of(backend)).status()  # as a later process sees it
    assert status.identity_source == "file"
    assert status.secrets == 1


def test_detect_treats_the_fail_backend_as_no_keyring(monkeypatch: pytest.MonkeyPatch) -> None:
    import keyring  # noqa: PLC0415  (patched for this test only)

    monkeypatch.setattr(keyring, "get_keyring", fail.Keyring)
    detected = OsKeyring.detect()

    assert not detected.usable
    assert "no keyring backend" in detected.reason


def test_detect_survives_a_backend_that_fails_to_load(monkeypatch: pytest.MonkeyPatch) -> None:
    import keyring  # noqa: PLC0415  (patched for this test only)

    def broken() -> object:
        raise RuntimeError("cannot connect to the session bus")

    monkeypatch.setattr(keyring, "get_keyring", broken)
    detected = OsKeyring.detect()

    assert not detected.usable
    assert "cannot connect to the session bus" in detected.reason


def test_with_no_source_at_all_the_error_names_each_one(
    make_vault: Callable[..., Vault], home: Path
) -> None:
    make_vault().init()
    (home / "vault.key").unlink()  # the identity is gone, the vault is still there

    with pytest.raises(IdentityError) as caught:
        make_vault().read()

    message = str(caught.value)
    assert "GW_VAULT_KEY is not set" in message
    assert "no keyring in unit tests" in message
    assert str(home / "vault.key") in message


# --- the key file -----------------------------------------------------------------------


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660, 0o666])
def test_a_key_file_readable_by_others_is_refused(
    make_vault: Callable[..., Vault], home: Path, mode: int
) -> None:
    make_vault().init()
    make_vault().set("openai", SECRET)
    key = home / "vault.key"
    before = (key.read_bytes(), make_vault().path.read_bytes())
    os.chmod(key, mode)

    for action in (lambda v: v.read(), lambda v: v.set("x", "y"), lambda v: v.status()):
        with pytest.raises(IdentityError) as caught:
            action(make_vault())
        message = str(caught.value)
        assert str(key) in message
        assert f"chmod 600 {key}" in message
        assert f"{mode:04o}" in message

    assert (key.read_bytes(), make_vault().path.read_bytes()) == before


@pytest.mark.parametrize("mode", [0o600, 0o400])
def test_an_owner_only_key_file_is_used(
    make_vault: Callable[..., Vault], home: Path, mode: int
) -> None:
    make_vault().init()
    make_vault().set("openai", SECRET)
    os.chmod(home / "vault.key", mode)

    assert make_vault().read()["openai"] == SECRET


def test_a_key_file_from_age_keygen_is_read(home: Path, make_vault: Callable[..., Vault]) -> None:
    identity = Identity.generate()
    home.mkdir(parents=True)
    key = home / "vault.key"
    key.write_text(
        f"# created: 2026-01-01T00:00:00Z\n# public key: {identity.recipient}\n"
        f"{identity.secret_text()}\n"
    )
    key.chmod(0o600)

    result = make_vault().init()

    assert result.identity_source == "file"
    assert result.recipient == identity.recipient
    assert not result.created_identity


def test_a_key_file_without_a_key_is_refused_clearly(
    home: Path, make_vault: Callable[..., Vault]
) -> None:
    home.mkdir(parents=True)
    key = home / "vault.key"
    key.write_text("# just a comment\n")
    key.chmod(0o600)

    with pytest.raises(IdentityError, match="does not hold one age identity"):
        make_vault().init()
