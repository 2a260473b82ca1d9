"""Reading a trail with Spark beside Spark's own JSON and Parquet readers, same changes.

Writes a trail of N ten-column changes of one PostgreSQL-typed table (inserts, full
updates, deletes; ten changes a transaction), exports it with ``trail export`` (JSON Lines,
what a user without the trail source would read) and writes the same rows as Parquet with
Spark, then times, in one session and one after the other:

* ``groupBy("op").count()`` over the generic trail form (its default schema), over the
  generic form given only ``op`` (``.schema("op string")``: Spark's Python sources have no
  column pruning, a narrower schema is how a query asks for less), over the typed form
  (``option("table", …)``) with its own schema and given only ``op``, over the JSON Lines
  file and over Parquet;
* a whole typed read (every column, aggregated so each value is used: ``sum(price)``,
  ``max(at)``, ``count(name)``), the same over the generic form, over the JSON file (Spark
  infers a schema of its own, as a user would have it) and over Parquet.

The queries run in rounds, each round every query once (three rounds by default), and
each query's best round counts: the first round warms the JVM and the Python workers, and
on a shared machine interleaving spreads the load's drift over every reader.  Prints
seconds and each one's ratio to the JSON reader's time for the same query.

    .venv/bin/python benchmarks/spark_read.py [--changes 1000000] [--keep DIR] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from trailgate.model import (
    Change,
    Column,
    ColumnKind,
    OpType,
    TableDef,
    Transaction,
    julian_from_unix_micros,
)
from trailgate.trail import TrailWriter

TABLE = TableDef("public", "bench", [
    Column("id", 0, ColumnKind.NUMBER, "bigint", nullable=False),
    Column("qty", 1, ColumnKind.NUMBER, "integer"),
    Column("price", 2, ColumnKind.NUMBER, "numeric(12,2)"),
    Column("ratio", 3, ColumnKind.NUMBER, "double precision"),
    Column("name", 4, ColumnKind.VARCHAR2, "text"),
    Column("flag", 5, ColumnKind.NUMBER, "boolean"),
    Column("day", 6, ColumnKind.DATE, "date"),
    Column("at", 7, ColumnKind.TIMESTAMP, "timestamp with time zone"),
    Column("blob", 8, ColumnKind.RAW, "bytea"),
    Column("code", 9, ColumnKind.VARCHAR2, "character varying(20)"),
], key=["id"])
BASE = 1_700_000_000_000_000


def _image(n: int) -> dict[int, bytes | None]:
    return {
        0: b"%d" % n, 1: b"%d" % (n % 1000), 2: b"%d.%02d" % (n % 100000, n % 100),
        3: b"%d.25" % (n % 77), 4: b"customer %d" % (n % 997), 5: b"1" if n % 2 else b"0",
        6: b"2024-%02d-%02d:00:00:00" % (n % 12 + 1, n % 28 + 1),
        7: b"2024-02-29:12:%02d:%02d.%06d000" % (n % 60, n % 59, n % 1000000),
        8: bytes([n % 256, 1, 2, 3]), 9: None if n % 5 == 0 else b"C%d" % (n % 50),
    }


def write_trail(trail: Path, changes: int) -> None:
    writer = TrailWriter(trail, fsync=False, producer="BENCH")  # 500 MB files, as Extract
    tables = {TABLE.qualified_name: TABLE}
    per_txn = 10
    for t in range(changes // per_txn):
        batch = []
        for r in range(per_txn):
            n = t * per_txn + r
            t_io = julian_from_unix_micros(BASE + n * 1000)
            op = (OpType.INSERT, OpType.INSERT, OpType.UPDATE, OpType.DELETE)[n % 4]
            if op is OpType.DELETE:
                batch.append(Change(op, "public.bench", io_time=t_io,
                                    before={0: b"%d" % (n - 1)}))
            else:
                batch.append(Change(op, "public.bench", io_time=t_io, after=_image(n)))
        writer.write_transaction(Transaction(f"1.{t}.9", 10_000 + t, batch), tables)
    writer.close()


def best_interleaved(queries: list[tuple[str, str, Callable[[], object]]], rounds: int
                     ) -> list[tuple[str, str, float]]:
    """Each query's best time over ``rounds`` rounds, every round running every query once:
    on a shared machine the load drifts, and a reader measured only while it was high
    would be wronged (the JVM also warms up over the first round)."""
    times: list[list[float]] = [[] for _ in queries]
    for _ in range(rounds):
        for k, (_, _, fn) in enumerate(queries):
            start = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - start)
    return [(q, what, min(t)) for (q, what, _), t in zip(queries, times, strict=True)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--changes", type=int, default=1_000_000)
    parser.add_argument("--keep", help="work directory to keep (default: a temporary one)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of every query")
    args = parser.parse_args()
    work = Path(args.keep or tempfile.mkdtemp(prefix="spark-read-"))
    work.mkdir(parents=True, exist_ok=True)
    trail = work / "dirdat" / "bt"
    json_path = work / "changes.jsonl"
    parquet = work / "changes.parquet"

    if not any(trail.parent.glob("bt*")):
        t = time.perf_counter()
        write_trail(trail, args.changes)
        print(f"wrote {args.changes:,} changes: {time.perf_counter() - t:.1f} s",
              file=sys.stderr)
    if not json_path.exists():
        t = time.perf_counter()
        with open(json_path, "w") as out:
            subprocess.run([sys.executable, "-m", "trailgate.cli", "trail", "export",
                            str(trail)], stdout=out, check=True)
        print(f"exported JSON Lines: {time.perf_counter() - t:.1f} s", file=sys.stderr)

    from pyspark.sql import functions as F

    from trailgate.spark import get_spark

    spark = get_spark("bench-spark-read")
    generic = spark.read.format("trail").load(str(trail))
    typed = spark.read.format("trail").option("table", "public.bench").load(str(trail))
    if not parquet.exists():
        typed.write.parquet(str(parquet))
    js = spark.read.json(str(json_path))
    pq = spark.read.parquet(str(parquet))
    only_op = spark.read.format("trail").schema("op string").load(str(trail))
    typed_op = (spark.read.format("trail").option("table", "public.bench")
                .schema("op string").load(str(trail)))
    total = generic.count()
    assert total == typed.count() == pq.count(), "the readers disagree on the row count"

    def group(df: object) -> Callable[[], object]:
        return lambda: df.groupBy("op").count().collect()  # type: ignore[attr-defined]

    cols = [c for c in js.columns if c != "op"]
    results = best_interleaved([
        ("groupBy(op).count", "json", group(js)),
        ("groupBy(op).count", "trail generic", group(generic)),
        ("groupBy(op).count", "trail generic, schema op", group(only_op)),
        ("groupBy(op).count", "trail typed", group(typed)),
        ("groupBy(op).count", "trail typed, schema op", group(typed_op)),
        ("groupBy(op).count", "parquet", group(pq)),
        ("full read", "json", lambda: js.agg(*[F.count(c) for c in cols]).collect()),
        ("full read", "trail generic", lambda: generic.agg(
            F.count("after"), F.count("before"), F.count("io_time")).collect()),
        ("full read", "trail typed", lambda: typed.agg(
            F.sum("price"), F.max("at"), F.count("name"), F.count("blob"),
            F.count("before")).collect()),
        ("full read", "parquet", lambda: pq.agg(
            F.sum("price"), F.max("at"), F.count("name"), F.count("blob"),
            F.count("before")).collect()),
    ], args.rounds)
    print(f"{total:,} changes, {os.cpu_count()} cores; load: {os.getloadavg()}")
    ref = {q: s for q, what, s in results if what == "json"}
    for query, what, seconds in results:
        print(f"{query:20} {what:26} {seconds:7.2f} s   JSON/this {ref[query] / seconds:5.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
