"""Write redo records as ``ALTER SYSTEM DUMP LOGFILE`` text, in the layout seed 003 prints.

Used to build inputs the seed does not show (interleaved and long transactions, rollbacks,
several threads, large benchmark files).  It writes only the records the capture reads: a
transaction's first record (5.2 + 5.1 ktubl + row op + 5.20), later row records (5.1 ktubu +
row op with ``op: C``), and the 5.4 commit; optionally the PK supplemental block.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TextIO

__all__ = ["DumpWriter", "Xid"]


@dataclass(frozen=True, slots=True)
class Xid:
    usn: int
    slot: int
    sqn: int

    @property
    def dump(self) -> str:
        return f"0x{self.usn:04x}.{self.slot:03x}.{self.sqn:08x}"

    def __str__(self) -> str:
        return f"{self.usn}.{self.slot}.{self.sqn}"


def _cols(values: list[tuple[int, bytes | None]]) -> str:
    out = []
    for colno, value in values:
        if value is None:
            out.append(f"col {colno:2d}: *NULL*")
        else:
            out.append(f"col {colno:2d}: [{len(value):2d}] {value.hex(' ')}")
    return "\n".join(out)


def _supplemental(key: list[tuple[int, bytes]], first_modified: int) -> str:
    n = len(key)
    header = f"{n:04X}1C01 {first_modified:04X}0001 {first_modified:08X} 00001000 00000000"
    lines = [f"Header (20 bytes)\n {header}",
             f"Column List Header ({2 * n} bytes)\n " + " ".join(f"{c:04X}" for c, _ in key),
             f"Column Size List ({2 * n} bytes)\n " + " ".join(f"{len(v):04X}" for _, v in key)]
    for k, (_, v) in enumerate(key, 1):
        lines.append(f"Column {k} Value ({len(v)} bytes)\n {v.hex(' ').upper()}")
    return "\n".join(lines) + "\n"


class DumpWriter:
    """Appends redo records to ``out``; RBA, SCN and time advance by themselves."""

    def __init__(self, out: TextIO, *, thread: int = 1, seq: int = 0x50, block: int = 5,
                 scn: int = 0x190000, time: datetime = datetime(2013, 4, 2, 9, 0, 0),
                 objn: int = 76490, objd: int = 76495, dba: int = 0x01000436):
        self.out, self.thread, self.seq, self.block = out, thread, seq, block
        self.offset, self.scn, self.time = 0x10, scn, time
        self.objn, self.objd, self.dba = objn, objd, dba
        self._seen: set[Xid] = set()

    # -- record framing --------------------------------------------------------------------
    def _header(self, lwn: bool = False) -> str:
        rba = f"0x{self.seq:06x}.{self.block:08x}.{self.offset:04x}"
        text = (f"REDO RECORD - Thread:{self.thread} RBA: {rba} LEN: 0x0200 VLD: 0x05\n"
                f"SCN: 0x{self.scn >> 32:04x}.{self.scn & 0xFFFFFFFF:08x} SUBSCN: 1 "
                f"{self.time:%m/%d/%Y %H:%M:%S}\n")
        if lwn:
            text += (f"(LWN RBA: {rba} LEN: 0002 NST: 0001 SCN: "
                     f"0x{self.scn >> 32:04x}.{self.scn & 0xFFFFFFFF:08x})\n")
        return text + "\n"

    def _advance(self, scn_step: int = 1, seconds: int = 0) -> None:
        self.offset += 0x80
        if self.offset >= 0x200:
            self.offset -= 0x1F0
            self.block += 1
        self.scn += scn_step
        self.time += timedelta(seconds=seconds)

    def _scn(self) -> str:
        return f"0x{self.scn >> 32:04x}.{self.scn & 0xFFFFFFFF:08x}"

    def _undo(self, k: int, xid: Xid, begin: bool, kdo: str, sup: str) -> str:
        ktub = (f"ktubl redo: slt: {xid.slot} rci: 0 opc: 11.1 [objn: {self.objn} "
                f"objd: {self.objd} tsn: 4]\nUndo type: Regular undo Begin trans "
                f"Last buffer split: No\nTemp Object: No\nTablespace Undo: No\n")
        if not begin:
            ktub = (f"ktubu redo: slt: {xid.slot} rci: 1 opc: 11.1 objn: {self.objn} "
                    f"objd: {self.objd} tsn: 4\nUndo type: Regular undo Undo type: Last "
                    f"buffer split: No\nTablespace Undo: No\n")
        return (f"CHANGE #{k} TYP:0 CLS:{16 + 2 * xid.usn} AFN:3 DBA:0x00c000b2 "
                f"OBJ:4294967295 SCN:{self._scn()}\nSEQ:1 OP:5.1 ENC:0 RBL:0\n"
                f"ktudb redo: siz: 136 spc: 6418 flg: 0x0012 seq: 0x01ee rec: 0x0d\n"
                f"          xid: {xid.dump}\n{ktub}          0x00000000\nKDO undo record:\n"
                f"KTB Redo\nop: 0x03 ver: 0x01\ncompat bit: 4 (post-11) padding: 1\n"
                f"op: Z\n{kdo}\n{sup}\n")

    def _redo(self, k: int, xid: Xid, begin: bool, op: str, kdo: str) -> str:
        ktb = f"op: F xid: {xid.dump} uba: 0x00c000b2.01ee.0d" if begin else \
            "op: C uba: 0x00c000b2.01ee.0e"
        return (f"CHANGE #{k} TYP:2 CLS:1 AFN:4 DBA:0x{self.dba:08x} OBJ:{self.objd} "
                f"SCN:{self._scn()} SEQ:1\nOP:{op} ENC:0 RBL:0\nKTB Redo\nop: 0x01 ver: "
                f"0x01\ncompat bit: 4 (post-11) padding: 1\n{ktb}\n{kdo}\n\n")

    def _kdo(self, name: str, slot: int, tail: str) -> str:
        return (f"KDO Op code: {name} row dependencies Disabled\n  xtype: XA flags: 0x00000000 "
                f"bdba: 0x{self.dba:08x} hdba: 0x01000432\nitli: 2 ispac: 0 maxfr: 4858\n"
                f"tabn: 0 slot: {slot}({slot:#x}){tail}")

    def _row(self, xid: Xid, undo: str, redo_op: str, redo: str, sup: str = "") -> None:
        begin = xid not in self._seen
        self._seen.add(xid)
        text = self._header(lwn=begin)
        k = 1
        if begin:
            text += (f"CHANGE #1 TYP:0 CLS:{15 + 2 * xid.usn} AFN:3 DBA:0x00c000b0 "
                     f"OBJ:4294967295 SCN:{self._scn()}\nSEQ:1 OP:5.2 ENC:0 RBL:0\n"
                     f"ktudh redo: slt: 0x{xid.slot:04x} sqn: 0x{xid.sqn:08x} flg: 0x0012 "
                     f"siz: 136 fbi: 0\n          uba: 0x00c000b2.01ee.0d pxid: "
                     f"0x0000.000.00000000\n\n")
            k = 2
        text += self._undo(k, xid, begin, undo, sup)
        text += self._redo(k + 1, xid, begin, redo_op, redo)
        if begin:
            text += (f"CHANGE #{k + 2} MEDIA RECOVERY MARKER SCN:0x0000.00000000 SEQ:0 "
                     f"OP:5.20 ENC:0\nsession number = 44\nlogin username = US03\n\n")
        self.out.write(text)
        self._advance()

    # -- operations ------------------------------------------------------------------------
    def insert(self, xid: Xid, slot: int, row: list[bytes | None]) -> None:
        """A single-row insert (11.2 IRP) of ``row`` (values by column position)."""
        cols = list(enumerate(row))
        redo = self._kdo("IRP", slot, f" size/delt: 53\nfb: --H-FL-- lb: 0x2 cc: {len(row)}\n"
                                      f"null: {'-' * len(row)}\n{_cols(cols)}")
        self._row(xid, self._kdo("DRP", slot, ""), "11.2", redo)

    def update(self, xid: Xid, slot: int, old: dict[int, bytes | None],
               new: dict[int, bytes | None], key: list[tuple[int, bytes]] | None) -> None:
        """An update (11.5 URP) of some columns; ``key`` (intcol, bytes) is logged as PK
        supplemental data when given."""
        def urp(values: dict[int, bytes | None]) -> str:
            return self._kdo("URP", slot, f" flag: 0x2c lock: 0 ckix: 0\nncol: 8 nnew: "
                                          f"{len(values)} size: 0\n"
                                          f"{_cols(sorted(values.items()))}")
        sup = _supplemental(key, min(new) + 1) if key else ""
        self._row(xid, urp(old), "11.5", urp(new), sup)

    def delete(self, xid: Xid, slot: int, row: list[bytes | None]) -> None:
        """A single-row delete (11.3 DRP); the undo holds the row image (IRP)."""
        undo = self._kdo("IRP", slot, f" size/delt: 46\nfb: --H-FL-- lb: 0x0 cc: {len(row)}\n"
                                      f"null: {'-' * len(row)}\n{_cols(list(enumerate(row)))}")
        self._row(xid, undo, "11.3", self._kdo("DRP", slot, ""))

    def commit(self, xid: Xid, *, rollback: bool = False, seconds: int = 1) -> None:
        """The 5.4 record ending ``xid``: a commit, or a rollback (ktucm flg bit 0x04)."""
        self.scn += 1
        flg = 0x6 if rollback else 0x2
        self.out.write(
            self._header()
            + f"CHANGE #1 TYP:0 CLS:{15 + 2 * xid.usn} AFN:3 DBA:0x00c000b0 OBJ:4294967295 "
              f"SCN:{self._scn()}\nSEQ:1 OP:5.4 ENC:0 RBL:0\nktucm redo: slt: 0x{xid.slot:04x} "
              f"sqn: 0x{xid.sqn:08x} srt: 0 sta: 9 flg: 0x{flg:x} ktucf redo: uba:\n"
              f"0x00c000b2.01ee.0f ext: 0 spc: 6080 fbi: 0\n"
            + ("rolled back transaction\n" if rollback else "")
            + "CHANGE #2 MEDIA RECOVERY MARKER SCN:0x0000.00000000 SEQ:0 OP:24.4 ENC:0\n\n")
        self._seen.discard(xid)
        self._advance(seconds=seconds)

    def end(self) -> None:
        self.out.write("END OF REDO DUMP\n")

    def switch(self, out: TextIO, seq: int) -> None:
        """Continue in the next log (a log switch): open transactions stay open."""
        self.end()
        self.out, self.seq, self.block, self.offset = out, seq, 2, 0x10
