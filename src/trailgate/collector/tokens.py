"""The collector's shared token: where it is kept and how each side finds it.

A Pump proves the token it shares with a collector (an HMAC over the session's nonce, see
``protocol``); both keep it in the home's credential store under an alias of one domain, so
the collector command, the Manager's collector and the Pump look it up the same way.
"""

from __future__ import annotations

from pathlib import Path

from trailgate.db.connect import CredentialStore

__all__ = ["TOKEN_DOMAIN", "stored_token"]

#: The credential store domain of collector tokens.
TOKEN_DOMAIN = "Collector"


def stored_token(home: Path, alias: str | None) -> str | None:
    """The token stored under ``alias`` in ``home``'s credential store (None: no alias, no
    token asked for); a missing alias is the store's clear error."""
    if not alias:
        return None
    return CredentialStore(home).get(alias, TOKEN_DOMAIN).password
