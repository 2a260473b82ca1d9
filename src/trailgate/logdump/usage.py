"""The error a Logdump command raises for arguments it cannot use.

Kept apart from the command table so the modules that define commands can raise it without
importing the table that lists them.
"""

from __future__ import annotations

__all__ = ["UsageError", "number"]


class UsageError(ValueError):
    """Arguments a command cannot use; the message is shown with the command's syntax."""


def number(text: str, what: str) -> int:
    """A non-negative whole number argument."""
    try:
        value = int(text, 0)
    except ValueError:
        raise UsageError(f"{what} must be a number, not {text!r}") from None
    if value < 0:
        raise UsageError(f"{what} must not be negative")
    return value
