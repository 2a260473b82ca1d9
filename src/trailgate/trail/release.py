"""Trail formats by GoldenGate release: ``FORMAT RELEASE n.n`` to CompatibilityLevel, layout
and byte order, and back from a file header.

GoldenGate maps a release "programmatically back to an appropriate internal compatibility
level" (EXTTRAIL reference); the levels below are those public Logdump output shows (3, 6,
7) and the ones trailgate chose where nothing public shows them (docs/trail-format.md,
"Which formats trailgate writes and reads").  One small table keeps every writer and reader
on the same mapping.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from typing import Any

from trailgate.errors import ConfigError

__all__ = [
    "DEFAULT_FORMAT",
    "MAX_READ_LEVEL",
    "RELEASES",
    "TrailFormat",
    "encryption_line",
    "format_for_level",
    "parse_byte_order",
    "parse_release",
    "resolve_format",
    "sink_format_options",
]

#: The newest CompatibilityLevel trailgate reads (levels 4-8 with the 12c+ record layout).
MAX_READ_LEVEL = 8
#: Release -> (CompatibilityLevel, default byte order of the record headers): 12.1-19.1 write
#: big-endian by default (TRAILBYTEORDER, 12.3-19c), 21c the machine's own order.
RELEASES: dict[str, tuple[int, str]] = {
    "11.2": (3, "big"),
    "12.1": (4, "big"),
    "12.2": (5, "big"),
    "12.3": (6, "big"),
    "18.1": (6, "big"),
    "19.1": (7, "big"),
    "21.1": (7, sys.byteorder),
}
_DEFAULT_RELEASE = {3: "11.2", 4: "12.1", 5: "12.2", 6: "12.3", 7: "19.1", 8: "21.1"}
_RELEASE = re.compile(r"(\d+)\.(\d+)(?:\.\d+)*\Z")


@dataclass(frozen=True, slots=True)
class TrailFormat:
    """How one trail file is laid out: its release, CompatibilityLevel and the byte order of
    its record headers and column framing (the file header is big-endian in every format)."""

    release: str = "11.2"
    level: int = 3
    byte_order: str = "big"

    @property
    def seed_layout(self) -> bool:
        """True for the 11.2 layout of seeds 001/002 (CompatibilityLevel 3 or less)."""
        return self.level <= 3

    @property
    def self_describing(self) -> bool:
        """True when tables are named by DDR/TDR metadata records, not in each header."""
        return self.level >= 5

    @property
    def trans_ind_offset(self) -> int:
        """Offset of the TransInd byte from the start of a G record."""
        return 4 + 4 + (24 if self.seed_layout else 28)

    def describe(self) -> str:
        """``21.1 (CompatibilityLevel 7, little-endian)``."""
        return f"{self.release} (CompatibilityLevel {self.level}, {self.byte_order}-endian)"


DEFAULT_FORMAT = TrailFormat()


def parse_byte_order(text: str) -> str:
    """TRAILBYTEORDER's value: BIGENDIAN, LITTLEENDIAN or NATIVEENDIAN -> big | little."""
    word = text.upper()
    if word in ("BIGENDIAN", "BIG"):
        return "big"
    if word in ("LITTLEENDIAN", "LITTLE"):
        return "little"
    if word in ("NATIVEENDIAN", "NATIVE"):
        return sys.byteorder
    raise ValueError(f"TRAILBYTEORDER {text}: expected BIGENDIAN, LITTLEENDIAN or NATIVEENDIAN")


def parse_release(text: str, byte_order: str | None = None) -> TrailFormat:
    """The format ``FORMAT RELEASE text`` writes; ``byte_order`` (TRAILBYTEORDER) overrides
    the release's default for 12.1 and later.  ``ValueError`` names the releases written."""
    match = _RELEASE.match(text.strip())
    if match is None:
        raise ValueError(f"FORMAT RELEASE {text}: expected major.minor, e.g. 21.1")
    major, minor = int(match.group(1)), int(match.group(2))
    key = f"{major}.{minor}"
    if major == 19:
        key = "19.1"
    elif major == 21:
        key = "21.1"
    if key not in RELEASES:
        raise ValueError(f"FORMAT RELEASE {text}: trailgate writes releases "
                         f"{', '.join(RELEASES)} (docs/trail-format.md)")
    level, default_order = RELEASES[key]
    order = default_order if byte_order is None or level <= 3 else byte_order
    return TrailFormat(key, level, order)


def format_for_level(level: int, byte_order: str | None = None) -> TrailFormat:
    """The format a file of CompatibilityLevel ``level`` has (a Data Pump writing what it
    reads): the release trailgate writes at that level, in ``byte_order`` if given."""
    level = min(max(level, 0), MAX_READ_LEVEL)
    fmt = parse_release(_DEFAULT_RELEASE.get(max(level, 3), "11.2"), byte_order)
    return TrailFormat(fmt.release, level, fmt.byte_order)


def resolve_format(release: str | None, byte_order: str | None) -> TrailFormat:
    """The format of ``EXTTRAIL …, FORMAT RELEASE release [, TRAILBYTEORDER byte_order]``
    (either may be absent); ``ValueError`` says what is wrong."""
    order = parse_byte_order(byte_order) if byte_order else None
    fmt = parse_release(release or "11.2", order)
    if byte_order and fmt.seed_layout:
        raise ValueError("TRAILBYTEORDER needs FORMAT RELEASE 12.1 or later (the 11.2 format "
                         "is big-endian)")
    return fmt


def sink_format_options(spec: Any, crypt: Any = None) -> dict[str, str]:
    """The trail sink's options for a trail's ``FORMAT RELEASE``/``TRAILBYTEORDER``
    (``spec``: the parameter file's TrailOptions, or ``None``: the default 11.2 format)
    and its ``ENCRYPTTRAIL`` (``crypt``: a TrailCrypt, or ``None``); a ConfigError names
    the parameter file's line."""
    out: dict[str, str] = {}
    if crypt is not None:
        out["encryptTrail"] = crypt.cipher
        if crypt.key_name:
            out["keyName"] = crypt.key_name
    if spec is None:
        return out
    try:
        fmt = resolve_format(spec.release, spec.byte_order)
    except ValueError as exc:
        raise ConfigError(str(exc), path=spec.path, line=spec.line) from None
    if crypt is not None and not fmt.seed_layout:
        raise ConfigError(f"ENCRYPTTRAIL with FORMAT RELEASE {fmt.release}: trailgate "
                          "encrypts trails in the 11.2 format only; drop one of the two",
                          path=spec.path, line=spec.line)
    return {**out, "formatRelease": fmt.release, "trailByteOrder": fmt.byte_order}


def encryption_line(params: Any, label: str, *, pump: bool = False) -> str:
    """The report's line on how ``label`` (an output trail) is encrypted: its
    ENCRYPTTRAIL, and for a Data Pump what DECRYPTTRAIL makes of an encrypted input."""
    crypt = params.encrypt.get(label)
    if crypt is not None:
        return f"ENCRYPTTRAIL {crypt.cipher}-GCM, key {crypt.key_name or 'DEFAULT (master)'}"
    if pump and params.decrypt is None:
        return "as the input (an encrypted input stays encrypted, with its key)"
    return "none" + (" (DECRYPTTRAIL: written in the clear)" if pump else "")
