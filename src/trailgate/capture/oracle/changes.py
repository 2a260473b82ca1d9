"""Change vectors: one class per kind, each parsing its own dump body.

Only what capture needs is decoded; the rest of a body is read past.  Layer 11 (row
operations) and 19 (direct loader) carry data, so an operation there that this module does
not know is an error, never silently skipped.  Other layers (index, space management,
markers, DDL) produce nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import ClassVar

from trailgate.capture.oracle.records import XID_RE, Cursor, xid_text
from trailgate.capture.oracle.supplemental import SupplementalData

__all__ = [
    "REGISTRY",
    "ChangeVector",
    "Commit",
    "DirectLoad",
    "Kdo",
    "KdoRow",
    "MediaRecoveryMarker",
    "OtherChange",
    "RowChange",
    "UndoApplied",
    "UndoHeader",
    "UndoRecord",
    "parse_kdo",
]

_SLOT = re.compile(r"(\d+)\(0x([0-9a-f]+)\)")
_FB = re.compile(r"[K-][C-][H-][D-][F-][L-][P-][N-]")
_UBA = re.compile(r"0x[0-9a-f]{8}\.[0-9a-f]{4}\.[0-9a-f]{2}")
_COLNO = re.compile(r"(\d+):")
_LEN = re.compile(r"\[\s*(\d+)\]")
_KTB_OP = re.compile(r"[A-Z]")
_ROWADDR = re.compile(r"@0x[0-9a-f]+")
_NROW = re.compile(r"nrow=(\d+)")
_ITL = re.compile(r"0x[0-9a-f]{2}")

#: Row flag bits (the ``fb:`` letters and URP's ``flag:`` byte): Cluster key, Cluster member,
#: Head, Deleted, First piece, Last piece, Previous piece continues, Next piece continues.
FB_CLUSTER, FB_HEAD, FB_FIRST, FB_LAST = 0x40, 0x20, 0x08, 0x04
WHOLE_ROW = "--H-FL--"

DATA_LAYERS = frozenset({11, 19})


@dataclass(slots=True)
class KdoRow:
    """A row image: its slot, flags and ``(column number in piece, bytes or None)``."""

    slot: int
    fb: str
    columns: list[tuple[int, bytes | None]]


@dataclass(slots=True)
class Kdo:
    """A KDO (kernel data operation) as printed after ``KDO Op code:``."""

    op: str
    bdba: int = 0
    tabn: int = 0
    slot: int = -1
    fb: str = ""
    flag: int = 0
    ncol: int = 0
    columns: list[tuple[int, bytes | None]] = field(default_factory=list)
    rows: list[KdoRow] = field(default_factory=list)
    slots: list[int] = field(default_factory=list)
    line: int = 0


def _columns(cur: Cursor, count: int, sequential: bool) -> list[tuple[int, bytes | None]]:
    cols: list[tuple[int, bytes | None]] = []
    last = -1
    for k in range(count):
        cur.expect("col")
        colno = int(cur.match(_COLNO, "a column number like '3:'")[1])
        if sequential and colno != k:
            cur.i -= 1
            raise cur.error(f"expected col {k} but found col {colno} "
                            f"(a row image lists every column in order)")
        if colno <= last:
            cur.i -= 1
            raise cur.error(f"col {colno} after col {last}: columns must ascend")
        last = colno
        tok = cur.next("a column value")
        if tok == "*NULL*":
            cols.append((colno, None))
            continue
        m = _LEN.fullmatch(tok)
        if not m:
            cur.i -= 1
            raise cur.error(f"expected '[length]' or '*NULL*' after col {colno} but found {tok!r}")
        cols.append((colno, cur.hex_bytes(int(m[1]))))
    return cols


def _row_header(cur: Cursor) -> tuple[str, int]:
    cur.expect("fb:")
    fb = cur.match(_FB, "row flags like --H-FL--")[0]
    cur.hex("lb:")
    cc = cur.int("cc:")
    return fb, cc


def parse_kdo(cur: Cursor) -> Kdo:
    """Parse from ``KDO Op code:`` to the end of the operation's body."""
    cur.expect("KDO", "Op", "code:")
    kdo = Kdo(op="", line=cur.line())
    kdo.op = cur.next("the KDO operation name")
    cur.expect("row", "dependencies")
    cur.next("Enabled/Disabled")
    cur.expect("xtype:")
    cur.next("the xtype")
    cur.hex("flags:")
    kdo.bdba = cur.hex("bdba:", 8)
    cur.hex("hdba:", 8)
    cur.int("itli:")
    cur.int("ispac:")
    cur.int("maxfr:")
    kdo.tabn = cur.int("tabn:")
    op = kdo.op
    if op in ("IRP", "DRP", "URP"):
        cur.expect("slot:")
        m = cur.match(_SLOT, "a slot like 10(0xa)")
        kdo.slot = int(m[1])
        if int(m[2], 16) != kdo.slot:
            raise cur.error(f"slot {m[0]} disagrees with itself")
    if op == "IRP":
        cur.int("size/delt:")
        kdo.fb, cc = _row_header(cur)
        if cur.peek() == "null:":
            cur.next()
            cur.next("the null mask")
        if cur.peek() == "nrid:":
            raise cur.error("insert of a row piece that continues in another block "
                            "(chained row insert) is not supported")
        kdo.columns = _columns(cur, cc, sequential=True)
    elif op == "URP":
        kdo.flag = cur.hex("flag:")
        cur.int("lock:")
        cur.int("ckix:")
        kdo.ncol = cur.int("ncol:")
        nnew = cur.int("nnew:")
        cur.int("size:")
        if cur.peek() == "Vector":
            cur.expect("Vector", "content:")
        kdo.columns = _columns(cur, nnew, sequential=False)
    elif op == "LKR":
        kdo.slot = cur.int("slot:")
        cur.int("to:")
    elif op in ("QMI", "QMD"):
        cur.int("lock:")
        nrow = cur.int("nrow:")
        for i in range(nrow):
            slot = cur.int(f"slot[{i}]:")
            if op == "QMD":
                kdo.slots.append(slot)
                continue
            cur.int("tl:")
            fb, cc = _row_header(cur)
            kdo.rows.append(KdoRow(slot, fb, _columns(cur, cc, sequential=True)))
    return kdo


@dataclass(slots=True)
class ChangeVector:
    """Fields of a ``CHANGE #n`` header common to every change."""

    number: int
    layer: int
    code: int
    line: int
    typ: int = 0
    cls: int = 0
    afn: int = 0
    dba: int = 0
    obj: int = 0
    scn: int = 0
    seq: int = 0

    OPS: ClassVar[tuple[tuple[int, int], ...]] = ()

    @property
    def op(self) -> str:
        return f"{self.layer}.{self.code}"

    def parse_body(self, cur: Cursor) -> None:
        """Decode the body; the base class reads nothing (the body is not needed)."""

    def undo_usn(self, cur: Cursor) -> int:
        """Undo segment number from the block class: 15 + 2*usn is an undo header, 16 + 2*usn
        an undo block (seed 003: CLS 23 -> usn 4, 27 -> 6, 17 -> 1)."""
        if self.cls < 17:
            raise cur.error(f"change {self.op} has block class {self.cls}, not an undo class")
        return (self.cls - 15) // 2


@dataclass(slots=True)
class MediaRecoveryMarker(ChangeVector):
    """``MEDIA RECOVERY MARKER`` changes (5.20 session info, 24.x markers): nothing to capture."""


@dataclass(slots=True)
class OtherChange(ChangeVector):
    """A change outside the data layers (index, block cleanout, space, DDL): ignored."""


@dataclass(slots=True)
class UndoHeader(ChangeVector):
    """5.2 ktudh: a transaction takes a slot in an undo segment header (its start)."""

    OPS = ((5, 2),)
    xid: str = ""
    sqn: int = 0

    def parse_body(self, cur: Cursor) -> None:
        cur.expect("ktudh", "redo:")
        slot = cur.hex("slt:", 4)
        self.sqn = cur.hex("sqn:", 8)
        cur.hex("flg:")
        self.xid = f"{self.undo_usn(cur)}.{slot}.{self.sqn}"


@dataclass(slots=True)
class UndoRecord(ChangeVector):
    """5.1 ktudb: an undo record; for row operations it holds the KDO undo (old values, the
    deleted row's image) and, beneath it, the supplemental data."""

    OPS = ((5, 1),)
    xid: str = ""
    begin: bool = False
    objn: int = -1
    objd: int = -1
    opc: str = ""
    kdo: Kdo | None = None
    supplemental: SupplementalData | None = None

    def parse_body(self, cur: Cursor) -> None:
        cur.expect("ktudb", "redo:")
        if not cur.find("xid:"):
            raise cur.error("ktudb redo without an xid")
        self.xid = xid_text(cur.match(XID_RE, "an xid like 0x0004.00b.00000356"))
        kind = cur.next("ktubl or ktubu")
        if kind not in ("ktubl", "ktubu"):
            cur.i -= 1
            raise cur.error(f"expected ktubl or ktubu after the xid but found {kind!r}")
        self.begin = kind == "ktubl"
        cur.expect("redo:")
        cur.int("slt:")
        cur.int("rci:")
        cur.expect("opc:")
        self.opc = cur.next("the undo operation code")
        if self.begin:
            self.objn = cur.int("[objn:")
            self.objd = cur.int("objd:")
        else:
            self.objn = cur.int("objn:")
            self.objd = cur.int("objd:")
        if self.opc == "11.1":
            if not cur.find("KDO", "undo", "record:"):
                raise cur.error("row undo (opc 11.1) without its KDO undo record")
            self.kdo = parse_kdo(_rewind_to_kdo(cur))
            if not cur.at_end():
                raise cur.error(f"unexpected {cur.peek()!r} after the KDO undo record")


def _rewind_to_kdo(cur: Cursor) -> Cursor:
    """Position the cursor at the next ``KDO Op code:``."""
    start = cur.i
    if not cur.find("KDO", "Op", "code:"):
        cur.i = start
        raise cur.error("KTB redo without the 'KDO Op code:' that must follow it")
    cur.i -= 3
    return cur


@dataclass(slots=True)
class Commit(ChangeVector):
    """5.4 ktucm: the transaction ends.  ``flg`` bit 0x04 marks a rollback (the flag Oracle's
    dump prints as "rolled back transaction"); anything else is a commit."""

    OPS = ((5, 4),)
    xid: str = ""
    flg: int = 0

    ROLLBACK = 0x04
    KTUCF = 0x02

    @property
    def rolled_back(self) -> bool:
        return bool(self.flg & self.ROLLBACK)

    def parse_body(self, cur: Cursor) -> None:
        cur.expect("ktucm", "redo:")
        slot = cur.hex("slt:", 4)
        sqn = cur.hex("sqn:", 8)
        cur.int("srt:")
        cur.int("sta:")
        self.flg = cur.hex("flg:")
        self.xid = f"{self.undo_usn(cur)}.{slot}.{sqn}"
        if self.flg & self.KTUCF:
            cur.expect("ktucf", "redo:", "uba:")
            cur.match(_UBA, "an undo block address")
            cur.int("ext:")
            cur.int("spc:")
            cur.int("fbi:")
        if cur.peek() == "rolled":
            cur.expect("rolled", "back", "transaction")
            if not self.rolled_back:
                raise cur.error(f"'rolled back transaction' printed but flg 0x{self.flg:x} "
                                f"lacks the rollback bit 0x04")
        if not cur.at_end():
            raise cur.error(f"unexpected {cur.peek()!r} at the end of a 5.4 commit")


@dataclass(slots=True)
class UndoApplied(ChangeVector):
    """5.6/5.11: undo applied by a rollback.  Row changes in the same redo record are then
    compensations, not new work (a partial rollback when the transaction later commits)."""

    OPS = ((5, 6), (5, 11))
    xid: str = ""

    def parse_body(self, cur: Cursor) -> None:
        if cur.find("xid:"):
            self.xid = xid_text(cur.match(XID_RE, "an xid"))


@dataclass(slots=True)
class RowChange(ChangeVector):
    """Layer 11: a row operation (IRP, DRP, LKR, URP, QMI) with its KTB transaction info."""

    OPS = ((11, 2), (11, 3), (11, 4), (11, 5), (11, 11))
    EXPECTED: ClassVar[dict[int, str]] = {2: "IRP", 3: "DRP", 4: "LKR", 5: "URP", 11: "QMI"}
    ktb_op: str = ""
    xid: str = ""
    kdo: Kdo | None = None

    def parse_body(self, cur: Cursor) -> None:
        cur.expect("KTB", "Redo")
        cur.hex("op:")
        cur.hex("ver:")
        if not cur.find("op:"):
            raise cur.error("KTB redo without its operation ('op: F', 'op: C', …)")
        self.ktb_op = cur.match(_KTB_OP, "a KTB operation letter")[0]
        if self.ktb_op == "F":
            cur.expect("xid:")
            self.xid = xid_text(cur.match(XID_RE, "an xid like 0x0004.00b.00000356"))
        kdo = parse_kdo(_rewind_to_kdo(cur))
        expected = self.EXPECTED[self.code]
        if kdo.op != expected:
            raise cur.error(f"operation {self.op} carries a KDO {kdo.op}, expected {expected}")
        if kdo.bdba != self.dba:
            raise cur.error(f"KDO bdba 0x{kdo.bdba:08x} differs from the change's "
                            f"DBA 0x{self.dba:08x}")
        if not cur.at_end():
            raise cur.error(f"unexpected {cur.peek()!r} after the {kdo.op} operation")
        self.kdo = kdo


@dataclass(slots=True)
class DirectLoad(ChangeVector):
    """19.1: a whole formatted block written by a direct-path load; every row is an insert.
    The loading transaction is the one in the block's interested transaction list."""

    OPS = ((19, 1),)
    xid: str = ""
    rows: list[KdoRow] = field(default_factory=list)

    def parse_body(self, cur: Cursor) -> None:
        cur.expect("Direct", "Loader", "block", "redo", "entry")
        if not cur.find("seg/obj:"):
            raise cur.error("direct loader block without 'seg/obj:'")
        segobj = cur.hex()
        if segobj != self.obj:
            raise cur.error(f"block seg/obj 0x{segobj:x} differs from the change's OBJ {self.obj}")
        if not cur.find("Itl"):
            raise cur.error("direct loader block without its ITL list")
        cur.expect("Xid", "Uba", "Flag", "Lck", "Scn/Fsc")
        xids = set()
        while (tok := cur.peek()) is not None and _ITL.fullmatch(tok):
            cur.next()
            m = cur.match(XID_RE, "an ITL xid")
            if m[0] != "0x0000.000.00000000":
                xids.add(xid_text(m))
            for what in ("uba", "flag", "lock count", "scn/fsc", "scn"):
                cur.next(what)
        if len(xids) != 1:
            raise cur.error(f"direct loader block names {len(xids)} transactions in its ITL "
                            f"(exactly one expected)")
        self.xid = xids.pop()
        nrow = -1
        while (tok := cur.peek()) is not None and tok != "block_row_dump:":
            counted = _NROW.fullmatch(tok)
            if counted and nrow < 0:
                nrow = int(counted[1])
            cur.next()
        cur.expect("block_row_dump:")
        while cur.peek() != "end_of_block_dump":
            cur.expect("tab")
            if cur.next("the table number") != "0,":
                cur.i -= 1
                raise cur.error("direct load into a cluster (table number other than 0) "
                                "is not supported")
            cur.expect("row")
            rowno = cur.next("the row number")
            if not rowno.endswith(",") or not rowno[:-1].isdigit():
                cur.i -= 1
                raise cur.error(f"expected a row number like '2,' but found {rowno!r}")
            cur.match(_ROWADDR, "a row address like @0x1f51")
            cur.int("tl:")
            fb, cc = _row_header(cur)
            if fb != WHOLE_ROW:
                raise cur.error(f"direct-load row with flags {fb} (only {WHOLE_ROW} expected)")
            self.rows.append(KdoRow(int(rowno[:-1]), fb, _columns(cur, cc, sequential=True)))
        cur.expect("end_of_block_dump")
        if nrow >= 0 and nrow != len(self.rows):
            raise cur.error(f"block header says nrow={nrow} but {len(self.rows)} rows are dumped")


REGISTRY: dict[tuple[int, int], type[ChangeVector]] = {
    op: cls
    for cls in (UndoHeader, UndoRecord, Commit, UndoApplied, RowChange, DirectLoad)
    for op in cls.OPS
}
