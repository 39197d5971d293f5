"""age encryption of a vault's contents, and why a file cannot be opened.

A file that does not begin like an age file is reported as such; an age file that does
not decrypt with our identity is reported as encrypted to another identity (or damaged);
one that decrypts to something other than a NAME -> secret object is "not a gw vault".
The classification reads the file's own header, never pyrage's error text.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Final

import pyrage  # type: ignore[import-untyped]  # pyrage ships no type information

from gw.vault.contents import Secrets, decode_secrets, encode_secrets
from gw.vault.errors import VaultUnreadableError
from gw.vault.identity import Identity

AGE_BINARY_MAGIC: Final = b"age-encryption.org/v1\n"
AGE_ARMOR_MAGIC: Final = b"-----BEGIN AGE ENCRYPTED FILE-----"


def is_age_file(data: bytes) -> bool:
    return data.startswith(AGE_BINARY_MAGIC) or data.lstrip().startswith(AGE_ARMOR_MAGIC)


def seal(secrets: Secrets, recipients: Sequence[Identity]) -> bytes:
    """The binary age file of ``secrets``, decryptable by any of ``recipients``."""
    natives = [identity.native_recipient() for identity in recipients]
    return bytes(pyrage.encrypt(encode_secrets(secrets), natives))


def unseal(data: bytes, identity: Identity, *, path: Path, where: str) -> Secrets:
    """The secrets in ``data`` (read from ``path``); ``where`` names the identity's source."""
    keep = "gw leaves it untouched"
    if not is_age_file(data):
        raise VaultUnreadableError(
            f"{path} is not an age-encrypted file (damaged, or not a gw vault); {keep}: "
            "restore it from a backup, or move it away and run `gw vault init`"
        )
    try:
        document = bytes(pyrage.decrypt(data, [identity.native]))
    except pyrage.DecryptError:
        raise VaultUnreadableError(
            f"{path} does not decrypt with the vault identity from {where} "
            f"(recipient {identity.recipient}): it was encrypted to another identity, or it "
            f"is damaged; {keep}: use the identity it was made for (GW_VAULT_KEY, the OS "
            "keyring or vault.key), or restore the file from a backup"
        ) from None
    secrets = decode_secrets(document)
    if isinstance(secrets, str):
        raise VaultUnreadableError(
            f"{path} decrypts, but is not a gw vault: {secrets}; {keep}: "
            "fix it with `age -d`/`age -r`, or move it away and run `gw vault init`"
        )
    return secrets
