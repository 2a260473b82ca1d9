"""A flush's fsync on another thread (TrailWriter.flush_handle / sync_handle): a write
error the kernel reports once, to whichever fsync of the file comes first, fails every
later sync of the writer too, so nothing is acknowledged over lost pages."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from trailgate.model import Change, Column, ColumnKind, OpType, TableDef, Transaction
from trailgate.trail import writer as writer_module
from trailgate.trail.writer import TrailWriter

TABLE = TableDef("S", "T", [Column("ID", 0, ColumnKind.NUMBER, "NUMBER", nullable=False)],
                 key=["ID"])


def _txn(n: int) -> Transaction:
    return Transaction(f"x{n}", 100 + n, [Change(OpType.INSERT, "S.T",
                                                 after={0: str(n).encode()})])


def test_a_handle_synced_on_another_thread_makes_the_position_durable(tmp_path: Path) -> None:
    with TrailWriter(str(tmp_path / "aa")) as w:
        w.write_transaction(_txn(1), {"S.T": TABLE})
        position, fd = w.flush_handle()
        assert fd is not None and position == w.position
        w.write_transaction(_txn(2), {"S.T": TABLE})  # the writer goes on meanwhile
        w.sync_handle(fd)
        with pytest.raises(OSError):
            os.fstat(fd)  # closed


def test_an_earlier_failed_fsync_fails_a_later_one(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    calls = {"n": 0}
    real = os.fsync

    def flaky(fd: int) -> None:  # the kernel reports the lost write to the first fsync only
        calls["n"] += 1
        if calls["n"] == 1:
            raise OSError(errno.EIO, "Input/output error")
        real(fd)

    with TrailWriter(str(tmp_path / "aa")) as w:
        w.write_transaction(_txn(1), {"S.T": TABLE})
        _, fd = w.flush_handle()
        assert fd is not None
        monkeypatch.setattr(writer_module.os, "fsync", flaky)
        with pytest.raises(OSError, match="Input/output error"):
            w.flush()  # the writer's own fsync (a rotation's, say) meets the error
        with pytest.raises(OSError, match="an earlier fsync of the trail failed"):
            w.sync_handle(fd)  # the flush thread's must not report success
        monkeypatch.setattr(writer_module.os, "fsync", real)
        with pytest.raises(OSError, match="an earlier fsync"):
            w.flush()
        w._sync_error = None  # let the context manager close the file
