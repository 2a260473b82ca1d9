"""Encrypted 11.2 records: sealing a G record's data and tokens, and opening them again.

What a reader needs to frame and position a record stays in the clear (G and Z, the ``H``
and ``T`` areas); ``D`` and ``U`` become one ``E`` area — nonce, AES-GCM ciphertext, tag —
with every clear byte as associated data, so any changed byte is refused.  The nonce is
derived from the record, so sealing is deterministic: a Pump passing an encrypted trail
through writes the bytes it read.  An opened record keeps its length (an ``S`` area holds
nonce and tag), so positions and offset scans hold.  docs/trail-format.md.
"""

from __future__ import annotations

import hmac
import mmap
from typing import Any, Protocol, cast

from trailgate.trail._accel import load_optional
from trailgate.trail.header import TrailEncryption
from trailgate.trail.keys import TrailKey

__all__ = [
    "CIPHERS",
    "SEAL_OVERHEAD",
    "RecordOpener",
    "RecordSealer",
    "TrailEncryption",
    "is_sealed",
    "sealed_area",
]

#: What records are read from: a file's bytes, or its mapping (Logdump).
Buffer = bytes | bytearray | memoryview | mmap.mmap


class _SealC(Protocol):
    """What ``_seal.c`` exports: ``seal`` and ``open_run`` of this module, in C."""

    def seal(self, record: bytes, enc_key: bytes, mac_key: bytes, /) -> bytes | None: ...

    def open_run(self, buf: Buffer, pos: int, end: int, enc_key: bytes, /
                 ) -> tuple[bytes, int, int]: ...


_c = cast(_SealC | None, load_optional("trailgate.trail._seal"))

#: Cipher names (ENCRYPTTRAIL's) and their AES key lengths in bytes.
CIPHERS = {"AES128": 16, "AES192": 24, "AES256": 32}
NONCE = 12
TAG = 16
#: Bytes a sealed record is longer than the plain one: the E header, nonce and tag, less
#: nothing (D and U sub-record headers travel inside the ciphertext).
SEAL_OVERHEAD = 4 + NONCE + TAG
TYPE_E = 0x45  # the sealed area
TYPE_S = 0x53  # an opened record's filler: the nonce and tag, keeping its length
_D, _T, _U, _Z = 0x44, 0x54, 0x55, 0x5A


def _derive(key: TrailKey, cipher: str) -> tuple[Any, bytes, bytes]:
    """The AES-GCM of ``cipher``'s key derived from ``key``, that key, and the nonce key.
    (The ``cryptography`` import is here: readers of plain trails never pay for it.)"""
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    size = CIPHERS[cipher]
    enc = hmac.digest(key.secret, b"trailgate trail record key " + cipher.encode(),
                      "sha256")[:size]
    mac = hmac.digest(key.secret, b"trailgate trail record nonce", "sha256")
    return AESGCM(enc), enc, mac


def sealed_area(buf: Buffer, pos: int, length: int
                ) -> tuple[int, int] | None:
    """(start, end) of the E area's value in the record at ``pos``, or ``None`` for a plain
    record.  The record's framing is assumed checked."""
    p = pos + 8 + ((buf[pos + 6] << 8) | buf[pos + 7])  # after the H area
    body_end = pos + length - 4
    while p + 4 <= body_end:
        slen = (buf[p + 2] << 8) | buf[p + 3]
        if buf[p] == TYPE_E:
            return p + 4, p + 4 + slen
        p += 4 + slen
    return None


def is_sealed(buf: Buffer, pos: int, length: int) -> bool:
    """Whether the (framed) record at ``pos`` is encrypted."""
    return sealed_area(buf, pos, length) is not None


class RecordSealer:
    """Seals plain 11.2 records with one key (a writer's, for the files it opens)."""

    def __init__(self, cipher: str, key: TrailKey):
        if cipher not in CIPHERS:
            raise ValueError(f"unknown cipher {cipher}: use one of {', '.join(CIPHERS)}")
        self.key = key
        self.info = TrailEncryption(cipher, key.name, key.version, key.fingerprint)
        self._aead, self._enc, self._mac = _derive(key, cipher)

    def seal(self, record: bytes) -> bytes:
        """The sealed form of one plain record (``len(record) + SEAL_OVERHEAD`` bytes; the
        caller keeps records short enough, see ``records.split_for_room``)."""
        if _c is not None:  # the C version, byte for byte the same; None: let Python say
            sealed_c = _c.seal(record, self._enc, self._mac)
            if sealed_c is not None:
                return sealed_c
        n = len(record)
        total = n + SEAL_OVERHEAD
        if total > 0xFFFF:
            raise ValueError(f"record of {n} bytes is too long to seal")
        hend = 8 + ((record[6] << 8) | record[7])
        clear = [record[4:hend]]
        secret: list[bytes] = []
        p, body_end = hend, n - 4
        while p < body_end:
            slen = (record[p + 2] << 8) | record[p + 3]
            sub = record[p:p + 4 + slen]
            (secret if record[p] in (_D, _U) else clear).append(sub)
            p += 4 + slen
        plain = b"".join(secret)
        head = record[:2] + total.to_bytes(2, "big")
        e_head = bytes((TYPE_E, 0)) + (NONCE + len(plain) + TAG).to_bytes(2, "big")
        tail = record[n - 4:n - 2] + total.to_bytes(2, "big")
        aad = head + b"".join(clear) + e_head + tail
        nonce = hmac.digest(self._mac, aad + plain, "sha256")[:NONCE]
        sealed: bytes = self._aead.encrypt(nonce, plain, aad)
        return aad[:-4] + nonce + sealed + tail


class RecordOpener:
    """Opens the sealed records of files written with one key."""

    def __init__(self, info: TrailEncryption, key: TrailKey):
        from cryptography.exceptions import InvalidTag

        self.info = info
        self._aead, self._enc, _ = _derive(key, info.cipher)
        self._invalid = InvalidTag

    def open(self, buf: Buffer, pos: int, length: int) -> bytes | None:
        """The plain record (same length) for the sealed record at ``pos``; ``None`` when it
        is not sealed.  ``ValueError`` when it fails its authentication."""
        area = sealed_area(buf, pos, length)
        if area is None:
            return None
        start, end = area
        record = bytes(buf[pos:pos + length])
        start, end = start - pos, end - pos
        if end - start < NONCE + TAG:
            raise ValueError("encrypted area too short for its nonce and tag")
        aad = record[:start] + record[end:]
        nonce = record[start:start + NONCE]
        try:
            plain = self._aead.decrypt(nonce, record[start + NONCE:end], aad)
        except self._invalid:
            raise ValueError(
                f"the encrypted record fails its authentication check ({self.info.describe()}):"
                " a byte of it was changed or damaged, or the key is not the one it was "
                "written with; it is not applied") from None
        if len(plain) < 4 or plain[0] != _D:
            raise ValueError("the decrypted record does not start with its D area")
        d_end = 4 + ((plain[2] << 8) | plain[3])
        if d_end > len(plain):
            raise ValueError("the decrypted D area runs past its record")
        return _reassemble(record, start - 4, end, plain, d_end, nonce)

    def open_run(self, buf: Buffer, pos: int, end: int) -> tuple[bytes, int, bool]:
        """The whole records of ``buf[pos:end]`` opened, as far as they go: (their opened
        bytes, where it stopped, whether the record there could not be opened — then
        :meth:`open` says why)."""
        if _c is not None:
            opened, stop, failed = _c.open_run(buf, pos, end, self._enc)
            return opened, stop, bool(failed)
        out = bytearray()
        p = pos
        while p + 4 <= end:
            length = (buf[p + 2] << 8) | buf[p + 3]
            if length < 12 or p + length > end:
                break
            try:
                plain = self.open(buf, p, length)
            except ValueError:
                plain = None
            if plain is None:
                return bytes(out), p, True
            out += plain
            p += length
        return bytes(out), p, False

    def open_all(self, buf: bytes, start: int = 0, end: int | None = None) -> bytes:
        """``buf[start:end]`` (whole records end to end) with every record opened; a
        ``ValueError`` says what stopped it (a record cut short, in the clear, changed)."""
        end = len(buf) if end is None else end
        opened, stop, failed = self.open_run(buf, start, end)
        if stop < end:
            if failed:
                length = (buf[stop + 2] << 8) | buf[stop + 3]
                if self.open(buf, stop, length) is None:
                    raise ValueError(f"a record in the clear at byte {stop}")
            raise ValueError(f"a record cut short at byte {stop}")
        return opened


def _reassemble(record: bytes, e_head: int, e_end: int, plain: bytes, d_end: int,
                nonce: bytes) -> bytes:
    """H, D, T (and what else was clear), U, then the S filler: the original order of a
    plain record's areas, at the sealed record's length."""
    hend = 8 + ((record[6] << 8) | record[7])
    tag = record[e_end - TAG:e_end]
    return (record[:hend] + plain[:d_end] + record[hend:e_head] + record[e_end:-4]
            + plain[d_end:] + bytes((TYPE_S, 0, 0, NONCE + TAG)) + nonce + tag
            + record[-4:])
