"""What the fuzz tests share: sound inputs to start from, the ways to damage them, the
worker processes that try them, and the hypothesis settings of the quick and heavy runs.

Inputs start structurally valid (trails written by trailgate's writer, the Oracle dump
fixtures, parameter files from docs/, a real export) and are then damaged: bytes flipped,
ranges deleted, duplicated or inserted, lengths made huge or zero, text cut, long names,
odd encodings, NULs; pure random input as well.  Positions are aimed at structure (record
starts, line starts) so most edits land where a parser decides something.  Each example is
tried in a worker process (fuzz_worker.py) that outlives examples, so a segfault in C, a
hang or a memory blow-up fails the example instead of the test run.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import pickle
import re
import select
import struct
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "oracle"
_FRAME = struct.Struct("!I")

#: the quick run (default suite): a fixed sequence of examples, no database to carry state
QUICK = {"max_examples": 20, "derandomize": True}
#: the heavy run: fresh random examples each time (a failure prints its reproduction)
HEAVY = {"max_examples": 600, "derandomize": False}
#: seconds one example may take before it counts as a hang (a loaded 2-core machine)
EXAMPLE_TIMEOUT = float(os.environ.get("TRAILGATE_FUZZ_TIMEOUT", "60"))


def fuzz_settings(profile: dict[str, Any], scale: float = 1.0) -> settings:
    return settings(max_examples=max(1, int(profile["max_examples"] * scale)),
                    derandomize=profile["derandomize"], database=None, deadline=None,
                    print_blob=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.function_scoped_fixture,
                                           HealthCheck.large_base_example])


# -- the worker processes -----------------------------------------------------------------

class Worker:
    """A ``fuzz_worker.py`` process: :meth:`check` sends it one input and fails (raises
    ``AssertionError``) on an escape, a crash or a hang; a dead or hung worker is replaced."""

    def __init__(self, pure: bool):
        self.pure = pure
        self.proc: subprocess.Popen[bytes] | None = None
        self._eof = False
        self._scratch: tempfile.TemporaryDirectory[str] | None = None

    def _start(self) -> subprocess.Popen[bytes]:
        env = dict(os.environ)
        env.pop("TRAILGATE_PURE_PYTHON", None)
        if self.pure:
            env["TRAILGATE_PURE_PYTHON"] = "1"
        env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), env.get("PYTHONPATH", "")])
        # the worker's temporary files and home (history files, ~ in names) in one place,
        # removed with the worker
        self._scratch = tempfile.TemporaryDirectory(prefix="tgfuzz-")
        env["TMPDIR"] = env["HOME"] = self._scratch.name
        return subprocess.Popen([sys.executable, str(Path(__file__).with_name(
            "fuzz_worker.py"))], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env,
            cwd=REPO)

    def check(self, target: str, payload: dict[str, Any], timeout: float = EXAMPLE_TIMEOUT
              ) -> str:
        """What each entry point gave, a line each (after an escape, a crash or a hang:
        ``AssertionError``)."""
        if self.proc is None or self.proc.poll() is not None:
            self._cleanup()  # a dead worker's files
            self.proc = self._start()
        proc = self.proc
        assert proc.stdin is not None and proc.stdout is not None
        body = pickle.dumps((target, payload))
        path = "pure-Python" if self.pure else "C"
        self._eof = False
        try:
            proc.stdin.write(_FRAME.pack(len(body)) + body)
            proc.stdin.flush()
            reply = self._reply(proc, time.monotonic() + timeout)
        except BrokenPipeError:
            reply = None
        if reply is None:
            status: int | None = None
            if self._eof:  # the pipe closed: the worker is ending (else a hang)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    status = proc.wait(10)
            if status is None:
                proc.kill()
                proc.wait()
                self.proc = None
                raise AssertionError(f"{target} ({path} path): no answer within "
                                     f"{timeout:.0f} s: a hang")
            self.proc = None
            raise AssertionError(f"{target} ({path} path): the worker died (exit status "
                                 f"{status}{', a signal: a crash' if status < 0 else ''})")
        kind, text = reply
        if kind != "ok":
            raise AssertionError(f"{target} ({path} path): {text}")
        return text

    def _reply(self, proc: subprocess.Popen[bytes], deadline: float
               ) -> tuple[str, str] | None:
        assert proc.stdout is not None
        fd = proc.stdout.fileno()
        data = b""
        need = _FRAME.size
        header_done = False
        while True:
            while len(data) < need:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([fd], [], [], left)[0]:
                    return None
                chunk = os.read(fd, max(need - len(data), 65536))
                if not chunk:
                    self._eof = True
                    return None
                data += chunk
            if header_done:
                return pickle.loads(data[_FRAME.size:need])  # type: ignore[no-any-return]
            need = _FRAME.size + _FRAME.unpack(data[:_FRAME.size])[0]
            header_done = True

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        self._cleanup()

    def _cleanup(self) -> None:
        if self._scratch is not None:
            self._scratch.cleanup()
            self._scratch = None


_WORKERS: dict[bool, Worker] = {}


def worker(pure: bool = False) -> Worker:
    if pure not in _WORKERS:
        _WORKERS[pure] = Worker(pure)
    return _WORKERS[pure]


@atexit.register
def _close_workers() -> None:
    for w in _WORKERS.values():
        w.close()


# -- damage ------------------------------------------------------------------------------

#: values a length or count field is set to: zero, one, the largest of 2 and 4 bytes, signs
HUGE = [b"\x00\x00", b"\x00\x01", b"\xff\xff", b"\x7f\xff", b"\x80\x00",
        b"\x00\x00\x00\x00", b"\xff\xff\xff\xff", b"\x7f\xff\xff\xff", b"\x80\x00\x00\x00"]
#: bytes inserted into text: NULs, bad UTF-8, a BOM, Latin-1, quotes and brackets, a long
#: name, huge and odd numbers, line ends
ODD = [b"\x00", b"\xff\xfe", b"\xef\xbb\xbf", b"\xe9", b"\xc3", b"\xed\xa0\x80", b'"', b"'",
       b"(", b")", b",", b";", b"*", b"?", b"\\", b"&", b"--", b"\r\n", b"\r", b"\t", b" ",
       b"\n\n", b"{", b"}", b"[", b"]", b"A" * 5000, b"x" * 300, b"9" * 40, b"-1", b"0",
       b"1e400", b"NaN", b"-0", b"18446744073709551616", b"99999999999999999999999",
       b"\xe2\x80\x8b", b"\xf0\x9f\x98\x80", b"%s%n", b"$HOME", b"~", b"/", b"../", b"./x"]

Edit = tuple[str, int, int, bytes]


def edits(max_edits: int = 6, extra: list[bytes] | None = None) -> st.SearchStrategy[
        list[Edit]]:
    """Lists of (how, anchor, offset, bytes) edits for :func:`apply_edits`."""
    pool = ODD + (extra or [])
    inserted = st.one_of(st.sampled_from(pool), st.binary(min_size=1, max_size=48))
    one = st.one_of(
        st.tuples(st.just("set"), st.integers(0, 1 << 16), st.integers(0, 96),
                  st.binary(min_size=1, max_size=1)),
        st.tuples(st.just("len"), st.integers(0, 1 << 16), st.integers(0, 96),
                  st.sampled_from(HUGE)),
        st.tuples(st.just("del"), st.integers(0, 1 << 16), st.integers(0, 96),
                  st.sampled_from([b"\x01", b"\x04", b"\x10", b"\x40", b"\xff"])),
        st.tuples(st.just("ins"), st.integers(0, 1 << 16), st.integers(0, 96), inserted),
        st.tuples(st.just("dup"), st.integers(0, 1 << 16), st.integers(0, 96),
                  st.sampled_from([b"\x04", b"\x20", b"\x80", b"\xff"])),
        st.tuples(st.just("cut"), st.integers(0, 1 << 16), st.integers(0, 96), st.just(b"")),
        st.tuples(st.just("nul"), st.integers(0, 1 << 16), st.integers(0, 96),
                  st.sampled_from([b"\x01", b"\x08", b"\x40"])),
    )
    return st.lists(one, min_size=1, max_size=max_edits)


def apply_edits(base: bytes, anchors: list[int], changes: list[Edit]) -> bytes:
    """``base`` with each edit applied at ``anchors[anchor % n] + offset``: ``set`` a byte,
    ``len`` overwrite with a length value, ``del``/``dup``/``nul`` a range of ``bytes[0]``
    bytes, ``ins`` bytes, ``cut`` the rest."""
    data = bytearray(base)
    for how, anchor, offset, arg in changes:
        at = (anchors[anchor % len(anchors)] if anchors else 0) + offset
        at = min(at, len(data))
        if how == "set" and at < len(data):
            data[at] = arg[0]
        elif how == "len":
            data[at:at + len(arg)] = arg
        elif how == "del":
            del data[at:at + arg[0]]
        elif how == "dup":
            data[at:at] = data[at:at + arg[0]]
        elif how == "nul":
            data[at:at + arg[0]] = bytes(len(data[at:at + arg[0]]))
        elif how == "ins":
            data[at:at] = arg
        elif how == "cut":
            del data[at:]
    return bytes(data)


def line_anchors(data: bytes) -> list[int]:
    return [0, *(m.end() for m in re.finditer(rb"\n", data)),
            *(m.start() for m in re.finditer(rb"[ ,(=:\"]", data))]


# -- sound inputs --------------------------------------------------------------------------

@dataclass(frozen=True)
class TrailBase:
    """A trail written by trailgate: its files, and in each where to aim damage (points in
    its file header and each record's start)."""

    name: str
    files: tuple[bytes, ...]
    anchors: tuple[tuple[int, ...], ...]


_TRAILS: dict[str, TrailBase] = {}


def trail_base(release: str | None, order: str | None = None, big: bool = False
               ) -> TrailBase:
    """Seed 003's workload, a DDL change with its new definition, an update, a key change
    and a truncate, a comment, a token-laden change (70,000-byte value: fragments, when
    ``big``), in two files; 11.2 (``release`` None) or a 12c+ release in ``order``."""
    from trailgate.model import Change, Column, ColumnKind, OpType, TableDef, Transaction
    from trailgate.sample import COURSE, STUDENT, seed_transactions
    from trailgate.trail import TrailReader, TrailWriter
    from trailgate.trail.header import decode_file_header
    from trailgate.trail.release import parse_release

    key = f"{release}-{order}-{big}"
    if key in _TRAILS:
        return _TRAILS[key]
    t1 = TableDef("APP", "T", [Column("ID", 0, ColumnKind.NUMBER, "NUMBER", nullable=False),
                               Column("V", 1, ColumnKind.VARCHAR2, "VARCHAR2(40)")], ["ID"])
    t2 = TableDef("APP", "T", [*t1.columns, Column("W", 2, ColumnKind.DATE, "DATE")], ["ID"])
    tables = {STUDENT.qualified_name: STUDENT, COURSE.qualified_name: COURSE,
              t1.qualified_name: t1}
    fmt = {} if release is None else {"format": parse_release(release, order)}
    with tempfile.TemporaryDirectory() as tmp:
        with TrailWriter(f"{tmp}/aa", fsync=False, **fmt) as w:
            txns = seed_transactions()
            for txn in txns[: len(txns) // 2]:
                w.write_transaction(txn, tables)
            w.write_comment("fuzz base")
            w.begin_transaction("7.1.1", 77)
            w.add_change(Change(OpType.INSERT, "APP.T", after={0: b"1", 1: b"one"},
                                tokens={"TK_HOST": "db1"}), t1)
            w.add_change(Change(OpType.DDL, "APP.T",
                                text="ALTER TABLE app.t ADD (w DATE)"), None)
            w.add_definition(t2)
            w.commit_transaction()
            w.write_transaction(Transaction("7.1.2", 78, [Change(
                OpType.UPDATE, "APP.T", before={0: b"1", 1: b"one", 2: None},
                after={0: b"1", 1: b"two", 2: b"2026-11-27:10:00:00"}), Change(
                OpType.PK_UPDATE, "APP.T", before={0: b"1"}, after={0: b"2", 1: b"three"}),
                Change(OpType.TRUNCATE, "APP.T")]), {"APP.T": t2})
            w.start_file()
            for txn in txns[len(txns) // 2:]:
                w.write_transaction(txn, tables)
            value = b"v" * (70_000 if big else 300)
            change = Change(OpType.INSERT, "US03.STUDENT", after={0: b"1", 1: value, 2: None},
                            tokens={"HOST": "db1", "GROUP": "EXT1"})
            w.write_transaction(Transaction("9.1.1", 99, [change] * 2), tables)
        seqs = sorted(Path(tmp).iterdir())
        files = tuple(p.read_bytes() for p in seqs)
        # the file header's fields (every 24 bytes of it), then each record's start
        anchors: list[list[int]] = [list(range(0, decode_file_header(f).length, 24))
                                    for f in files]
        for pos, _ in TrailReader(f"{tmp}/aa").raw_records():
            anchors[pos.seqno].append(pos.rba)
    base = TrailBase(key, files, tuple(tuple(a) for a in anchors))
    _TRAILS[key] = base
    return base


#: the trail formats fuzzed: 11.2 (seeds 001/002) and the 12c+ releases and byte orders
TRAIL_FORMATS = [(None, None, False), (None, None, True), ("12.1", "little", False),
                 ("19.1", "big", False), ("21.1", "little", True)]


def doc_blocks(pattern: str) -> list[str]:
    """The fenced code blocks of docs/*.md whose first line matches ``pattern``."""
    out = []
    for md in sorted((REPO / "docs").glob("*.md")):
        for block in re.findall(r"```[a-z]*\n(.*?)```", md.read_text("utf-8"), re.S):
            if re.match(pattern, block.lstrip(), re.I):
                out.append(block)
    return out


def jsonl_base() -> bytes:
    """A real ``trail export`` of the 11.2 base trail, as JSON Lines."""
    from trailgate.interchange import export_records

    base = trail_base(None)
    with tempfile.TemporaryDirectory() as tmp:
        for seq, data in enumerate(base.files):
            Path(tmp, f"aa{seq:09d}").write_bytes(data)
        return "".join(json.dumps(obj) + "\n" for obj in export_records(f"{tmp}/aa")
                       ).encode()


def same_on_both_paths(target: str, payload: dict[str, Any]) -> None:
    """``payload`` through the C and the pure-Python workers: clean on both, and every entry
    point gives the same on both (the C codec must decide as the Python reference does)."""
    c_path = worker(False).check(target, payload).splitlines()
    python = worker(True).check(target, payload).splitlines()
    for mine, reference in zip(c_path, python, strict=False):
        assert mine == reference, f"C and Python differ:\n  C:      {mine}\n  Python: {reference}"
    assert len(c_path) == len(python), (c_path, python)
