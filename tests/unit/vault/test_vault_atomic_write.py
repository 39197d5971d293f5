"""A crash while writing leaves the previous vault whole: failures raised inside the
write, and a process that dies between writing the temporary file and renaming it."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from gw.vault import Identity, Vault, VaultError
from gw.vault.sources import IdentityChain

SECRET = "sk-atomic-0123456789"


def stray_temp_files(home: Path) -> list[str]:
    return sorted(p.name for p in home.iterdir() if p.name.endswith(".tmp"))


@pytest.fixture
def filled(vault: Vault) -> Vault:
    vault.init()
    vault.set("openai", SECRET)
    return vault


@pytest.mark.parametrize("step", ["fsync", "replace"])
def test_a_failed_write_leaves_the_old_vault_and_no_temp_file(
    filled: Vault, home: Path, monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    before = filled.path.read_bytes()

    def crash(*args: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(f"gw.vault.atomic_file.os.{step}", crash)
    with pytest.raises(VaultError, match="previous vault is unchanged"):
        filled.set("anthropic", "sk-ant-0123")
    monkeypatch.undo()

    assert filled.path.read_bytes() == before
    assert dict(filled.read()) == {"openai": SECRET}
    assert stray_temp_files(home) == []


CRASH_BEFORE_RENAME = """
import os, sys
from pathlib import Path
import gw.vault.atomic_file as atomic
from gw.vault import OsKeyring, Vault

def die(*args):
    os._exit(17)  # the process dies: no cleanup, no exception handlers

atomic.os.replace = die
Vault(Path(sys.argv[1]), {}, lambda: OsKeyring.disabled("test")).set("anthropic", "sk-ant-0123")
"""


def test_a_process_killed_before_the_rename_leaves_the_old_vault(filled: Vault, home: Path) -> None:
    before = filled.path.read_bytes()

    died = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(CRASH_BEFORE_RENAME), str(home)], check=False
    )

    assert died.returncode == 17
    assert filled.path.read_bytes() == before
    assert dict(filled.read()) == {"openai": SECRET}
    assert len(stray_temp_files(home)) == 1  # the half-done write, beside the vault
    assert filled.set("anthropic", "sk-ant-0123") == 2  # the vault works on ...
    assert stray_temp_files(home) == []  # ... and the next writer clears the leftover


def test_rotate_that_cannot_store_the_new_identity_keeps_the_old_one_working(
    filled: Vault, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old_key = (home / "vault.key").read_text()

    def refuse(self: IdentityChain, current: object, identity: Identity) -> None:
        raise OSError(13, "Permission denied")

    monkeypatch.setattr(IdentityChain, "replace", refuse)
    with pytest.raises(OSError, match="Permission denied"):
        filled.rotate()
    monkeypatch.undo()

    assert (home / "vault.key").read_text() == old_key
    assert dict(filled.read()) == {"openai": SECRET}


CRASH_AFTER_KEY_STORED = """
import os, sys
from pathlib import Path
import gw.vault.vault as vault_module
from gw.vault import OsKeyring, Vault

real_write = vault_module.write_atomic
writes = []

def write_then_die_on_the_third(path, data, **kw):
    writes.append(path.name)
    if len(writes) == 3:  # vault to old+new, key file, then (here) vault to new only
        os._exit(17)
    real_write(path, data, **kw)

vault_module.write_atomic = write_then_die_on_the_third
import gw.vault.keyfile as keyfile
def counted_key_write(path, data, **kw):
    writes.append(path.name)
    real_write(path, data, **kw)
keyfile.write_atomic = counted_key_write
Vault(Path(sys.argv[1]), {}, lambda: OsKeyring.disabled("test")).rotate()
"""


def test_rotate_killed_after_storing_the_new_identity_still_opens(
    filled: Vault, home: Path
) -> None:
    old_key = (home / "vault.key").read_text()

    died = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(CRASH_AFTER_KEY_STORED), str(home)], check=False
    )

    assert died.returncode == 17
    assert (home / "vault.key").read_text() != old_key  # the new identity was stored
    assert dict(filled.read()) == {"openai": SECRET}  # and opens the vault on disk
