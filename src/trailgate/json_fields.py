"""JSON objects checked against a dataclass's annotations before it is built from them.

The group registry and the trail interchange both read JSON a person may have edited; a
field of the wrong JSON type must be a message naming it, not a dataclass holding a list
where a string belongs.  The expected types come from the dataclass's own annotations, so a
field added to the class is checked without a second list to keep in step.
"""

from __future__ import annotations

import types
import typing
from typing import Any

__all__ = ["check_fields", "fits", "json_type"]


def fits(value: Any, hint: Any) -> bool:
    """Whether the JSON ``value`` has the type ``hint`` names (a dataclass field's)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return any(fits(value, a) for a in args)
    if hint is type(None):
        return value is None
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint in (str, bool):
        return isinstance(value, hint)
    if origin in (list, tuple):
        return isinstance(value, list) and all(fits(v, args[0]) for v in value)
    if origin is dict or hint in (list, tuple, dict):
        return isinstance(value, list if hint is tuple else (origin or hint))
    return True  # a nested dataclass or an enum: built and checked by the caller


def json_type(value: Any) -> str:
    """``value``'s JSON type, as a person would name it."""
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean",
            int: "a number", float: "a number", type(None): "null"}.get(type(value), "a value")


def check_fields(cls: type, data: dict[str, Any], what: str,
                 skip: typing.Collection[str] = ()) -> None:
    """Raise ``ValueError`` naming the first field of ``data`` that ``cls`` does not have,
    or whose JSON type its annotation does not allow (fields in ``skip`` are built by the
    caller)."""
    hints = typing.get_type_hints(cls)
    for key, value in data.items():
        if key not in hints:
            raise ValueError(f"{what} has no field {key!r}")
        if key not in skip and not fits(value, hints[key]):
            raise ValueError(f"{what}: {key!r} cannot be {json_type(value)} {value!r:.40}")
