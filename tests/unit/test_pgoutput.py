"""pgoutput message decoding, against byte layouts built from the protocol documentation."""

from __future__ import annotations

import struct

import pytest

from trailgate.capture.postgres import pgoutput as pg
from trailgate.errors import SourceError


def s(text: str) -> bytes:
    return text.encode() + b"\0"


def tup(*values: str | object | None) -> bytes:
    out = struct.pack(">h", len(values))
    for v in values:
        if v is None:
            out += b"n"
        elif v is pg.UNCHANGED_TOAST:
            out += b"u"
        else:
            raw = str(v).encode()
            out += b"t" + struct.pack(">i", len(raw)) + raw
    return out


def test_begin_and_commit() -> None:
    begin = pg.decode(b"B" + struct.pack(">qqI", 0x1_0000_0028, 123456, 4000000000))
    assert begin == pg.Begin(final_lsn=0x1_0000_0028, commit_time=123456, xid=4000000000)
    commit = pg.decode(b"C" + struct.pack(">bqqq", 0, 0x28, 0x58, 99))
    assert commit == pg.Commit(flags=0, commit_lsn=0x28, end_lsn=0x58, commit_time=99)


def test_begin_and_commit_in_one_unpack_agree_with_the_field_reader() -> None:
    """decode reads Begin and Commit in one unpack; the field-by-field reader is the
    reference (random values, from bytes and from a memoryview); other sizes take the
    reader's path, so a short one is still a SourceError."""
    import random

    rng = random.Random(7)
    for _ in range(200):
        begin = b"B" + struct.pack(">qqI", rng.getrandbits(63), rng.getrandbits(63) - (1 << 62),
                                   rng.getrandbits(32))
        commit = b"C" + struct.pack(">bqqq", rng.randrange(-128, 128), rng.getrandbits(63),
                                    rng.getrandbits(63), rng.getrandbits(63) - (1 << 62))
        assert pg.decode(begin) == pg.decode(memoryview(begin)) == pg._begin(pg._Reader(begin))
        assert pg.decode(commit) == pg.decode(memoryview(commit)) == pg._commit(
            pg._Reader(commit))
        assert pg.decode(begin + b"x") == pg.decode(begin)  # a longer one: the reader's way
    for short in (b"C" + bytes(24), b"B" + bytes(19)):
        with pytest.raises(SourceError, match="malformed pgoutput"):
            pg.decode(short, lsn=0x10)


def test_relation_with_key_flags() -> None:
    data = (b"R" + struct.pack(">I", 16384) + s("public") + s("t1") + b"d"
            + struct.pack(">h", 2)
            + struct.pack(">b", 1) + s("id") + struct.pack(">Ii", 23, -1)
            + struct.pack(">b", 0) + s("name") + struct.pack(">Ii", 1043, 34))
    rel = pg.decode(data)
    assert isinstance(rel, pg.Relation)
    assert (rel.oid, rel.namespace, rel.name, rel.replica_identity) == (16384, "public", "t1", "d")
    assert rel.columns == [pg.RelationColumn("id", 23, -1, True),
                           pg.RelationColumn("name", 1043, 34, False)]


def test_type_and_origin() -> None:
    assert pg.decode(b"Y" + struct.pack(">I", 70000) + s("public") + s("mood")) == \
        pg.TypeMessage(70000, "public", "mood")
    assert pg.decode(b"O" + struct.pack(">q", 77) + s("node_a")) == pg.Origin(77, "node_a")


def test_insert_with_null_and_utf8() -> None:
    msg = pg.decode(b"I" + struct.pack(">I", 5) + b"N" + tup("1", None, "héllo"))
    assert msg == pg.Insert(5, ["1", None, "héllo"])


def test_update_variants() -> None:
    plain = pg.decode(b"U" + struct.pack(">I", 5) + b"N" + tup("1", pg.UNCHANGED_TOAST))
    assert plain == pg.Update(5, None, None, ["1", pg.UNCHANGED_TOAST])
    keyed = pg.decode(b"U" + struct.pack(">I", 5) + b"K" + tup("1", None) + b"N" + tup("2", "x"))
    assert keyed == pg.Update(5, "K", ["1", None], ["2", "x"])
    full = pg.decode(b"U" + struct.pack(">I", 5) + b"O" + tup("1", "a") + b"N" + tup("1", "b"))
    assert full == pg.Update(5, "O", ["1", "a"], ["1", "b"])


def test_delete_and_truncate() -> None:
    assert pg.decode(b"D" + struct.pack(">I", 5) + b"K" + tup("7", None)) == \
        pg.Delete(5, "K", ["7", None])
    assert pg.decode(b"T" + struct.pack(">ib", 2, 1) + struct.pack(">II", 5, 6)) == \
        pg.Truncate(1, [5, 6])


def test_logical_message() -> None:
    data = b"M" + struct.pack(">bq", 0, 0x99) + s("trailgate.heartbeat") + \
        struct.pack(">i", 2) + b"hi"
    assert pg.decode(data) == pg.LogicalMessage(False, 0x99, "trailgate.heartbeat", b"hi")


@pytest.mark.parametrize("data", [b"", b"Z123", b"B\x00\x01", b"I" + struct.pack(">I", 5) + b"X"])
def test_bad_messages_are_source_errors(data: bytes) -> None:
    with pytest.raises(SourceError) as info:
        pg.decode(data, lsn=0x10)
    assert "pgoutput" in str(info.value)
    if data:
        assert "0/10" in str(info.value)


def test_lsn_text_round_trip() -> None:
    assert pg.format_lsn(0x1_0000_0028) == "1/28"
    assert pg.parse_lsn("16/B374D848") == 0x16_B374_D848
    assert pg.parse_lsn(pg.format_lsn(2**63 + 5)) == 2**63 + 5
