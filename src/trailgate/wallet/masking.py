"""Passwords out of text that is echoed or logged: parameter files, commands, messages.

Three forms carry a password in what a user writes: GGSCI's and the parameter files'
``PASSWORD value`` (a quoted value may double its quote), a libpq keyword ``password=value``
(a quoted value may escape with a backslash) and a URI's ``scheme://user:password@host``.
Each is replaced by ``***``; what surrounds it stays, so the line still reads as written.
"""

from __future__ import annotations

import re

__all__ = ["has_secret", "mask_secrets"]

_SECRETS = (
    re.compile(r"(\bPASSWORD\s+)('(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|[^\s,;]+)", re.IGNORECASE),
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
