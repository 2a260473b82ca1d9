"""Extended ROWIDs from data object id, DBA and slot (seed 003's trail ROWIDs)."""

from __future__ import annotations

import pytest

from trailgate.capture.oracle.rowid import encode_rowid, split_dba


def test_dba_splits_into_file_and_block():
    assert split_dba(0x01000436) == (4, 0x436)
    assert split_dba(0x01000460) == (4, 0x460)
    assert split_dba(0x00c000b0) == (3, 0xB0)


@pytest.mark.parametrize(("dba", "slot", "rowid"), [
    (0x01000436, 10, "AAASrPAAEAAAAQ2AAK"),
    (0x01000436, 9, "AAASrPAAEAAAAQ2AAJ"),
    (0x01000436, 3, "AAASrPAAEAAAAQ2AAD"),
    (0x01000436, 11, "AAASrPAAEAAAAQ2AAL"),
    (0x01000436, 12, "AAASrPAAEAAAAQ2AAM"),
    (0x01000460, 0, "AAASrPAAEAAAARgAAA"),
    (0x01000460, 2, "AAASrPAAEAAAARgAAC"),
])
def test_seed_rowids(dba, slot, rowid):
    file, block = split_dba(dba)
    assert encode_rowid(76495, file, block, slot) == rowid


def test_rowid_field_overflow_is_refused():
    with pytest.raises(ValueError):
        encode_rowid(1, 1 << 18, 0, 0)
