"""A load's progress on screen, per table, and its summary table at the end.

Tasks write a small file per range as they go (:mod:`~trailgate.load.task`); a driver
thread reads them every half second and shows, per table, rows done of the catalog's
estimate, rows per second and the time left.  A terminal gets the lines redrawn in place;
anything else (a report, a pipe) gets a block every ``every`` seconds.  Rows of a range in
flight are estimated from the bytes it has read and the bytes per row of finished ranges.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from trailgate.load.manifest import Manifest, TableState

__all__ = ["Progress", "fmt_count", "fmt_duration", "summary_lines"]


def fmt_count(n: int | float | None) -> str:
    return "?" if n is None else f"{int(n):,}"


def fmt_duration(seconds: float | None) -> str:
    if seconds is None or seconds != seconds or seconds == float("inf"):
        return "--:--:--"
    s = int(seconds)
    return f"{s // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}"


@dataclass(slots=True)
class _TableProgress:
    state: TableState
    before: int  # rows of ranges done before this run
    started: float | None = None
    finished: float | None = None
    rows: int = 0  # this run: finished ranges
    bytes_done: int = 0  # this run: bytes of finished ranges
    inflight_bytes: int = 0

    def estimate_rows(self) -> float:
        per_row = (self.bytes_done / self.rows) if self.rows else None
        if per_row is None:
            pages = self.state.estimate
            per_row = 100.0 if not pages else None
        inflight = self.inflight_bytes / per_row if per_row else 0.0
        return self.before + self.rows + inflight


class Progress:
    """Follows one run's progress files (see the module docstring)."""

    def __init__(self, manifest: Manifest, directory: Path, out: TextIO, *,
                 tty: bool, every: float = 10.0,
                 on_tick: Callable[[], None] | None = None):
        self.directory = directory
        self.out = out
        self.tty = tty
        self.every = every
        self.on_tick = on_tick
        self.tables = {t.number: _TableProgress(t, sum(r.rows for r in t.ranges if r.done))
                       for t in manifest.tables}
        self._done_ranges: dict[tuple[int, int], tuple[int, int]] = {}
        self._last_bytes: dict[tuple[int, int], int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="load progress", daemon=True)
        self._drawn = 0
        self._last_block = 0.0
        self.started = time.monotonic()

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._poll()
        self._draw(final=True)

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            if self.on_tick is not None:
                self.on_tick()
            self._poll()
            if self.tty or time.monotonic() - self._last_block >= self.every:
                self._draw()

    def _poll(self) -> None:
        inflight: dict[int, int] = {}
        try:
            entries = list(self.directory.iterdir())
        except OSError:
            return
        for entry in entries:
            if entry.name.startswith(".") or not entry.name.endswith(".json"):
                continue
            try:
                table, index = (int(x) for x in entry.stem.split("-"))
                data = json.loads(entry.read_text())
            except (OSError, ValueError):
                continue
            tp = self.tables.get(table)
            if tp is None:
                continue
            if tp.started is None:
                tp.started = time.monotonic()
            if data.get("done"):
                if (table, index) not in self._done_ranges:
                    last = self._last_bytes.get((table, index), 0)
                    self._done_ranges[(table, index)] = (int(data.get("rows", 0)), last)
                    tp.rows += int(data.get("rows", 0))
                    tp.bytes_done += last if data.get("rows") else 0
            else:
                b = int(data.get("bytes", 0))
                self._last_bytes[(table, index)] = b
                inflight[table] = inflight.get(table, 0) + b
        for number, tp in self.tables.items():
            tp.inflight_bytes = inflight.get(number, 0)
            if tp.finished is None and tp.started is not None and self._finished(tp):
                tp.finished = time.monotonic()

    def _finished(self, tp: _TableProgress) -> bool:
        st = tp.state
        now_done = sum(1 for k in self._done_ranges if k[0] == st.number)
        return st.done_ranges + now_done >= len(st.ranges)

    def wall_seconds(self, number: int) -> float:
        """How long table ``number``'s ranges took in this run (first start to last end)."""
        tp = self.tables[number]
        if tp.started is None:
            return 0.0
        return (tp.finished or time.monotonic()) - tp.started

    def lines(self) -> list[str]:
        out = []
        now = time.monotonic()
        for tp in self.tables.values():
            st = tp.state
            done = tp.estimate_rows()
            total = st.estimate
            if st.complete and not tp.started:
                out.append(f"  {st.source:<32} done before ({fmt_count(tp.before)} rows)")
                continue
            elapsed = (now - tp.started) if tp.started else 0.0
            rate = (done - tp.before) / elapsed if elapsed > 0 else 0.0
            if total:
                pct = f"{min(100.0, 100.0 * done / total):5.1f}%"
                eta = (max(0.0, total - done) / rate) if rate > 0 else None
            else:
                pct, eta = "    ?%", None
            finished = self._finished(tp)
            if finished and tp.finished is not None:
                elapsed = tp.finished - (tp.started or tp.finished)
                rate = (done - tp.before) / elapsed if elapsed > 0 else 0.0
            out.append(f"  {st.source:<32} {fmt_count(done):>12} / ~{fmt_count(total):<12} "
                       f"{pct}  {fmt_count(rate):>9} rows/s  "
                       f"{'done' if finished else 'ETA ' + fmt_duration(eta)}")
        return out

    def _draw(self, final: bool = False) -> None:
        lines = self.lines()
        if self.tty:
            if self._drawn:
                self.out.write(f"\x1b[{self._drawn}F")
            for line in lines:
                self.out.write("\x1b[2K" + line + "\n")
            self._drawn = len(lines)
        elif lines:
            stamp = time.strftime("%Y-%m-%d %H:%M:%S")
            self.out.write(f"{stamp}  load progress:\n" + "\n".join(lines) + "\n")
        self.out.flush()
        self._last_block = time.monotonic()


def summary_lines(manifest: Manifest) -> list[str]:
    """The table a load prints at the end (and INFO shows): one line per table."""
    head = (f"{'Table':<30} {'Target':<30} {'Split':<12} {'Ranges':>9} {'Rows':>12} "
            f"{'Seconds':>8} {'Rows/s':>10}")
    out = [head, "-" * len(head)]
    total_rows = 0
    total_seconds = 0.0
    for t in manifest.tables:
        split = t.split if t.split != "key" else f"key {t.key_column}"
        rate = t.rows / t.seconds if t.seconds else 0
        out.append(f"{t.source:<30} {t.target:<30} {split[:12]:<12} "
                   f"{f'{t.done_ranges}/{len(t.ranges)}':>9} {t.rows:>12,} "
                   f"{t.seconds:>8.1f} {rate:>10,.0f}")
        total_rows += t.rows
        total_seconds = max(total_seconds, t.seconds)
    done = sum(1 for t in manifest.tables if t.complete)
    out.append("-" * len(head))
    out.append(f"{done} of {len(manifest.tables)} table(s) complete, {total_rows:,} rows"
               + ("" if manifest.complete else "; START the load again to finish it (only "
                  "unfinished ranges are redone)"))
    return out
