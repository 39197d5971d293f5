"""What can go wrong with the vault. Every message says what is wrong, which file or
source, and what to do; none ever carries a secret or an identity.

    VaultError
    ├── NoVaultError            vault.age does not exist yet (run `gw vault init`)
    ├── VaultExistsError        `gw vault init` over an existing vault
    ├── VaultUnreadableError    not age, encrypted to another identity, or not a gw vault
    ├── IdentityError           no identity, a loose key file, a malformed key, a failed store
    ├── InvalidNameError        a secret name outside [A-Za-z0-9_.-]{1,64}
    └── UnknownSecretError      `rm` of a name the vault does not hold
"""

from __future__ import annotations


class VaultError(Exception):
    """The vault cannot do what was asked; ``str(error)`` is the message for the user."""


class NoVaultError(VaultError):
    pass


class VaultExistsError(VaultError):
    pass


class VaultUnreadableError(VaultError):
    pass


class IdentityError(VaultError):
    pass


class InvalidNameError(VaultError):
    pass


class UnknownSecretError(VaultError):
    pass
