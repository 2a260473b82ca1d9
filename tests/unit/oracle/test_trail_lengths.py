"""Seed 003's examples through the trail codec: each change becomes a G record of exactly the
length the seed's TrailAnalyzer output shows (the commit SCN and XID ride on the first record
of each transaction only)."""

from __future__ import annotations

from pathlib import Path

import pytest

from trailgate.capture.oracle import capture_oracle_dumps
from trailgate.capture.oracle.dictionary import Dictionary
from trailgate.model import TransInd
from trailgate.trail.records import encode_change_record

FIXTURES = Path(__file__).parents[2] / "fixtures" / "oracle"
US03 = (Path(__file__).parents[3] / "src" / "trailgate" / "capture" / "oracle" / "examples"
        / "us03_dictionary.json")


@pytest.mark.parametrize(("name", "lengths"), [
    ("single_insert", [224]),
    ("single_update", [138]),
    ("single_delete", [126]),
    ("multi_update", [139, 115, 115]),
    ("multi_delete", [127, 103, 103]),
    ("array_insert", [218, 192, 202]),
    ("direct_load", [218, 192, 202]),
])
def test_record_lengths_match_the_seed(name, lengths):
    tables = Dictionary.load(US03).tabledefs()
    [txn] = list(capture_oracle_dumps(US03, [FIXTURES / f"{name}.dmp"]))
    records = []
    for i, change in enumerate(txn.changes):
        first = i == 0
        ind = TransInd.ONLY if len(txn.changes) == 1 else (
            TransInd.FIRST if first else
            TransInd.LAST if i == len(txn.changes) - 1 else TransInd.MIDDLE)
        records.append(encode_change_record(
            change, tables[change.table], ind,
            csn=txn.csn if first else None, xid=txn.xid if first else None))
    assert [len(r) for r in records] == lengths
    # the trail carries the seed's ROWID, commit SCN and XID as ASCII
    assert txn.changes[0].rowid.encode() in records[0]
    assert str(txn.csn).encode() in records[0] and txn.xid.encode() in records[0]


def test_insert_data_area_matches_seed_bytes():
    """Seed 003 single-row insert: the D area's column values, as TrailAnalyzer prints."""
    [txn] = list(capture_oracle_dumps(US03, [FIXTURES / "single_insert.dmp"]))
    tables = Dictionary.load(US03).tabledefs()
    record = encode_change_record(txn.changes[0], tables["US03.STUDENT"], TransInd.ONLY,
                                  csn=txn.csn, xid=txn.xid)
    for framed in ("00 00 00 04 31 30 31 31", "00 00 00 06 4A 6F 72 64 61 6E",
                   "00 00 00 0A 4D 61 6E 63 68 65 73 74 65 72", "00 00 00 04 39 30 30 30"):
        assert bytes.fromhex(framed) in record
