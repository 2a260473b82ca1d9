"""Many whole small transactions in one blob, their trail records already final.

A source that reads a run of whole transactions of up to a thousand rows or so (the
PostgreSQL Extract's C capture loop) hands them on as one blob, so the code between it and
the file works per batch, not per transaction: the writer appends the records in one go
when its file has every table's definition and room (``TrailWriter.write_batch``);
otherwise each transaction takes the general path again, from its records with the T area
taken off, which gives the same bytes.  Only transactions that write a record are in a batch.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

from trailgate.model import OpType, TransInd
from trailgate.trail.records import H_FIXED, TYPE_T

__all__ = ["OPERATIONS", "TRANS_IND_OFFSET", "BatchTxn", "TxnBatch", "without_t_area"]

#: The operations a batch counts per table, in its order.
OPERATIONS = (OpType.INSERT, OpType.DELETE, OpType.FIELD_COMP, OpType.PK_UPDATE)
#: Where a batch's records keep their TransInd (the 11.2 layout's).
TRANS_IND_OFFSET = 4 + 4 + 24

# The blob, big-endian: u32 transactions, u32 records, u16 tables; per table a u16 length
# and its UTF-8 name, then four u32 counts of its records by operation (OPERATIONS); per
# transaction 26 bytes: u64 CSN, u64 io_time (Julian), u32 XID, u32 bytes of its records,
# u16 records; one byte per record naming its table; the records end to end, each as the
# writer writes it (CSN and XID in a T area on a transaction's first record, TransInd set).
_HEAD = struct.Struct(">IIH")
_ENTRY = struct.Struct(">QQIIH")
_COUNTS = struct.Struct(">IIII")
_U16 = struct.Struct(">H")


@dataclass(frozen=True, slots=True)
class BatchTxn:
    """One transaction of a batch, as the general path takes it: its records per run of
    one table, each record without the T area and with TransInd MIDDLE."""

    csn: int
    xid: str
    io_time: int
    runs: list[tuple[str, list[bytes]]]


@dataclass(frozen=True, slots=True)
class TxnBatch:
    """A parsed batch blob (module docstring); ``ValueError`` if it is inconsistent."""

    blob: bytes
    count: int
    names: list[str]
    counts: list[tuple[int, int, int, int]]
    index_at: int
    tables_at: int
    records_at: int

    @classmethod
    def parse(cls, blob: bytes) -> TxnBatch:
        if len(blob) < _HEAD.size:
            raise ValueError(f"a transaction batch of {len(blob)} bytes is too short")
        count, nrec, ntables = _HEAD.unpack_from(blob, 0)
        pos = _HEAD.size
        names, counts = [], []
        for _ in range(ntables):
            if pos + 2 > len(blob):
                raise ValueError("a transaction batch ends in its table list")
            size = _U16.unpack_from(blob, pos)[0]
            end = pos + 2 + size
            if end + _COUNTS.size > len(blob):
                raise ValueError("a transaction batch ends in its table list")
            names.append(blob[pos + 2:end].decode("utf-8"))
            counts.append(_COUNTS.unpack_from(blob, end))
            pos = end + _COUNTS.size
        tables_at = pos + count * _ENTRY.size
        records_at = tables_at + nrec
        if records_at > len(blob) or count == 0:
            raise ValueError(f"a transaction batch of {count} transactions and {nrec} "
                             f"records is {len(blob)} bytes")
        if nrec and max(blob[tables_at:records_at]) >= ntables:
            raise ValueError(f"a transaction batch names a table beyond its {ntables}")
        return cls(blob, count, names, counts, pos, tables_at, records_at)

    def _entry(self, k: int) -> tuple[int, int, int, int, int]:
        return _ENTRY.unpack_from(self.blob, self.index_at + k * _ENTRY.size)

    @property
    def first(self) -> tuple[int, str]:
        """(CSN, XID) of the first transaction."""
        csn, _, xid, _, _ = self._entry(0)
        return csn, str(xid)

    @property
    def last(self) -> tuple[int, str, int]:
        """(CSN, XID, io_time) of the last transaction."""
        csn, io_time, xid, _, _ = self._entry(self.count - 1)
        return csn, str(xid), io_time

    @property
    def last_records(self) -> int:
        """How many records the last transaction has."""
        return self._entry(self.count - 1)[4]

    @property
    def records(self) -> memoryview:
        """Every transaction's records, end to end, as the writer writes them."""
        return memoryview(self.blob)[self.records_at:]

    def transactions(self) -> Iterator[BatchTxn]:
        """Each transaction for the general path (see :class:`BatchTxn`)."""
        blob, names = self.blob, self.names
        pos, rec = self.records_at, self.tables_at
        for entry in _ENTRY.iter_unpack(blob[self.index_at:self.tables_at]):
            csn, io_time, xid, nbytes, nrec = entry
            end = pos + nbytes
            if end > len(blob) or rec + nrec > self.records_at:
                raise ValueError(f"transaction {xid} (CSN {csn}) runs past its batch")
            runs: list[tuple[str, list[bytes]]] = []
            for k in range(nrec):
                if pos + 4 > end:
                    raise ValueError(f"transaction {xid} (CSN {csn}) has fewer records "
                                     "than its batch says")
                size = _U16.unpack_from(blob, pos + 2)[0]
                record = without_t_area(blob[pos:pos + size]) if k == 0 else \
                    _middle(blob[pos:pos + size])
                name = names[blob[rec + k]]
                if runs and runs[-1][0] == name:
                    runs[-1][1].append(record)
                else:
                    runs.append((name, [record]))
                pos += size
            if pos != end:
                raise ValueError(f"transaction {xid} (CSN {csn}) is not the size its batch "
                                 "says")
            rec += nrec
            yield BatchTxn(csn, str(xid), io_time, runs)


def _middle(record: bytes) -> bytes:
    at = TRANS_IND_OFFSET
    if record[at] == TransInd.MIDDLE:
        return record
    return record[:at] + bytes((TransInd.MIDDLE,)) + record[at + 1:]


def without_t_area(record: bytes) -> bytes:
    """A transaction's first record as ``records.encode_row_record`` made it: the T area
    that ``records.with_t_area`` added taken off, TransInd MIDDLE."""
    pos = 8 + _U16.unpack_from(record, 6)[0]  # after the H area
    if pos - 8 < H_FIXED:
        raise ValueError("a record of a transaction batch has no room for its header")
    pos += 4 + _U16.unpack_from(record, pos + 2)[0]  # and the D area
    if pos + 4 <= len(record) - 4 and record[pos] == TYPE_T:
        size = 4 + _U16.unpack_from(record, pos + 2)[0]
        total = len(record) - size
        head = _U16.pack(total)
        record = record[:2] + head + record[4:pos] + record[pos + size:-2] + head
    return _middle(record)
