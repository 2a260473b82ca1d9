"""A pytest plugin for the sanitizer run's third pass: every call the tests make into a
sanitized extension is first made again a few times with mutated arguments (bytes cut or
with bytes and lengths changed, integers moved past their buffer's end, made negative or
huge), the outcome ignored; then the real call is made and the test goes on as usual.

The tests' own calls hold the shapes the C code expects, so a mutation of one argument
reaches deep into the parsers, where random arguments would stop at the type checks; the
sanitizers then say whether any such call reads or writes outside its buffers.  Lists and
other mutable arguments are copied for the mutated calls, so their effects stay out of the
test.  ``TRAILGATE_SANITIZE_SEED`` seeds the mutations (the run prints the seed it used).
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import json
import os
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: functions that set the module up (called at import) rather than take input
_SET_UP = frozenset({"register_dataclass", "set_column_kinds"})
#: extensions whose functions take raw addresses (libpq's) by design: not mutated
_RAW_POINTERS = ("_copypump",)
#: functions of other extensions that take them: not mutated either (a mutated connection
#: address is a crash by design, not a finding)
_RAW_POINTER_FUNCTIONS = frozenset({"bind_libpq", "drain"})

_seed = int(os.environ.get("TRAILGATE_SANITIZE_SEED") or random.randrange(1 << 30))
_rng = random.Random(_seed)
_counts = {"calls": 0, "mutated": 0}


def _mutate(value: Any, sizes: list[int]) -> Any:
    if isinstance(value, bytes):
        if not value:
            return _rng.randbytes(_rng.randrange(1, 4))
        if _rng.random() < 0.3:
            return value[:_rng.randrange(len(value))]
        blob = bytearray(value)
        for _ in range(_rng.randrange(1, 4)):
            at = _rng.randrange(len(blob))
            if _rng.random() < 0.5:
                blob[at] = _rng.randrange(256)
            else:  # a length field: 0, 1 or huge
                blob[at:at + 2] = _rng.choice([b"\x00\x00", b"\xff\xff", b"\x7f\xff", b"\x00\x01"])
        return bytes(blob)
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        end = max(sizes, default=0)
        return _rng.choice([value + 1, value - 1, value + 4, -1, 0, end + 1, end + 9, 1 << 31])
    if isinstance(value, tuple) and value:
        at = _rng.randrange(len(value))
        return (*value[:at], _mutate(value[at], sizes), *value[at + 1:])
    return value


def _copy(value: Any) -> Any:
    return list(value) if isinstance(value, list) else \
        bytearray(value) if isinstance(value, bytearray) else value


def _wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        _counts["calls"] += 1
        if args and _counts["calls"] % 3 == 0:
            sizes = [len(a) for a in args if isinstance(a, bytes | list)]
            for _ in range(4):
                mutated = [_copy(a) for a in args]
                for _ in range(_rng.randrange(1, 3)):
                    at = _rng.randrange(len(mutated))
                    mutated[at] = _mutate(mutated[at], sizes)
                _counts["mutated"] += 1
                with contextlib.suppress(Exception):  # the outcome is not the point
                    fn(*mutated, **kwargs)
        return fn(*args, **kwargs)

    return call


def pytest_configure(config: Any) -> None:
    manifest = json.loads(Path(os.environ["TRAILGATE_SANITIZED_MANIFEST"]).read_text())
    for name in manifest:
        if name.endswith(_RAW_POINTERS):
            continue
        module = importlib.import_module(name)
        for attr in dir(module):
            fn = getattr(module, attr)
            if (not attr.startswith("_") and attr not in _SET_UP
                    and attr not in _RAW_POINTER_FUNCTIONS
                    and type(fn).__name__ == "builtin_function_or_method"):
                setattr(module, attr, _wrap(fn))
    print(f"sanitizer_mutate: TRAILGATE_SANITIZE_SEED={_seed}")


def pytest_unconfigure(config: Any) -> None:
    print(f"sanitizer_mutate: {_counts['calls']} calls, {_counts['mutated']} mutated "
          f"(TRAILGATE_SANITIZE_SEED={_seed})")
