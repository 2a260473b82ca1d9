"""Who may call the Manager's REST API: a token, or a credential-store user.

* ``Authorization: Bearer …``: ``dircrd/mgr.token``, made (0600) on the first start;
  whoever can read the home's credentials may act, as with GGSCI.
* ``Authorization: Basic …``: a credential-store alias of domain ``Manager`` (``ALTER
  CREDENTIALSTORE ADD USER admin PASSWORD … ALIAS console DOMAIN Manager``).

Every ``/api`` call needs one, reads included; ``/metrics`` is open, as Prometheus scrapes
it on loopback.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import os
import secrets
from pathlib import Path

from trailgate.db.connect import CredentialStore
from trailgate.home import Home

__all__ = ["MANAGER_DOMAIN", "check_authorization", "ensure_token", "token_file"]

MANAGER_DOMAIN = "Manager"


def token_file(home: Home) -> Path:
    return home.dircrd / "mgr.token"


def ensure_token(home: Home) -> str:
    """The Manager's token, made (0600) on first use."""
    path = token_file(home)
    try:
        token = path.read_text("utf-8").strip()
        if token:
            return token
    except FileNotFoundError:
        pass
    home.dircrd.mkdir(mode=0o700, parents=True, exist_ok=True)
    token = secrets.token_urlsafe(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(token + "\n")
    return token


def _users(home: Home) -> list[tuple[str, str]]:
    try:
        return [(c.userid, c.password) for c in CredentialStore(home.path).list()
                if c.domain == MANAGER_DOMAIN]
    except Exception:  # no store, or an unreadable one: no users
        return []


def check_authorization(home: Home, token: str, header: str | None) -> str | None:
    """The caller's name when ``header`` (an Authorization header) is valid, else None."""
    if not header:
        return None
    scheme, _, value = header.strip().partition(" ")
    value = value.strip()
    if scheme.lower() == "bearer":
        return "token" if value and hmac.compare_digest(value.encode(), token.encode()) \
            else None
    if scheme.lower() == "basic":
        try:
            user, _, password = base64.b64decode(value, validate=True).decode(
                "utf-8").partition(":")
        except (binascii.Error, UnicodeDecodeError):
            return None
        for known, secret in _users(home):
            if hmac.compare_digest(user.encode(), known.encode()) and \
                    hmac.compare_digest(password.encode(), secret.encode()):
                return user
    return None
