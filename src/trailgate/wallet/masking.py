"""Passwords out of text that is echoed or logged: parameter files, commands, messages.

Three forms carry a password in what a user writes: GGSCI's and the parameter files'
``PASSWORD value`` (a quoted value may double its quote), a libpq keyword ``password=value``
(a quoted value may escape with a backslash) and a URI's ``scheme://user:password@host``.
Each is replaced by ``***``; what surrounds it stays, so the line still reads as written.
"""

from __future__ import annotations

import re

__all__ = ["PASSWORD_CLAUSE", "has_secret", "mask_secrets"]

#: A ``PASSWORD value`` clause's value (not ``=``: that is libpq's keyword, masked below)
_VALUE = r"(?!=)('(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|[^\s,;]+)"
#: A whole ``[,] PASSWORD value`` clause, for text that drops it rather than masks it
PASSWORD_CLAUSE = re.compile(r"\s*,?\s*\bPASSWORD\s+" + _VALUE, re.IGNORECASE)

_SECRETS = (
    re.compile(r"(\bPASSWORD\s+)" + _VALUE, re.IGNORECASE),
    re.compile(r"(\b(?:PG)?PASSWORD\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", re.IGNORECASE),
    re.compile(r"(://[^:/@\s]+:)([^@\s]+)(?=@)"),
)


def mask_secrets(text: str) -> str:
    """``text`` with every password replaced by ``***``."""
    for pattern in _SECRETS:
        text = pattern.sub(lambda m: m.group(1) + "***", text)
    return text


def has_secret(text: str) -> bool:
    """Whether ``text`` holds a password :func:`mask_secrets` would mask."""
    return any(pattern.search(text) for pattern in _SECRETS)
