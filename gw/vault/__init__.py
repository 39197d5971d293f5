"""Provider credentials in an age-encrypted file (L3): ``Vault`` reads and changes
``<state-dir>/vault.age``; its identity comes from ``GW_VAULT_KEY``, the OS keyring or
``<state-dir>/vault.key`` (gw/vault/sources.py says in which order)."""

from gw.vault.contents import NAME_RULE, Secrets, check_name, is_valid_name
from gw.vault.errors import (
    IdentityError,
    InvalidNameError,
    NoVaultError,
    UnknownSecretError,
    VaultError,
    VaultExistsError,
    VaultUnreadableError,
)
from gw.vault.identity import Identity
from gw.vault.os_keyring import OsKeyring
from gw.vault.sources import ENV_VAR, KEY_FILE_NAME, IdentitySource
from gw.vault.vault import (
    LOCK_FILE_NAME,
    VAULT_FILE_NAME,
    InitResult,
    RotateResult,
    Vault,
    VaultStatus,
)

__all__ = [
    "ENV_VAR",
    "KEY_FILE_NAME",
    "LOCK_FILE_NAME",
    "NAME_RULE",
    "VAULT_FILE_NAME",
    "Identity",
    "IdentityError",
    "IdentitySource",
    "InitResult",
    "InvalidNameError",
    "NoVaultError",
    "OsKeyring",
    "RotateResult",
    "Secrets",
    "UnknownSecretError",
    "Vault",
    "VaultError",
    "VaultExistsError",
    "VaultStatus",
    "VaultUnreadableError",
    "check_name",
    "is_valid_name",
]
