"""The table dictionary a redo dump is read with.

A redo dump names objects only by number and columns only by position, so the user supplies
what the database's data dictionary would say: owner, table, object ids, columns and keys.
The file format (JSON) is specified in docs/oracle-dumps.md; ``examples/us03_dictionary.json``
holds seed 003's COURSE and STUDENT tables.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trailgate.capture.oracle.datatypes import CHARSETS
from trailgate.errors import ConfigError
from trailgate.model import Column, ColumnKind, TableDef

__all__ = ["Dictionary", "ForeignKey", "OracleColumn", "OracleTable"]

FORMAT = "trailgate-oracle-dictionary"

_KINDS = {
    "NUMBER": ColumnKind.NUMBER,
    "FLOAT": ColumnKind.NUMBER,
    "INTEGER": ColumnKind.NUMBER,
    "VARCHAR2": ColumnKind.VARCHAR2,
    "VARCHAR": ColumnKind.VARCHAR2,
    "NVARCHAR2": ColumnKind.VARCHAR2,
    "CHAR": ColumnKind.CHAR,
    "NCHAR": ColumnKind.CHAR,
    "DATE": ColumnKind.DATE,
    "TIMESTAMP": ColumnKind.TIMESTAMP,
    "RAW": ColumnKind.RAW,
    "LONG": ColumnKind.LONG,
}
_NATIONAL = frozenset({"NVARCHAR2", "NCHAR"})


@dataclass(slots=True, eq=False)
class OracleColumn:
    """A column as COL$ describes it; ``segcol`` places it in row pieces, ``intcol`` in
    supplemental column lists (seed 000: "SEGCOL# or INTCOL#").  Compared by identity: the
    capture keys value maps by column object."""

    name: str
    type: str
    index: int
    segcol: int
    intcol: int
    kind: ColumnKind
    charset: str
    length: int | None = None
    precision: int | None = None
    scale: int | None = None
    nullable: bool = True

    @property
    def source_type(self) -> str:
        if self.type in ("NUMBER", "FLOAT") and self.precision is not None:
            return f"{self.type}({self.precision}" + (
                f",{self.scale})" if self.scale is not None else ")")
        if self.type == "TIMESTAMP":
            return f"TIMESTAMP({self.scale if self.scale is not None else 6})"
        if self.length is not None and self.kind in (
                ColumnKind.VARCHAR2, ColumnKind.CHAR, ColumnKind.RAW):
            return f"{self.type}({self.length})"
        return self.type


@dataclass(frozen=True, slots=True)
class ForeignKey:
    name: str
    columns: tuple[str, ...]
    ref_owner: str
    ref_table: str
    ref_columns: tuple[str, ...]


@dataclass(slots=True)
class OracleTable:
    """One table: its identity, columns and keys, and the ``TableDef`` the trail gets."""

    owner: str
    name: str
    object_id: int
    data_object_id: int
    columns: list[OracleColumn]
    primary_key: tuple[str, ...] = ()
    unique_keys: list[tuple[str, ...]] = field(default_factory=list)
    foreign_keys: list[ForeignKey] = field(default_factory=list)
    by_segcol: dict[int, OracleColumn] = field(default_factory=dict)
    by_intcol: dict[int, OracleColumn] = field(default_factory=dict)
    tabledef: TableDef | None = None

    @property
    def qualified_name(self) -> str:
        return f"{self.owner}.{self.name}"

    @property
    def key_columns(self) -> list[OracleColumn]:
        """The columns that identify a row, as ``tabledef.key`` names them."""
        assert self.tabledef is not None
        by_name = {c.name: c for c in self.columns}
        return [by_name[n] for n in self.tabledef.key]


class Dictionary:
    """Tables by object id and data object id."""

    def __init__(self, tables: list[OracleTable], charset: str = "AL32UTF8",
                 national_charset: str = "AL16UTF16", path: str | None = None):
        self.tables = tables
        self.charset = charset
        self.national_charset = national_charset
        self.path = path
        self._by_obj: dict[int, OracleTable] = {}
        self._by_dataobj: dict[int, list[OracleTable]] = {}
        for t in tables:
            if t.object_id in self._by_obj:
                raise ConfigError(f"object id {t.object_id} is given to both "
                                  f"{self._by_obj[t.object_id].qualified_name} and "
                                  f"{t.qualified_name}", path=path)
            self._by_obj[t.object_id] = t
            self._by_dataobj.setdefault(t.data_object_id, []).append(t)

    def by_object_id(self, object_id: int) -> OracleTable | None:
        return self._by_obj.get(object_id)

    def by_data_object_id(self, data_object_id: int) -> list[OracleTable]:
        """Every table stored in that segment (several for an index cluster)."""
        return self._by_dataobj.get(data_object_id, [])

    def tabledefs(self) -> dict[str, TableDef]:
        """``SCHEMA.TABLE`` -> TableDef, as the trail writer takes them."""
        return {t.qualified_name: t.tabledef for t in self.tables if t.tabledef is not None}

    @classmethod
    def load(cls, path: str | Path) -> Dictionary:
        """Read and validate a dictionary file; errors name the file and what to fix."""
        p = str(path)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"cannot read the dictionary: {exc.strerror}", path=p) from None
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"not valid JSON: {exc.msg}", path=p, line=exc.lineno) from None
        return cls.from_dict(doc, path=p)

    @classmethod
    def from_dict(cls, doc: Any, *, path: str | None = None) -> Dictionary:
        def fail(msg: str) -> ConfigError:
            return ConfigError(msg, path=path)

        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            raise fail(f'not a dictionary file: expected "format": "{FORMAT}"')
        if doc.get("version") != 1:
            raise fail(f"dictionary version {doc.get('version')!r} is not supported (1 is)")
        charset = str(doc.get("database_charset", "AL32UTF8")).upper()
        ncharset = str(doc.get("national_charset", "AL16UTF16")).upper()
        for cs in (charset, ncharset):
            if cs not in CHARSETS:
                raise fail(f"character set {cs} is not supported; use one of "
                           + ", ".join(sorted(CHARSETS)))
        tables_doc = doc.get("tables")
        if not isinstance(tables_doc, list) or not tables_doc:
            raise fail('"tables" must be a non-empty list')
        tables = [_table(t, i, charset, ncharset, fail) for i, t in enumerate(tables_doc)]
        return cls(tables, charset, ncharset, path)


def _req(obj: dict, key: str, typ: type, where: str, fail) -> Any:
    value = obj.get(key)
    if not isinstance(value, typ) or (isinstance(value, bool) and typ is int):
        raise fail(f'{where}: "{key}" must be a {typ.__name__}')
    return value


def _opt_int(obj: dict, key: str, where: str, fail) -> int | None:
    value = obj.get(key)
    if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
        raise fail(f'{where}: "{key}" must be an integer')
    return value


def _names(value: Any, where: str, fail) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise fail(f"{where}: key columns must be a non-empty list of column names")
    return tuple(v.upper() for v in value)


def _table(doc: Any, pos: int, charset: str, ncharset: str, fail) -> OracleTable:
    if not isinstance(doc, dict):
        raise fail(f"tables[{pos}] must be an object")
    owner = _req(doc, "owner", str, f"tables[{pos}]", fail).upper()
    name = _req(doc, "table", str, f"tables[{pos}]", fail).upper()
    where = f"table {owner}.{name}"
    object_id = _req(doc, "object_id", int, where, fail)
    data_object_id = doc.get("data_object_id", object_id)
    if not isinstance(data_object_id, int):
        raise fail(f'{where}: "data_object_id" must be an integer')
    cols_doc = _req(doc, "columns", list, where, fail)
    columns: list[OracleColumn] = []
    for i, c in enumerate(cols_doc):
        if not isinstance(c, dict):
            raise fail(f"{where}: columns[{i}] must be an object")
        cname = _req(c, "name", str, f"{where} columns[{i}]", fail).upper()
        cwhere = f"{where} column {cname}"
        ctype = _req(c, "type", str, cwhere, fail).upper()
        if ctype not in _KINDS:
            raise fail(f"{cwhere}: type {ctype} is not supported; supported types are "
                       + ", ".join(sorted(_KINDS)))
        segcol = _opt_int(c, "segcol", cwhere, fail) or i + 1
        intcol = _opt_int(c, "intcol", cwhere, fail) or segcol
        nullable = c.get("nullable", True)
        if not isinstance(nullable, bool):
            raise fail(f'{cwhere}: "nullable" must be true or false')
        columns.append(OracleColumn(
            name=cname, type=ctype, index=i, segcol=segcol, intcol=intcol,
            kind=_KINDS[ctype], charset=ncharset if ctype in _NATIONAL else charset,
            length=_opt_int(c, "length", cwhere, fail),
            precision=_opt_int(c, "precision", cwhere, fail),
            scale=_opt_int(c, "scale", cwhere, fail), nullable=nullable))
    if not columns:
        raise fail(f"{where}: no columns")
    table = OracleTable(owner, name, object_id, data_object_id, columns)
    for col in columns:
        for attr, index in (("segcol", table.by_segcol), ("intcol", table.by_intcol)):
            number = getattr(col, attr)
            if number in index:
                raise fail(f"{where}: columns {index[number].name} and {col.name} "
                           f"have the same {attr} {number}")
            index[number] = col
    names = {c.name for c in columns}

    def check(keycols: tuple[str, ...], what: str) -> tuple[str, ...]:
        missing = [k for k in keycols if k not in names]
        if missing:
            raise fail(f"{where}: {what} names unknown column(s) {', '.join(missing)}")
        return keycols

    pk = doc.get("primary_key")
    if pk is not None:
        if not isinstance(pk, dict):
            raise fail(f'{where}: "primary_key" must be an object with "columns"')
        table.primary_key = check(_names(pk.get("columns"), where, fail), "primary key")
    for uk in doc.get("unique_keys", []) or []:
        if not isinstance(uk, dict):
            raise fail(f'{where}: each of "unique_keys" must be an object with "columns"')
        table.unique_keys.append(check(_names(uk.get("columns"), where, fail), "unique key"))
    for fk in doc.get("foreign_keys", []) or []:
        if not isinstance(fk, dict) or not isinstance(fk.get("references"), dict):
            raise fail(f'{where}: each of "foreign_keys" needs "columns" and "references"')
        ref = fk["references"]
        table.foreign_keys.append(ForeignKey(
            name=str(fk.get("name", "")).upper(),
            columns=check(_names(fk.get("columns"), where, fail), "foreign key"),
            ref_owner=str(ref.get("owner", owner)).upper(),
            ref_table=_req(ref, "table", str, f"{where} foreign key", fail).upper(),
            ref_columns=_names(ref.get("columns"), where, fail)))
    table.tabledef = _tabledef(table)
    return table


def _tabledef(t: OracleTable) -> TableDef:
    """Key choice as seed 000 describes GoldenGate's: primary key, else a unique key of NOT
    NULL columns, else every column (LONG excluded)."""
    nullable = {c.name: c.nullable for c in t.columns}
    if t.primary_key:
        key, kind = list(t.primary_key), "PRIMARY"
    else:
        uk = next((u for u in t.unique_keys if not any(nullable[n] for n in u)), None)
        if uk is not None:
            key, kind = list(uk), "UNIQUE"
        else:
            key = [c.name for c in t.columns if c.kind is not ColumnKind.LONG]
            kind = "ALL"
    cols = [Column(name=c.name, index=c.index, kind=c.kind, source_type=c.source_type,
                   length=c.length, precision=c.precision, scale=c.scale,
                   nullable=c.nullable and c.name not in t.primary_key, segcol=c.segcol)
            for c in t.columns]
    return TableDef(schema=t.owner, name=t.name, columns=cols, key=key, key_kind=kind,
                    object_id=t.object_id)
