"""The trail file header (``F`` … ``Z``): five token groups, as seed 001 and seed 002 show.

Tokens are type/flag/length sub-records; a reader skips types it does not know (seed 002's
compatibility rule) and refuses a file whose CompatibilityLevel is newer than it reads.
"""

from __future__ import annotations

import copy
import os
import platform
import socket
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import BinaryIO, ClassVar

from trailgate.model import julian_from_unix_micros
from trailgate.trail.release import MAX_READ_LEVEL

__all__ = [
    "COMPATIBILITY_LEVEL",
    "SIGNATURE",
    "DatabaseInfo",
    "FileHeader",
    "HeaderToken",
    "MachineInfo",
    "ProducerInfo",
    "TrailEncryption",
    "decode_file_header",
    "home_uri",
    "read_file_header",
]

SIGNATURE = b"GG\r\nTL\n\r"
#: The CompatibilityLevel of the 11.2 format (seed 001), the one trailgate writes by default.
COMPATIBILITY_LEVEL = 3
UNSET = 0xFF  # token flag: the field is not filled in yet (the file is open)
CSN_FIELD = 129
VENDOR_ORACLE = 7
VENDOR_POSTGRESQL = 21

GROUP_NAMES = {
    0x30: "TrailInfo",
    0x31: "MachineInfo",
    0x32: "DatabaseInfo",
    0x33: "ProducerInfo",
    0x34: "ContinuityInfo",
    0x35: "EncryptionInfo",
}
TOKEN_NAMES = {
    0x30: {0x30: "Signature", 0x31: "CompatibilityLevel", 0x32: "Charset",
           0x33: "CreationTime", 0x34: "URI", 0x35: "URIHistory", 0x36: "Filename",
           0x37: "MultiPart", 0x38: "Seqno", 0x39: "FileSize", 0x3A: "FirstCSN",
           0x3B: "LastCSN", 0x3C: "FirstIOTime", 0x3D: "LastIOTime"},
    0x31: {0x30: "OSName", 0x31: "HostName", 0x32: "OSRelease", 0x33: "OSVersion",
           0x34: "Hardware"},
    0x32: {0x30: "VendorType", 0x31: "Name", 0x32: "InstanceName", 0x33: "Charset",
           0x34: "MajorVersion", 0x35: "MinorVersion", 0x36: "VersionString", 0x37: "Flags",
           0x38: "ClientVersion", 0x39: "Token39", 0x3A: "Token3A", 0x3B: "Token3B",
           0x3C: "CaseSensitivity", 0x3D: "TimeZone"},
    0x33: {0x30: "Name", 0x31: "DataSource", 0x32: "MajorVersion", 0x33: "MinorVersion",
           0x34: "MaintenanceVersion", 0x35: "PatchVersion", 0x36: "BuildVersion",
           0x37: "VersionString"},
    0x34: {0x30: "RecoveryMode"},
    0x35: {0x30: "Cipher", 0x31: "KeyName", 0x32: "KeyVersion", 0x33: "KeyFingerprint"},
}


@dataclass(slots=True)
class MachineInfo:
    """Operating system details (seed 001 group 0x31), from ``uname``."""

    os_name: str = ""
    hostname: str = ""
    release: str = ""
    version: str = ""
    hardware: str = ""

    @classmethod
    def current(cls) -> MachineInfo:
        u = platform.uname()
        return cls(u.system, socket.getfqdn() or u.node, u.release, u.version, u.machine)


@dataclass(slots=True)
class DatabaseInfo:
    """Database details (seed 001 group 0x32). ``vendor`` uses seed 001's type table."""

    vendor: int = VENDOR_POSTGRESQL
    name: str = ""
    instance: str = ""
    charset: int = 1003
    major: int = 0
    minor: int = 0
    version_string: str = ""
    client_version: str = ""


@dataclass(slots=True)
class ProducerInfo:
    """The process that wrote the file (seed 001 group 0x33)."""

    name: str = "TRAILGATE"
    data_source: int = 3
    version: tuple[int, int, int, int, int] = (0, 1, 0, 0, 0)
    version_string: str = "trailgate 0.1.0"


@dataclass(frozen=True, slots=True)
class TrailEncryption:
    """What an encrypted file's header says (trailgate's group 0x35): the cipher and which
    key, by name, version and fingerprint — never the key."""

    cipher: str
    key_name: str
    key_version: int
    fingerprint: bytes

    def describe(self) -> str:
        return (f"{self.cipher}-GCM, key {self.key_name} version {self.key_version} "
                f"(fingerprint {self.fingerprint.hex()})")


@dataclass(slots=True)
class HeaderToken:
    """One token as found in a file (for Logdump's FILEHEADER DETAIL)."""

    group: int
    type: int
    flag: int
    value: bytes
    offset: int  # file offset of the token's 4-byte header

    @property
    def name(self) -> str:
        return TOKEN_NAMES.get(self.group, {}).get(self.type, f"Token{self.type:02X}")


@dataclass(slots=True)
class FileHeader:
    """Everything a trail file header says, and where its updatable fields live."""

    seqno: int = 0
    filename: str = ""
    uri: str = ""
    uri_history: list[str] = field(default_factory=list)
    compatibility: int = COMPATIBILITY_LEVEL
    charset: int = 0x20000000
    creation_time: int = 0
    multipart: int = 1
    file_size: int | None = None
    first_csn: int | None = None
    last_csn: int | None = None
    first_io_time: int | None = None
    last_io_time: int | None = None
    machine: MachineInfo = field(default_factory=MachineInfo)
    database: DatabaseInfo = field(default_factory=DatabaseInfo)
    producer: ProducerInfo = field(default_factory=ProducerInfo)
    recovery_mode: int = 1
    encryption: TrailEncryption | None = None  # records sealed (trail.sealing)
    length: int = 0  # bytes the F record takes (set by encode and decode)
    tokens: list[HeaderToken] = field(default_factory=list)
    offsets: dict[str, int] = field(default_factory=dict)  # field name -> value offset

    def encode(self) -> bytes:
        """The F record; records in ``offsets`` where FileSize, LastCSN, LastIOTime sit."""
        builder = _Builder()
        builder.group(0x30, [
            (0x30, 0, SIGNATURE),
            (0x31, 0, _u16(self.compatibility)),
            (0x32, 0, _u32(self.charset)),
            (0x33, 0, _u64(self.creation_time)),
            (0x34, 0, _str(self.uri)),
            *([(0x35, 0, b"".join(_tok(0x35, 0, _str(u)) for u in self.uri_history))]
              if self.uri_history else []),
            (0x36, 0, _str(self.filename)),
            (0x37, 0, bytes((self.multipart,))),
            (0x38, 0, _u32(self.seqno)),
            (0x39, *_opt(self.file_size, _u64, 8)),
            (0x3A, *_opt(self.first_csn, _csn, CSN_FIELD)),
            (0x3B, *_opt(self.last_csn, _csn, CSN_FIELD)),
            (0x3C, *_opt(self.first_io_time, _u64, 8)),
            (0x3D, *_opt(self.last_io_time, _u64, 8)),
        ])
        m = self.machine
        builder.group(0x31, [(0x30, 0, _str(m.os_name)), (0x31, 0, _str(m.hostname)),
                             (0x32, 0, _str(m.release)), (0x33, 0, _str(m.version)),
                             (0x34, 0, _str(m.hardware))])
        d = self.database
        builder.group(0x32, [
            (0x30, 0, _u16(d.vendor)), (0x31, 0, _str(d.name)), (0x32, 0, _str(d.instance)),
            (0x33, 0, _u32(d.charset)), (0x34, 0, _u16(d.major)), (0x35, 0, _u16(d.minor)),
            (0x36, 0, _str(d.version_string)), (0x37, 0, _u32(0x40000000)),
            (0x38, 0, _str(d.client_version)), (0x39, 0, _u32(1)), (0x3A, 0, _u16(0)),
            (0x3B, 0, _u32(1)),
            (0x3C, 0, _u32(16) + bytes.fromhex("14141414141414141414141411141414")),
        ])
        p = self.producer
        builder.group(0x33, [(0x30, 0, _str(p.name)), (0x31, 0, _u16(p.data_source)),
                             *[(0x32 + i, 0, _u16(v)) for i, v in enumerate(p.version)],
                             (0x37, 0, _str(p.version_string))])
        builder.group(0x34, [(0x30, 0, _u32(self.recovery_mode))])
        e = self.encryption
        if e is not None:
            builder.group(0x35, [(0x30, 0, _str(e.cipher)), (0x31, 0, _str(e.key_name)),
                                 (0x32, 0, _u32(e.key_version)), (0x33, 0, e.fingerprint)])
        content = builder.out
        total = len(content) + 8
        if total > 0xFFFF:
            raise ValueError("file header longer than 65,535 bytes")
        head = b"F\x00" + total.to_bytes(2, "big")
        self.length = total
        self.offsets = {name: off + 4 for name, off in builder.offsets.items()}
        return head + content + b"Z\x00" + total.to_bytes(2, "big")

    def completion_patches(
        self, file_size: int, last_csn: int | None, last_io_time: int | None
    ) -> list[tuple[int, bytes]]:
        """(file offset, bytes) writes that fill FileSize, LastCSN and LastIOTime in place."""
        patches = [(self.offsets["FileSize"], b"\x00\x00\x08" + _u64(file_size))]
        if last_csn is not None:
            patches.append((self.offsets["LastCSN"], b"\x00\x00\x81" + _csn(last_csn)))
        if last_io_time is not None:
            patches.append((self.offsets["LastIOTime"], b"\x00\x00\x08" + _u64(last_io_time)))
        # Each patch starts at the token's flag byte (one past its type byte).
        return patches


def _u16(v: int) -> bytes:
    return struct.pack(">H", v)


def _u32(v: int) -> bytes:
    return struct.pack(">I", v)


def _u64(v: int) -> bytes:
    return struct.pack(">Q", v)


def _str(text: str) -> bytes:
    raw = text.encode("utf-8")[:0xFFF0]
    return len(raw).to_bytes(2, "big") + raw


def _csn(csn: int) -> bytes:
    text = str(csn).encode("ascii")
    if len(text) > CSN_FIELD - 1:
        raise ValueError(f"CSN {csn} is too long for the header")
    return (bytes((len(text),)) + text).ljust(CSN_FIELD, b"\x00")


def _opt(value: int | None, encode: Callable[[int], bytes], size: int) -> tuple[int, bytes]:
    return (0, encode(value)) if value is not None else (UNSET, b"\x00" * size)


def _tok(type_: int, flag: int, content: bytes) -> bytes:
    return bytes((type_, flag)) + len(content).to_bytes(2, "big") + content


class _Builder:
    _NAMED: ClassVar[dict[int, str]] = {0x39: "FileSize", 0x3B: "LastCSN", 0x3D: "LastIOTime"}

    def __init__(self) -> None:
        self.out = bytearray()
        self.offsets: dict[str, int] = {}

    def group(self, type_: int, tokens: list[tuple[int, int, bytes]]) -> None:
        body = bytearray()
        group_start = len(self.out) + 4
        for ttype, flag, content in tokens:
            if type_ == 0x30 and ttype in self._NAMED:
                # offset of the token's flag byte within the F content
                self.offsets[self._NAMED[ttype]] = group_start + len(body) + 1
            body += _tok(ttype, flag, content)
        self.out += _tok(type_, 0, bytes(body))


def home_uri(home: str | os.PathLike[str], host: str | None = None) -> str:
    """GoldenGate's URI for a home: ``uri:host::path:to:home`` (seed 001's URI token)."""
    host = host or socket.getfqdn() or "localhost"
    path = os.path.abspath(home).strip("/").replace("/", ":")
    return "uri:" + host.replace(".", ":") + "::" + path


def now_julian() -> int:
    """The current time as Julian microseconds."""
    return julian_from_unix_micros(time.time_ns() // 1000)


#: decoded file headers by their bytes: a reader opening a file for each small step (the
#: streamed apply) would otherwise parse the same header hundreds of times a second
_decoded: dict[tuple[bytes, int], FileHeader] = {}
_decoded_lock = threading.Lock()
_DECODED_KEPT = 16


def decode_file_header(buf: bytes, *, max_compatibility: int = MAX_READ_LEVEL) -> FileHeader:
    """Parse the F record at the start of ``buf``. Raises ``ValueError`` on damage and on a
    CompatibilityLevel newer than ``max_compatibility``.  Each call gives a header of its
    own (a copy of one decoded before from the same bytes)."""
    if len(buf) >= 8 and buf[0] == ord("F"):
        total = (buf[2] << 8) | buf[3]
        key = (bytes(buf[:total]), max_compatibility)
        with _decoded_lock:
            known = _decoded.get(key)
        if known is not None and len(buf) >= total:
            return _copy(known)
        header = _decode_file_header(buf, max_compatibility)
        with _decoded_lock:  # several threads read trails (streamers, Spark callbacks)
            if len(_decoded) >= _DECODED_KEPT:
                del _decoded[next(iter(_decoded))]
            _decoded[key] = header
        return _copy(header)
    return _decode_file_header(buf, max_compatibility)


def read_file_header(f: BinaryIO) -> FileHeader:
    """The header of the open file ``f``, read from its start: only the header record's
    own bytes (its length is in its first four), not a whole 64 KB — a live trail's file is
    opened every few milliseconds.  Raises ``ValueError`` as :func:`decode_file_header`."""
    head = f.read(4)
    if len(head) == 4 and head[0] == ord("F"):
        return decode_file_header(head + f.read(max(((head[2] << 8) | head[3]) - 4, 0)))
    return decode_file_header(head + f.read(0xFFFF - len(head)))


def _copy(header: FileHeader) -> FileHeader:
    """A header whose lists and dict are its own (the nested infos are not changed in
    place by anyone: they are replaced)."""
    out = copy.copy(header)
    out.uri_history = list(header.uri_history)
    out.tokens = list(header.tokens)
    out.offsets = dict(header.offsets)
    return out


def _decode_file_header(buf: bytes, max_compatibility: int) -> FileHeader:
    if len(buf) < 8:
        raise ValueError("file is shorter than a file header")
    if buf[0] != ord("F"):
        raise ValueError(f"file starts with 0x{buf[0]:02X}, not a file header record (F)")
    total = (buf[2] << 8) | buf[3]
    if total < 8 or total > len(buf):
        raise ValueError(f"file header length {total} does not fit the file")
    if buf[total - 4 : total] != b"Z" + buf[1:4]:
        raise ValueError("file header is not closed by a Z record of the same length")
    header = FileHeader(length=total)
    pos = 4
    while pos < total - 4:
        group, _flag, glen = _read_sub(buf, pos, total - 4)
        gstart = pos + 4
        pos = gstart + glen
        q = gstart
        while q < pos:
            ttype, tflag, tlen = _read_sub(buf, q, pos)
            value = bytes(buf[q + 4 : q + 4 + tlen])
            header.tokens.append(HeaderToken(group, ttype, tflag, value, q))
            _apply(header, group, ttype, tflag, value, q)
            q += 4 + tlen
    if not header.tokens or header.tokens[0].value != SIGNATURE:
        raise ValueError("file header lacks the GG trail signature")
    if header.compatibility > max_compatibility:
        raise ValueError(
            f"trail CompatibilityLevel {header.compatibility} is newer than this trailgate "
            f"reads (up to {max_compatibility}: GoldenGate 11.2 to 21c); have the writer "
            f"produce an older format (EXTTRAIL …, FORMAT RELEASE 21.1)"
        )
    return header


def _read_sub(buf: bytes, pos: int, end: int) -> tuple[int, int, int]:
    if pos + 4 > end:
        raise ValueError(f"header token cut short at offset {pos}")
    length = (buf[pos + 2] << 8) | buf[pos + 3]
    if pos + 4 + length > end:
        raise ValueError(f"header token 0x{buf[pos]:02X} at offset {pos} runs past its group")
    return buf[pos], buf[pos + 1], length


def _string(value: bytes) -> str:
    if len(value) < 2:
        raise ValueError("header string without its length")
    n = int.from_bytes(value[:2], "big")
    if n != len(value) - 2:
        raise ValueError("header string length disagrees with its token")
    return value[2:].decode("utf-8", "replace")


def _int(value: bytes) -> int:
    return int.from_bytes(value, "big")


def _apply(h: FileHeader, group: int, ttype: int, flag: int, v: bytes, offset: int) -> None:
    unset = flag == UNSET
    if group == 0x30:
        if ttype == 0x31:
            h.compatibility = _int(v)
        elif ttype == 0x32:
            h.charset = _int(v)
        elif ttype == 0x33:
            h.creation_time = _int(v)
        elif ttype == 0x34:
            h.uri = _string(v)
        elif ttype == 0x35:
            h.uri_history = [_string(t.value) for t in _subtokens(v)]
        elif ttype == 0x36:
            h.filename = _string(v)
        elif ttype == 0x37:
            h.multipart = _int(v)
        elif ttype == 0x38:
            h.seqno = _int(v)
        elif ttype == 0x39:
            h.file_size = None if unset else _int(v)
            h.offsets["FileSize"] = offset + 1
        elif ttype in (0x3A, 0x3B):
            csn = None if unset or not v or v[0] == 0 else int(v[1 : 1 + v[0]].decode("ascii"))
            if ttype == 0x3A:
                h.first_csn = csn
            else:
                h.last_csn = csn
                h.offsets["LastCSN"] = offset + 1
        elif ttype == 0x3C:
            h.first_io_time = None if unset else _int(v)
        elif ttype == 0x3D:
            h.last_io_time = None if unset else _int(v)
            h.offsets["LastIOTime"] = offset + 1
    elif group == 0x31:
        names = {0x30: "os_name", 0x31: "hostname", 0x32: "release", 0x33: "version",
                 0x34: "hardware"}
        if ttype in names:
            setattr(h.machine, names[ttype], _string(v))
    elif group == 0x32:
        d = h.database
        if ttype == 0x30:
            d.vendor = _int(v)
        elif ttype == 0x31:
            d.name = _string(v)
        elif ttype == 0x32:
            d.instance = _string(v)
        elif ttype == 0x33:
            d.charset = _int(v)
        elif ttype == 0x34:
            d.major = _int(v)
        elif ttype == 0x35:
            d.minor = _int(v)
        elif ttype == 0x36:
            d.version_string = _string(v)
        elif ttype == 0x38:
            d.client_version = _string(v)
    elif group == 0x33:
        p = h.producer
        if ttype == 0x30:
            p.name = _string(v)
        elif ttype == 0x31:
            p.data_source = _int(v)
        elif 0x32 <= ttype <= 0x36:
            a, b, c, n, e = (_int(v) if i == ttype - 0x32 else old
                             for i, old in enumerate(p.version))
            p.version = (a, b, c, n, e)
        elif ttype == 0x37:
            p.version_string = _string(v)
    elif group == 0x34 and ttype == 0x30:
        h.recovery_mode = _int(v)
    elif group == 0x35:
        h.encryption = _encryption(h.encryption, ttype, v)


def _encryption(old: TrailEncryption | None, ttype: int, v: bytes) -> TrailEncryption:
    """The EncryptionInfo group so far, with token ``ttype`` applied."""
    cipher, name, version, fingerprint = (
        (old.cipher, old.key_name, old.key_version, old.fingerprint) if old is not None
        else ("", "", 0, b""))
    if ttype == 0x30:
        cipher = _string(v)
    elif ttype == 0x31:
        name = _string(v)
    elif ttype == 0x32:
        version = _int(v)
    elif ttype == 0x33:
        fingerprint = bytes(v)
    return TrailEncryption(cipher, name, version, fingerprint)


def _subtokens(value: bytes) -> list[HeaderToken]:
    out = []
    q = 0
    while q < len(value):
        ttype, tflag, tlen = _read_sub(value, q, len(value))
        out.append(HeaderToken(0x35, ttype, tflag, value[q + 4 : q + 4 + tlen], q))
        q += 4 + tlen
    return out
