"""A random workload that mixes DML with DDL, and the catalog view that says whether a
target's tables are shaped like the source's.

Used by the DDL end-to-end tests and ``benchmarks/ddl.py``.  One thread (DDL takes locks)
runs transactions over one schema's tables: DML and, one transaction in ``ddl_every``, a
DDL of one of :data:`KINDS` (columns, defaults, tables, indexes, constraints, truncates,
DDL with DML, rolled back, several in one query string, another schema).  ``cover=True``
runs every kind once first, so a short run has them all.
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from trailgate.db.connect import connect
from trailgate.demo.workload import Statement, Txn

__all__ = ["KINDS", "DdlWorkload", "TableShape", "table_shapes"]

#: The kinds of DDL transaction the workload makes (``DdlWorkload.kinds`` counts them).
KINDS = ("add", "drop", "rename_col", "retype", "set_default", "drop_default", "create",
         "ctas", "drop_table", "rename_table", "create_index", "drop_index",
         "add_constraint", "drop_constraint", "truncate", "rollback", "other", "script")

#: Column types the workload uses, and the type changes whose conversion is exact.
TYPES = ("integer", "bigint", "text", "varchar(20)", "numeric(12,2)", "boolean", "date",
         "timestamp")
RETYPE = {"integer": ("bigint", "numeric(14,2)", "text"), "varchar(20)": ("varchar(40)", "text"),
          "numeric(12,2)": ("numeric(14,2)",), "date": ("timestamp",)}


def _value(rng: random.Random, type_name: str) -> Any:
    if rng.random() < 0.1:
        return None
    base = type_name.split("(")[0]
    if base == "integer":
        return rng.randint(-10**6, 10**6)
    if base == "bigint":
        return rng.randint(-10**12, 10**12)
    if base in ("text", "varchar"):
        return "".join(rng.choice("abcdefgh ïé'") for _ in range(rng.randint(0, 18)))
    if base == "numeric":
        return Decimal(rng.randint(-10**8, 10**8)).scaleb(-2)
    if base == "boolean":
        return rng.random() < 0.5
    if base == "date":
        return dt.date(2000, 1, 1) + dt.timedelta(days=rng.randint(0, 9000))
    return dt.datetime(2000, 1, 1) + dt.timedelta(seconds=rng.randint(0, 10**9))


_DEFAULTS = {"integer": "7", "bigint": "-3", "text": "'dflt'", "varchar(20)": "'v'",
             "numeric(12,2)": "1.25", "boolean": "true", "date": "'2020-02-29'",
             "timestamp": "'2021-03-04 05:06:07'", "numeric(14,2)": "2.5",
             "varchar(40)": "'w'"}


@dataclass(slots=True)
class _Table:
    name: str  # unqualified
    cols: dict[str, str]  # name -> type, "id" first (the key)
    ids: set[int] = field(default_factory=set)
    indexes: dict[str, str] = field(default_factory=dict)  # name -> its column
    constraints: dict[str, str] = field(default_factory=dict)  # name -> its column
    defaults: set[str] = field(default_factory=set)

    def copy(self) -> _Table:
        return _Table(self.name, dict(self.cols), set(self.ids), dict(self.indexes),
                      dict(self.constraints), set(self.defaults))

    def column_gone(self, col: str) -> None:
        """A dropped column takes its indexes and constraints with it."""
        self.defaults.discard(col)
        self.indexes = {n: c for n, c in self.indexes.items() if c != col}
        self.constraints = {n: c for n, c in self.constraints.items() if c != col}

    def column_renamed(self, old: str, new: str) -> None:
        if old in self.defaults:
            self.defaults.discard(old)
            self.defaults.add(new)
        self.indexes = {n: new if c == old else c for n, c in self.indexes.items()}
        self.constraints = {n: new if c == old else c for n, c in self.constraints.items()}


class DdlWorkload:
    """Transactions for :class:`~trailgate.demo.workload.Workload` (one thread) over schema
    ``schema``; ``other`` is the schema whose DDL nobody captures."""

    def __init__(self, schema: str = "ddl", other: str = "ddlx", *, ddl_every: int = 4,
                 tables: int = 2, cover: bool = False):
        self.schema, self.other = schema, other
        self.ddl_every = ddl_every
        self.cover = cover
        self.kinds: dict[str, int] = {}  # DDL transactions run (committed or rolled back)
        self.tables: dict[str, _Table] = {}
        self._count = 0
        self._names = 0
        self._next_id = 1
        for _ in range(tables):
            name = self._new_name()
            self.tables[name] = _Table(name, {"id": "bigint", "a": "integer", "b": "text"})

    def setup_sql(self) -> str:
        """Create the schemas and the first tables (on the source and on a PostgreSQL
        target alike)."""
        out = [f"CREATE SCHEMA {self.schema};", f"CREATE SCHEMA {self.other};",
               f"CREATE TABLE {self.other}.noise (id int PRIMARY KEY, v text);"]
        for t in self.tables.values():
            out.append(f"CREATE TABLE {self.schema}.{t.name} (id bigint PRIMARY KEY, "
                       "a integer, b text);")
        return "\n".join(out)

    def qualified(self) -> list[str]:
        """The workload's tables as they are after the last committed transaction."""
        return sorted(f"{self.schema}.{n}" for n in self.tables)

    def _new_name(self) -> str:
        self._names += 1
        return f"t{self._names}"

    def _id(self) -> int:
        self._next_id += 1
        return self._next_id

    # -- DML ------------------------------------------------------------------------------
    def _dml(self, rng: random.Random, t: _Table, n: int) -> list[Statement]:
        q = f"{self.schema}.{t.name}"
        out: list[Statement] = []
        for _ in range(n):
            roll = rng.random()
            if roll < 0.5 or not t.ids:
                key = self._id()
                cols = list(t.cols)
                out.append((f"INSERT INTO {q} ({', '.join(cols)}) VALUES "
                            f"({', '.join(['%s'] * len(cols))})",
                            (key, *(_value(rng, t.cols[c]) for c in cols[1:]))))
                t.ids.add(key)
            elif roll < 0.85 and len(t.cols) > 1:
                col = rng.choice(list(t.cols)[1:])
                out.append((f"UPDATE {q} SET {col} = %s WHERE id = %s",
                            (_value(rng, t.cols[col]), rng.choice(sorted(t.ids)))))
            else:
                key = rng.choice(sorted(t.ids))
                out.append((f"DELETE FROM {q} WHERE id = %s", (key,)))
                t.ids.discard(key)
        return out

    # -- one transaction ------------------------------------------------------------------
    def __call__(self, thread: int, rng: random.Random) -> Txn:
        self._count += 1
        work = {n: t.copy() for n, t in self.tables.items()}
        if self._count % self.ddl_every or not work:
            statements: list[Statement] = []
            for _ in range(rng.randint(1, 3)):
                if work:
                    statements += self._dml(rng, rng.choice(list(work.values())),
                                            rng.randint(1, 4))
            return Txn(statements, lambda: self._commit(work))
        kind, t = self._pick(rng, work)
        statements, rollback, done = self._ddl(rng, work, kind, t)
        if rollback:
            self.kinds[done] = self.kinds.get(done, 0) + 1
        return Txn(statements, lambda: self._commit(work, done), rollback=rollback)

    def _commit(self, work: dict[str, _Table], kind: str | None = None) -> None:
        self.tables = work
        if kind is not None:
            self.kinds[kind] = self.kinds.get(kind, 0) + 1

    def _pick(self, rng: random.Random, work: dict[str, _Table]) -> tuple[str, _Table]:
        """The kind of the next DDL transaction and its table: under ``cover`` the first
        kind not yet run that some table allows, else a random one."""
        tables = list(work.values())
        if self.cover:
            for kind in KINDS:
                if kind in self.kinds:
                    continue
                able = [t for t in tables if self._allows(kind, t, len(work))]
                if able:
                    return kind, rng.choice(able)
        kind = rng.choice(["add", "add", "drop", "rename_col", "retype", "default",
                           "create", "ctas", "drop_table", "rename_table", "index",
                           "constraint", "truncate", "rollback", "other", "script"])
        return kind, rng.choice(tables)

    @staticmethod
    def _allows(kind: str, t: _Table, count: int) -> bool:
        extra = [c for c in t.cols if c != "id"]
        return {"drop": len(extra) >= 2, "rename_col": bool(extra),
                "retype": any(t.cols[c] in RETYPE and c not in t.defaults for c in extra),
                "set_default": any(c not in t.defaults for c in extra),
                "drop_default": bool(t.defaults), "drop_table": count >= 2,
                "create_index": bool(extra), "drop_index": bool(t.indexes),
                "drop_constraint": bool(t.constraints)}.get(kind, True)

    def _ddl(self, rng: random.Random, work: dict[str, _Table], kind: str, t: _Table
             ) -> tuple[list[Statement], bool, str]:
        """A DDL transaction of ``kind`` on ``t`` (another where ``t`` does not allow it):
        its statements, whether it rolls back, and the kind it is."""
        s = self.schema
        q = f"{s}.{t.name}"
        extra = [c for c in t.cols if c != "id"]
        if kind == "add" or (kind == "drop" and len(extra) < 2):
            col = f"c{self._id()}"
            typ = rng.choice(TYPES)
            default = f" DEFAULT {_DEFAULTS[typ]}" if rng.random() < 0.4 else ""
            t.cols[col] = typ
            if default:
                t.defaults.add(col)
            return [(f"ALTER TABLE {q} ADD COLUMN {col} {typ}{default}", None),
                    *self._dml(rng, t, rng.randint(0, 3))], False, "add"
        if kind == "drop":
            col = rng.choice(extra)
            del t.cols[col]
            t.column_gone(col)
            return [(f"ALTER TABLE {q} DROP COLUMN {col}", None)], False, "drop"
        if kind == "rename_col" and extra:
            old, new = rng.choice(extra), f"r{self._id()}"
            t.cols = {new if c == old else c: v for c, v in t.cols.items()}
            t.column_renamed(old, new)
            return [(f"ALTER TABLE {q} RENAME COLUMN {old} TO {new}", None),
                    *self._dml(rng, t, rng.randint(0, 2))], False, "rename_col"
        if kind == "retype":
            cols = [c for c in extra if t.cols[c] in RETYPE and c not in t.defaults]
            if cols:
                col = rng.choice(cols)
                new_type = rng.choice(RETYPE[t.cols[col]])
                t.cols[col] = new_type
                return [(f"ALTER TABLE {q} ALTER COLUMN {col} TYPE {new_type}", None)], \
                    False, "retype"
        if kind in ("default", "set_default", "drop_default") and extra:
            with_default = [c for c in extra if c in t.defaults]
            if kind == "drop_default" and with_default:
                col = rng.choice(with_default)
            elif kind == "set_default" and len(with_default) < len(extra):
                col = rng.choice([c for c in extra if c not in t.defaults])
            else:
                col = rng.choice(extra)
            if col in t.defaults:
                t.defaults.discard(col)
                return [(f"ALTER TABLE {q} ALTER COLUMN {col} DROP DEFAULT", None)], False, \
                    "drop_default"
            t.defaults.add(col)
            return [(f"ALTER TABLE {q} ALTER COLUMN {col} SET DEFAULT "
                     f"{_DEFAULTS[t.cols[col]]}", None)], False, "set_default"
        if kind == "create" or len(work) < 2:
            made = _Table(self._new_name(), {"id": "bigint", "x": rng.choice(TYPES)})
            work[made.name] = made
            return [(f"CREATE TABLE {s}.{made.name} (id bigint PRIMARY KEY, x "
                     f"{made.cols['x']})", None), *self._dml(rng, made, rng.randint(1, 4))], \
                False, "create"
        if kind == "ctas":
            made = t.copy()
            made.name, made.indexes, made.constraints, made.defaults = (self._new_name(), {}, {},
                                                                        set())
            work[made.name] = made
            return [(f"CREATE TABLE {s}.{made.name} AS SELECT * FROM {q}", None),
                    (f"ALTER TABLE {s}.{made.name} ADD PRIMARY KEY (id)", None)], False, "ctas"
        if kind == "drop_table":
            del work[t.name]
            return [(f"DROP TABLE {q}", None)], False, "drop_table"
        if kind == "rename_table":
            del work[t.name]
            t.name = self._new_name()
            work[t.name] = t
            return [(f"ALTER TABLE {q} RENAME TO {t.name}", None),
                    *self._dml(rng, t, rng.randint(0, 2))], False, "rename_table"
        if kind in ("index", "create_index", "drop_index"):
            if t.indexes and (kind == "drop_index" or (kind == "index" and rng.random() < 0.5)):
                index = rng.choice(sorted(t.indexes))
                del t.indexes[index]
                return [(f"DROP INDEX {s}.{index}", None)], False, "drop_index"
            if extra:
                index = f"i{self._id()}"
                col = rng.choice(extra)
                t.indexes[index] = col
                return [(f"CREATE INDEX {index} ON {q} ({col})", None)], False, "create_index"
        if kind in ("constraint", "add_constraint", "drop_constraint"):
            if t.constraints and (kind == "drop_constraint"
                                  or (kind == "constraint" and rng.random() < 0.5)):
                name = rng.choice(sorted(t.constraints))
                del t.constraints[name]
                return [(f"ALTER TABLE {q} DROP CONSTRAINT {name}", None)], False, \
                    "drop_constraint"
            name = f"k{self._id()}"
            col = rng.choice(extra) if extra and rng.random() < 0.5 else "id"
            t.constraints[name] = col
            check = "CHECK (id > 0)" if col == "id" else f"UNIQUE (id, {col})"
            return [(f"ALTER TABLE {q} ADD CONSTRAINT {name} {check}", None)], False, \
                "add_constraint"
        if kind == "truncate":
            t.ids.clear()
            return [(f"TRUNCATE {q}", None), *self._dml(rng, t, rng.randint(0, 2))], False, \
                "truncate"
        if kind == "rollback":
            return [(f"ALTER TABLE {q} ADD COLUMN never int", None),
                    (f"CREATE TABLE {s}.never (id int)", None)], True, "rollback"
        if kind == "other":
            n = self._id()
            return [(f"ALTER TABLE {self.other}.noise ADD COLUMN n{n} int", None),
                    (f"CREATE TABLE {self.other}.o{n} AS SELECT * FROM {self.other}.noise",
                     None),
                    (f"INSERT INTO {self.other}.noise (id) VALUES ({n})", None)], False, "other"
        col = f"c{self._id()}"  # "script": two DDL in one query string
        index = f"i{self._id()}"
        t.cols[col] = "integer"
        t.indexes[index] = col
        return [(f"ALTER TABLE {q} ADD COLUMN {col} integer; "
                 f"CREATE INDEX {index} ON {q} ({col})", None)], False, "script"


@dataclass(frozen=True, slots=True)
class TableShape:
    """A table's shape as its catalog says: columns (name, type, not null, default), its
    indexes (definitions) and constraints (name and definition)."""

    columns: tuple[tuple[str, str, bool, str | None], ...]
    indexes: tuple[str, ...]
    constraints: tuple[tuple[str, str], ...]


def table_shapes(conninfo: str, schema: str) -> dict[str, TableShape]:
    """Every table of ``schema`` by name, from the catalogs."""
    with connect(conninfo) as conn:
        tables = [r[0] for r in conn.execute(
            "SELECT c.relname::text FROM pg_class c JOIN pg_namespace n ON n.oid = "
            "c.relnamespace WHERE n.nspname = %s AND c.relkind IN ('r', 'p') ORDER BY 1",
            (schema,)).fetchall()]
        out = {}
        for name in tables:
            rel = f'"{schema}"."{name}"'
            cols = conn.execute(
                "SELECT a.attname::text, format_type(a.atttypid, a.atttypmod), a.attnotnull, "
                "pg_get_expr(d.adbin, d.adrelid) FROM pg_attribute a LEFT JOIN pg_attrdef d "
                "ON d.adrelid = a.attrelid AND d.adnum = a.attnum WHERE a.attrelid = "
                "%s::regclass AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum",
                (rel,)).fetchall()
            indexes = conn.execute(
                "SELECT pg_get_indexdef(indexrelid) FROM pg_index WHERE indrelid = "
                "%s::regclass ORDER BY 1", (rel,)).fetchall()
            constraints = conn.execute(
                "SELECT conname::text, pg_get_constraintdef(oid) FROM pg_constraint WHERE "
                "conrelid = %s::regclass AND contype <> 'n' ORDER BY 1", (rel,)).fetchall()
            out[name] = TableShape(tuple(tuple(c) for c in cols), tuple(i[0] for i in indexes),
                                   tuple(tuple(c) for c in constraints))
    return out
