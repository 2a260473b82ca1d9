"""End to end on real PostgreSQL and real Spark: a randomized, concurrent workload through
Extract → (Data Pump →) Replicat leaves the target PostgreSQL tables and the Delta tables
equal to the source, row by row, compared by type.

The workload (seeded RNG, several connections committing at once) inserts, updates some
columns or all, sets NULLs, changes keys (single and composite), deletes, deletes and
re-inserts a key in one transaction, updates many rows in one statement, and writes large
values that PostgreSQL stores out of line (TOAST: an update leaving them alone does not
send them).  Every type the capture maps is in it.
"""

from __future__ import annotations

import datetime as dt
import io
import random
import string
import time
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from psycopg.types.json import Json, Jsonb

from trailgate.db.connect import connect
from trailgate.demo.compare import compare_tables, render_comparison
from trailgate.demo.databases import Databases, run_sql
from trailgate.demo.pipeline import Pipeline, PipelineSpec, available_stages
from trailgate.demo.workload import Statement, Txn, Workload
from trailgate.home import Home
from trailgate.spark.session import SPARK_DIR_ENV

pytestmark = [pytest.mark.postgres, pytest.mark.spark]

TABLES = ["rnd.alltypes", "rnd.pairs"]
DDL = """\
CREATE SCHEMA rnd;
CREATE TABLE rnd.alltypes (
  id          bigint PRIMARY KEY,
  c_smallint  smallint,
  c_integer   integer,
  c_bigint    bigint,
  c_numeric   numeric(12,2),
  c_decimal   numeric,
  c_real      real,
  c_double    double precision,
  c_text      text,
  c_varchar   varchar(40),
  c_char      char(8),
  c_bool      boolean,
  c_date      date,
  c_ts        timestamp,
  c_tstz      timestamptz,
  c_bytea     bytea,
  c_json      json,
  c_jsonb     jsonb,
  c_uuid      uuid
);
CREATE TABLE rnd.pairs (
  region  text,
  seq     integer,
  label   varchar(20),
  amount  numeric(10,3),
  note    text,
  PRIMARY KEY (region, seq)
);
"""
COLUMNS = ["c_smallint", "c_integer", "c_bigint", "c_numeric", "c_decimal", "c_real",
           "c_double", "c_text", "c_varchar", "c_char", "c_bool", "c_date", "c_ts", "c_tstz",
           "c_bytea", "c_json", "c_jsonb", "c_uuid"]
_UNICODE = string.ascii_letters + string.digits + " '\"\\\t\n%_-.,;:éüßøΩ中文🙂"


def _text(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(_UNICODE) for _ in range(n))


def _json(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth < 2 and roll < 0.3:
        return {_text(rng, rng.randint(1, 6)): _json(rng, depth + 1)
                for _ in range(rng.randint(0, 3))}
    if depth < 2 and roll < 0.45:
        return [_json(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return rng.choice([None, True, False, rng.randint(-10**6, 10**6),
                       round(rng.uniform(-1e3, 1e3), 3), _text(rng, rng.randint(0, 10))])


def _value(rng: random.Random, column: str) -> Any:
    """A random value of the column's type (NULL one time in seven)."""
    if rng.random() < 1 / 7:
        return None
    if column == "c_smallint":
        return rng.randint(-32768, 32767)
    if column == "c_integer":
        return rng.randint(-2**31, 2**31 - 1)
    if column == "c_bigint":
        return rng.randint(-2**63, 2**63 - 1)
    if column == "c_numeric":
        return Decimal(rng.randint(-10**12 + 1, 10**12 - 1)).scaleb(-2)
    if column == "c_decimal":
        return Decimal(rng.randint(-10**25, 10**25)).scaleb(-rng.randint(0, 30))
    if column in ("c_real", "c_double"):
        special = rng.random()
        if special < 0.03:
            return rng.choice([float("nan"), float("inf"), float("-inf"), -0.0])
        return rng.uniform(-1, 1) * 10 ** rng.randint(-30 if column == "c_double" else -8,
                                                      30 if column == "c_double" else 8)
    if column == "c_text":
        if rng.random() < 0.05:  # stored out of line: TOAST
            return _text(rng, rng.randint(3000, 6000))
        return _text(rng, rng.randint(0, 40))
    if column == "c_varchar":
        return "".join(rng.choice(string.printable[:94] + " ") for _ in range(rng.randint(0, 40)))
    if column == "c_char":
        return "".join(rng.choice(string.ascii_letters + " ") for _ in range(rng.randint(0, 8)))
    if column == "c_bool":
        return rng.random() < 0.5
    if column == "c_date":
        return dt.date(1900, 1, 1) + dt.timedelta(days=rng.randint(0, 200 * 366))
    if column == "c_ts":
        return dt.datetime(1950, 1, 1) + dt.timedelta(microseconds=rng.randint(0, 10**17))
    if column == "c_tstz":
        zone = dt.timezone(dt.timedelta(minutes=15 * rng.randint(-48, 56)))
        return (dt.datetime(1950, 1, 1, tzinfo=dt.UTC)
                + dt.timedelta(microseconds=rng.randint(0, 10**17))).astimezone(zone)
    if column == "c_bytea":
        return rng.randbytes(rng.randint(0, 64))
    if column == "c_json":
        return Json(_json(rng))
    if column == "c_jsonb":
        return Jsonb(_json(rng))
    if column == "c_uuid":
        return uuid.UUID(int=rng.getrandbits(128))
    raise AssertionError(column)


class TypedWorkload:
    """Random transactions over ``rnd.alltypes`` and ``rnd.pairs``.  Thread ``i`` owns the
    ids ``≡ i`` modulo the thread count and the regions ``r<i>-…``, so threads never wait on
    each other and each knows exactly which of its rows exist."""

    def __init__(self, threads: int):
        self.threads = threads
        self._next = list(range(1, threads + 1))
        self._ids: list[set[int]] = [set() for _ in range(threads)]
        self._pairs: list[set[tuple[str, int]]] = [set() for _ in range(threads)]
        self._seq = [0] * threads

    def _new_id(self, t: int) -> int:
        key = self._next[t]
        self._next[t] += self.threads
        return key

    def _new_pair(self, t: int, rng: random.Random) -> tuple[str, int]:
        self._seq[t] += 1
        return f"r{t}-{rng.randint(0, 4)}", self._seq[t]

    def __call__(self, t: int, rng: random.Random) -> Txn:
        ids, pairs = set(self._ids[t]), set(self._pairs[t])
        st: list[Statement] = []
        for _ in range(rng.randint(1, 6)):
            roll = rng.random()
            if roll < 0.25 or not ids:
                key = self._new_id(t)
                st.append((f"INSERT INTO rnd.alltypes (id, {', '.join(COLUMNS)}) VALUES "
                           f"(%s{', %s' * len(COLUMNS)})",
                           (key, *(_value(rng, c) for c in COLUMNS))))
                ids.add(key)
            elif roll < 0.45:
                cols = rng.sample(COLUMNS, rng.randint(1, 5))
                st.append((f"UPDATE rnd.alltypes SET {', '.join(f'{c} = %s' for c in cols)} "
                           "WHERE id = %s", (*(_value(rng, c) for c in cols),
                                             rng.choice(sorted(ids)))))
            elif roll < 0.52:
                old, new = rng.choice(sorted(ids)), self._new_id(t)
                extra = rng.choice(COLUMNS)
                st.append((f"UPDATE rnd.alltypes SET id = %s, {extra} = %s WHERE id = %s",
                           (new, _value(rng, extra), old)))
                ids.discard(old)
                ids.add(new)
            elif roll < 0.60:
                key = rng.choice(sorted(ids))
                st.append(("DELETE FROM rnd.alltypes WHERE id = %s", (key,)))
                ids.discard(key)
            elif roll < 0.63:  # the same key deleted and inserted again in one transaction
                key = rng.choice(sorted(ids))
                st.append(("DELETE FROM rnd.alltypes WHERE id = %s", (key,)))
                st.append((f"INSERT INTO rnd.alltypes (id, {', '.join(COLUMNS)}) VALUES "
                           f"(%s{', %s' * len(COLUMNS)})",
                           (key, *(_value(rng, c) for c in COLUMNS))))
            elif roll < 0.66:  # one statement, many rows
                st.append(("UPDATE rnd.alltypes SET c_integer = coalesce(c_integer, 0) / 2 + 1, "
                           "c_bool = NOT coalesce(c_bool, false) "
                           "WHERE id %% %s = %s AND id %% 5 = %s",
                           (self.threads, (t + 1) % self.threads, rng.randint(0, 4))))
            elif roll < 0.80 or not pairs:
                pair = self._new_pair(t, rng)
                st.append(("INSERT INTO rnd.pairs VALUES (%s, %s, %s, %s, %s)",
                           (*pair, rng.choice([None, "", _text(rng, rng.randint(1, 20))]),
                            Decimal(rng.randint(-10**9, 10**9)).scaleb(-3),
                            _value(rng, "c_text"))))
                pairs.add(pair)
            elif roll < 0.88:
                pair = rng.choice(sorted(pairs))
                st.append(("UPDATE rnd.pairs SET amount = %s, note = %s "
                           "WHERE region = %s AND seq = %s",
                           (rng.choice([None, Decimal(rng.randint(0, 10**6)).scaleb(-3)]),
                            _value(rng, "c_text"), *pair)))
            elif roll < 0.94:  # a composite key change: one part or both
                old, new = rng.choice(sorted(pairs)), self._new_pair(t, rng)
                if rng.random() < 0.5:
                    new = (old[0], new[1])
                st.append(("UPDATE rnd.pairs SET region = %s, seq = %s "
                           "WHERE region = %s AND seq = %s", (*new, *old)))
                pairs.discard(old)
                pairs.add(new)
            else:
                pair = rng.choice(sorted(pairs))
                st.append(("DELETE FROM rnd.pairs WHERE region = %s AND seq = %s", pair))
                pairs.discard(pair)

        def commit() -> None:
            self._ids[t], self._pairs[t] = ids, pairs

        return Txn(st, commit)



def _fresh(dbs: Databases, name: str) -> tuple[str, str]:
    """New source and target databases for one test (their tables created)."""
    for cluster in (dbs.source, dbs.target):
        cluster.create_database(name)
    source, target = dbs.source.conninfo(name), dbs.target.conninfo(name)
    run_sql(source, DDL)
    run_sql(target, DDL)
    return source, target


def _drop_slots(dbs: Databases, name: str) -> None:
    with connect(dbs.source.conninfo()) as conn:
        conn.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
                     "WHERE database = %s AND NOT active", (name,))


def _replicate(dbs: Databases, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *,
               name: str, tag: str, transactions: int, threads: int, seed: int,
               rate: float, **options: Any) -> Pipeline:
    source, target = _fresh(dbs, name)
    home = Home(tmp_path / "gg").create()
    monkeypatch.setenv(SPARK_DIR_ENV, str(home.dirtmp / "spark"))
    pump, replicat = available_stages()
    assert replicat, "trailgate run replicat is missing"
    spec = PipelineSpec(tables=TABLES, maps=[("rnd.*", "rnd.*")], source_db=name,
                        target_db=name, pump=pump, extract=f"EXT{tag}", pump_name=f"PMP{tag}",
                        replicat_pg_name=f"RPG{tag}", replicat_delta_name=f"RDL{tag}",
                        **options)
    pipeline = Pipeline(home, spec)
    # the groups log in by the servers' Unix sockets (the other end-to-end tests by TCP)
    setup, start = pipeline.write_files(
        Databases.login(dbs.source.conninfo(name, via_socket=True)),
        Databases.login(dbs.target.conninfo(name, via_socket=True)))
    transcript = io.StringIO()
    try:
        mark = pipeline.event_mark()
        pipeline.ggsci([setup, start], transcript)
        # a first part while the groups start Spark (capture began at ADD EXTRACT), the
        # rest once they run, paced so that it spans many micro-batches
        generator = TypedWorkload(threads)
        first = Workload(source, generator, transactions=30, threads=threads, seed=seed)
        first.start()
        first.wait(timeout=300)
        deadline = time.monotonic() + 600
        while len(pipeline.started_since(mark)) < len(pipeline.groups):
            pipeline.check_running()
            assert time.monotonic() < deadline, "the groups did not start"
            time.sleep(1)
        rest = Workload(source, generator, transactions=transactions - 30, threads=threads,
                        rate=rate, seed=seed + 1)
        rest.start()
        while not rest.done:
            pipeline.check_running()
            time.sleep(1)
        rest.wait(timeout=5)
        csn = pipeline.wait_caught_up(source, timeout=900)
        assert csn is not None
        assert first.progress.transactions + rest.progress.transactions == transactions
        results = compare_tables(source, TABLES, target=target,
                                 delta_root=pipeline.delta_root if spec.replicat_delta
                                 else None)
        report = "\n".join(render_comparison(results))
        print(report)
        assert all(r.equal for r in results), report
        assert results[0].source.count and results[1].source.count
    except BaseException:
        print(transcript.getvalue())
        for g in pipeline.groups:
            print(f"--- {g.name}: {pipeline.report_tail(g, 30)}")
        raise
    finally:
        lines = pipeline.stop_all()
        print("\n".join(lines))
        _drop_slots(dbs, name)
    return pipeline


def test_random_workload_replicates_exactly(databases: Databases, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """With ENCRYPTTRAIL AES256, KEYNAME on the Extract's trail: the Data Pump (PASSTHRU,
    no DECRYPTTRAIL) passes it through encrypted, record for record the same bytes; both
    Replicats decrypt it; no source value is in any trail file."""
    pipeline = _replicate(databases, tmp_path, monkeypatch, name="rnd_small", tag="S",
                          transactions=400, threads=3, seed=20261121, rate=40,
                          encrypt_trail="AES256, KEYNAME nightly")
    _check_encrypted(pipeline, databases.source.conninfo("rnd_small"))


def _check_encrypted(pipeline: Pipeline, source: str) -> None:
    from trailgate.trail.naming import parse_trail_file
    from trailgate.trail.reader import read_header, record_bytes

    home = pipeline.home
    files = sorted(home.resolve("./dirdat").iterdir())
    trails = {p: (parse_trail_file(p) or ("",))[0] for p in files}
    local = [p for p, prefix in trails.items() if prefix == "lt"]
    remote = [p for p, prefix in trails.items() if prefix == "rt"]
    assert local and (remote or not pipeline.spec.pump)
    for path in local + remote:
        enc = read_header(path).encryption
        assert enc is not None and (enc.cipher, enc.key_name) == ("AES256", "NIGHTLY"), path
    if remote:  # the pump re-seals what it read with the same key: the same bytes
        assert record_bytes(home.resolve("./dirdat/rt")) == record_bytes(
            home.resolve("./dirdat/lt"))
    with connect(source) as conn:
        values = [r[0] for r in conn.execute(
            "SELECT c_text FROM rnd.alltypes WHERE length(c_text) >= 12 UNION ALL "
            "SELECT note FROM rnd.pairs WHERE length(note) >= 12")]
    assert values
    blob = b"".join(p.read_bytes() for p in local + remote)
    assert not [v for v in values if v.encode() in blob]
    assert b"rnd.alltypes" in blob.lower()  # table names stay readable, as GoldenGate's


def test_format_release_trails_replicate_exactly(databases: Databases, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """EXTTRAIL …, FORMAT RELEASE 19.1 (a self-describing big-endian trail); the Data Pump
    converts it (RMTTRAIL …, FORMAT RELEASE 21.1, TRAILBYTEORDER LITTLEENDIAN); the
    PostgreSQL Replicat reads the 21.1 trail.  The target equals the source."""
    from trailgate.trail.naming import parse_trail_file
    from trailgate.trail.reader import read_header
    from trailgate.trail.release12 import input_byte_order

    pipeline = _replicate(
        databases, tmp_path, monkeypatch, name="rnd_fmt", tag="F", transactions=80,
        threads=2, seed=1912, rate=30, local_trail_options=", FORMAT RELEASE 19.1",
        remote_trail_options=", FORMAT RELEASE 21.1, TRAILBYTEORDER LITTLEENDIAN",
        replicat_delta=False)
    home = pipeline.home
    files = sorted(home.resolve("./dirdat").iterdir())  # trail files, not the readers' registry
    local = [p for p in files if (parse_trail_file(p) or ("",))[0] == "lt"]
    remote = [p for p in files if (parse_trail_file(p) or ("",))[0] == "rt"]
    assert local and remote
    assert {read_header(p).compatibility for p in local + remote} == {7}
    assert b"rnd.alltypes\x00" in remote[0].read_bytes()  # a TDR names it in its tail
    assert input_byte_order(home.resolve("./dirdat/lt"), 0) == "big"
    assert input_byte_order(home.resolve("./dirdat/rt"), 0) == "little"


@pytest.mark.heavy
def test_random_workload_replicates_exactly_heavy(databases: Databases, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    _replicate(databases, tmp_path, monkeypatch, name="rnd_heavy", tag="H", transactions=6000,
               threads=4, seed=7, rate=0)
