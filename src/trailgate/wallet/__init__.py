"""The home's secrets: the credential store and the master-key wallet, both sealed.

A layer of its own between ``home`` and ``db``/``params``/``trail``: the connection code
resolves ``USERIDALIAS`` here and trail encryption asks :func:`master_key` for the key its
files name, without either depending on the other.  docs/security.md says how the sealing
key is kept and what each choice protects against.
"""

from trailgate.wallet.credentials import DEFAULT_DOMAIN, Credential, CredentialStore
from trailgate.wallet.keys import KEY_FILE_ENV, PASSPHRASE_ENV, key_file_path
from trailgate.wallet.masterkey import (
    DEFAULT_MASTERKEY_NAME,
    MasterKey,
    MasterKeyVersion,
    MasterKeyWallet,
    master_key,
)

__all__ = [
    "DEFAULT_DOMAIN",
    "DEFAULT_MASTERKEY_NAME",
    "KEY_FILE_ENV",
    "PASSPHRASE_ENV",
    "Credential",
    "CredentialStore",
    "MasterKey",
    "MasterKeyVersion",
    "MasterKeyWallet",
    "key_file_path",
    "master_key",
]
