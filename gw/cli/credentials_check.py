"""The credential check of ``gw config validate``: the config's key references against this
shell's environment and the state dir's vault (gw/config/credentials.py)."""

from __future__ import annotations

import os
from pathlib import Path

from gw.adapters.secrets import vault_references
from gw.config.credentials import CredentialReport, check_credentials
from gw.config.schema import Config
from gw.vault import Vault, VaultError


def check_here(config: Config, home: Path) -> CredentialReport:
    """What ``config``'s providers lack here; the vault is opened only when the config
    names a secret in it (as ``gw serve`` does)."""
    names: set[str] | None = None
    vault_error = None
    if vault_references(config):
        try:
            names = set(Vault(home, os.environ).names())
        except VaultError as error:
            vault_error = str(error)
    return check_credentials(config, os.environ, names, vault_error=vault_error)
