"""The D areas of the metadata records of a self-describing trail: the database definition
(DDR) and the table definitions (TDR), and what a TDR says about each column's framing.

A GoldenGate Extract writes them as binary token trees (:mod:`.metabin`); Logdump prints them
as text (the DEFGEN column table, docs/trail-format.md "Metadata records").  trailgate reads
both, and writes that text plus one ``*trailgate`` line with the seed-004 definition text so
its own trails read back to the same TableDef; a text TDR without that line is read from the
column table alone, a binary one from its column entries.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from trailgate.model import Column, ColumnKind, TableDef
from trailgate.trail.metadata import ORACLE_TYPE_CODES, decode_tabledef, encode_tabledef
from trailgate.trail.release12.metabin import (
    BinColumn,
    BinDdr,
    BinTdr,
    build_ddr,
    build_tdr,
    is_binary,
    parse_ddr,
    parse_tdr,
)

__all__ = [
    "ColumnSpec",
    "DatabaseDef",
    "TableSpec",
    "decode_ddr",
    "decode_tdr",
    "encode_ddr",
    "encode_ddr_binary",
    "encode_tdr",
    "encode_tdr_binary",
    "spec_of",
]

GG_ASCII_FIXED, GG_ASCII_VAR, GG_BIN32, GG_BIN64, GG_DATETIME = 0, 64, 132, 134, 192
_BINARY_SIZES = {GG_BIN32: 4, GG_BIN64: 8}
TRAILGATE_LINE = "*trailgate "
_COLUMN_LINE = re.compile(r"\s*(.*?)\s+((?:-?\d+\s+){22}-?\d+)\s*\Z")
_FIXED_KINDS = frozenset({ColumnKind.CHAR, ColumnKind.DATE, ColumnKind.TIMESTAMP})
#: Native type codes of the Oracle types trailgate's kinds model (seed 004's A5 codes).
_KIND_BY_ORACLE = {code: kind for kind, code in ORACLE_TYPE_CODES.items()}
#: The DDR's "Database type" for the file header's VendorType (seed 001's table).
VENDOR_NAMES = {7: "ORACLE", 21: "POSTGRESQL", 6: "MYSQL", 5: "MSSQL", 1: "DB2 UDB"}


@dataclass(slots=True)
class DatabaseDef:
    """A DDR's fields, as Logdump prints them."""

    name: str = ""
    version: int = 1
    db_type: str = "ORACLE"
    charset: str = "UTF-8"
    ncharset: str = "UTF-16"
    locale: str = "neutral"
    case_sensitivity: str = "14 14 14 14 14 14 14 14 14 14 14 14 11 14 14 14"
    timezone: str = "GMT"
    other: dict[str, str] = field(default_factory=dict)
    binary: bool = False  # read from GoldenGate's binary DDR (no charset or locale known)

    def lines(self) -> list[str]:
        """The DDR as Logdump prints it; a binary DDR's tokens of unknown meaning are listed
        by their token path instead of the fields they may hold."""
        if not self.binary:
            return [f"{label}: {getattr(self, attr)}" for attr, label in _DDR_LABELS]
        out = [f"Database Name: {self.name}", f"DDR Version: {self.version}",
               f"Database type: {self.db_type}",
               f"Case sensitivity: {self.case_sensitivity}", f"TimeZone: {self.timezone}"]
        if self.other:
            out.append("Tokens of unknown meaning: " + ", ".join(
                f"{k} = {v}" for k, v in self.other.items()))
        return out


_DDR_LABELS = [("name", "Database Name"), ("version", "DDR Version"),
               ("db_type", "Database type"), ("charset", "Character set ID"),
               ("ncharset", "National character set ID"), ("locale", "Locale"),
               ("case_sensitivity", "Case sensitivity"), ("timezone", "TimeZone")]


def encode_ddr(ddr: DatabaseDef) -> bytes:
    """The DDR's D area: its fields one a line, as Logdump shows them."""
    return "".join(f"{label}: {getattr(ddr, attr)}\n" for attr, label in _DDR_LABELS
                   ).encode("utf-8")


def decode_ddr(data: bytes, db_type: str = "") -> DatabaseDef:
    """A DDR's fields: GoldenGate's binary DDR (its database type is ``db_type``, the file
    header's) or the text :func:`encode_ddr` writes; ``ValueError`` for anything else."""
    if is_binary(data):
        found = parse_ddr(data)
        return DatabaseDef(found.name, found.version, db_type, "", "", "",
                           " ".join(f"{b:02x}" for b in found.case_sensitivity),
                           found.timezone, {k: str(v) for k, v in found.unknown.items()},
                           binary=True)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError("the DDR is neither text nor a binary DDR (a GoldenGate 12.2 token "
                         "tree)") from None
    ddr = DatabaseDef()
    by_label = {label: attr for attr, label in _DDR_LABELS}
    seen = False
    for line in text.splitlines():
        label, sep, value = line.partition(":")
        if not sep:
            continue
        attr = by_label.get(label.strip())
        value = value.strip()
        if attr == "version":
            ddr.version = int(value) if value.isdigit() else 0
        elif attr is not None:
            setattr(ddr, attr, value)
        else:
            ddr.other[label.strip()] = value
        seen = seen or attr is not None
    if not seen:
        raise ValueError("the DDR holds none of the fields Logdump prints")
    return ddr


@dataclass(frozen=True, slots=True)
class ColumnSpec:
    """How one column is framed in a 12c+ D area: ``var`` (null flag, 2-byte length, bytes),
    ``fixed`` (null flag, bytes), ``char`` (as var, read as a fixed-width CHAR of ``size``),
    ``int`` (null flag, a ``size``-byte big-endian integer with ``scale`` decimals)."""

    mode: str
    size: int = 0
    scale: int = 0


@dataclass(slots=True)
class TableSpec:
    """A TDR as the decoder uses it: the table's name, its definition (``None`` when the TDR
    could not be read) and each column's framing by index."""

    name: str
    definition: TableDef | None
    columns: dict[int, ColumnSpec] = field(default_factory=dict)
    problem: str | None = None
    binary: BinTdr | None = None  # the TDR as GoldenGate wrote it, when it was binary

    @property
    def plain(self) -> bool:
        """True when every value is framed as in the 11.2 layout (no value conversion)."""
        return self.definition is not None and all(
            c.mode in ("var", "fixed") for c in self.columns.values())

    @property
    def fixed(self) -> frozenset[int]:
        return frozenset(i for i, c in self.columns.items() if c.mode == "fixed")


def _external_length(col: Column) -> int:
    kind = col.kind
    if kind is ColumnKind.DATE:
        return 19
    if kind is ColumnKind.TIMESTAMP:
        return 29
    if kind is ColumnKind.ROWID:
        return 18
    if kind is ColumnKind.NUMBER:
        return (col.precision or 38) + 2
    return col.length or (1 if kind is ColumnKind.CHAR else 4000)


def encode_tdr(table: TableDef, exact: bool = True) -> bytes:
    """The TDR's D area: Logdump's text (the DEFGEN column table) and, with ``exact``, the
    ``*trailgate`` line with the exact definition (a table whose definition trailgate does
    not have gets a TDR that names it and nothing more)."""
    rows: list[tuple[str, list[int]]] = []
    offset = 0
    keys = set(table.key)
    for col in table.columns:
        kind = col.kind
        dt = (GG_ASCII_FIXED if kind is ColumnKind.CHAR else
              GG_DATETIME if kind in (ColumnKind.DATE, ColumnKind.TIMESTAMP) else GG_ASCII_VAR)
        ext = _external_length(col)
        scale = 9 if kind is ColumnKind.TIMESTAMP else (col.scale or 0)
        lsdt = 5 if kind is ColumnKind.DATE else 6 if kind is ColumnKind.TIMESTAMP else 0
        table_len = ext if dt == GG_DATETIME else 0
        char_len = (col.length or 0) if kind in (ColumnKind.CHAR, ColumnKind.VARCHAR2) else 0
        fields = [dt, ext, offset, scale, 0, 1 if col.nullable else 0, 0, ext, ext, table_len,
                  0, lsdt, 0, 0, 1, 0, 1 if col.name in keys else 0, 0,
                  ORACLE_TYPE_CODES[kind], -1, char_len, 0, 0]
        rows.append((col.name, fields))
        offset += ext + 3 + (2 if dt == GG_ASCII_VAR else 0)
    text = (f"TDR version: 11\nDefinition for table {table.qualified_name}\n"
            f"Record Length: {offset}\nSyskey: 0\nColumns: {len(table.columns)}\n"
            + "".join(r + "\n" for r in column_rows(rows)) + "End of definition\n")
    if not exact:
        return text.encode("utf-8")
    return (text + TRAILGATE_LINE).encode("utf-8") + encode_tabledef(table)


_ODBC = {4: "integer", -5: "bigint", 5: "smallint", 2: "numeric", 3: "decimal", 6: "float",
         7: "real", 8: "double precision", 12: "varchar", 1: "char", -1: "text",
         9: "date", 91: "date", 10: "time", 92: "time", 11: "timestamp", 93: "timestamp",
         -7: "boolean", -2: "bytea", -3: "bytea"}
_MYSQL = {1: "tinyint", 2: "smallint", 3: "int", 8: "bigint", 246: "decimal", 4: "float",
          5: "double", 10: "date", 12: "datetime", 7: "timestamp", 15: "varchar",
          253: "varchar", 254: "char", 252: "text"}


def _source_type(db_type: str, native: int, kind: ColumnKind) -> str:
    if db_type == "POSTGRESQL":
        return _ODBC.get(native, kind.value.lower())
    if db_type == "MYSQL":
        return _MYSQL.get(native, kind.value.lower())
    if native in _KIND_BY_ORACLE:
        return _KIND_BY_ORACLE[native].value
    return kind.value


def _column(name: str, index: int, nums: list[int], db_type: str) -> tuple[Column, ColumnSpec]:
    dt, ext, _off, scale, _lvl, null = nums[:6]
    sub, native, char_len = nums[17], nums[18], nums[20]
    kind: ColumnKind
    if dt in _BINARY_SIZES:
        kind, spec = ColumnKind.NUMBER, ColumnSpec("int", _BINARY_SIZES[dt], scale)
    elif dt == GG_DATETIME:
        kind = ColumnKind.TIMESTAMP if ext > 19 else ColumnKind.DATE
        spec = ColumnSpec("fixed")
    elif dt == GG_ASCII_FIXED:
        kind, spec = ColumnKind.CHAR, ColumnSpec("fixed")
    elif sub == 5 or (db_type == "ORACLE" and native == ORACLE_TYPE_CODES[ColumnKind.CHAR]):
        kind, spec = ColumnKind.CHAR, ColumnSpec("char", char_len or ext)
    else:
        oracle_kind = _KIND_BY_ORACLE.get(native) if db_type in ("ORACLE", "") else None
        kind = ColumnKind.VARCHAR2
        if oracle_kind is not None and oracle_kind not in _FIXED_KINDS:
            kind = oracle_kind
        if db_type not in ("ORACLE", "") and native in (2, 3, 4, -5, 5, 246, 8):
            kind = ColumnKind.NUMBER
        spec = ColumnSpec("var")
    length = (char_len or ext) if kind in (ColumnKind.CHAR, ColumnKind.VARCHAR2) else None
    col = Column(name=name, index=index, kind=kind,
                 source_type=_source_type(db_type, native, kind), length=length,
                 scale=scale if spec.mode == "int" and scale else None, nullable=null != 0)
    return col, spec


def decode_tdr(data: bytes, name: str | None, db_type: str = "") -> TableSpec:
    """A TDR's D area as a :class:`TableSpec`; ``name`` is the name in the record's header
    (``None``: take it from the text).  ``ValueError`` when the area is neither GoldenGate's
    binary TDR nor the text :func:`encode_tdr` writes."""
    if is_binary(data):
        found = _binary_tdr(parse_tdr(data), name, db_type)
        defined = found.definition
        if defined is not None and data != encode_tdr_binary(defined):
            defined.source_tdr = data.hex()  # not what trailgate writes: kept to write again
        return found
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError("the TDR is neither text nor a binary TDR (a GoldenGate 12.2 token "
                         "tree)") from None
    head, mark, exact = text.partition(TRAILGATE_LINE)
    definition: TableDef | None = decode_tabledef(exact.encode("utf-8")) if mark else None
    columns: list[Column] = []
    specs: dict[int, ColumnSpec] = {}
    keys: list[str] = []
    table_name = name
    in_columns = False
    for line in head.splitlines():
        if line.startswith("Definition for table "):
            table_name = table_name or line[len("Definition for table "):].strip()
        elif line.startswith("Columns:"):
            in_columns = True
        elif line.startswith("End of definition"):
            in_columns = False
        elif in_columns and line.strip():
            m = _COLUMN_LINE.match(line)
            if m is None:
                raise ValueError(f"TDR column line {line.strip()!r} is not a name and 23 "
                                 "numbers")
            col_name, nums = m.group(1), [int(p) for p in m.group(2).split()]
            col, spec = _column(col_name, len(columns), nums, db_type)
            columns.append(col)
            specs[col.index] = spec
            if nums[16]:
                keys.append(col.name)
    if definition is None:
        if not table_name:
            raise ValueError("the TDR names no table")
        if not columns:
            raise ValueError("the TDR lists no columns")
        schema, _, tname = table_name.rpartition(".")
        definition = TableDef(schema, tname, columns, key=keys or [c.name for c in columns],
                              key_kind="PRIMARY" if keys else "ALL")
    else:
        specs = spec_of(definition).columns
        if name is not None and name != definition.qualified_name:
            schema, _, tname = name.rpartition(".")
            definition = TableDef(schema, tname, definition.columns, definition.key,
                                  definition.key_kind, definition.object_id)
    return TableSpec(definition.qualified_name, definition, specs)


def spec_of(table: TableDef) -> TableSpec:
    """The framing of ``table``'s columns as trailgate writes them (11.2 framing)."""
    return TableSpec(table.qualified_name, table, {
        c.index: ColumnSpec("fixed" if c.kind in _FIXED_KINDS else "var")
        for c in table.columns})


#: DEFGEN's values of the fields a binary TDR does not carry (as far as is known), the same
#: for every Oracle column of the public DEFGEN files: level 0, bump if odd 0, high and low
#: precision 0, elementary item 1, occurs 0, character length, LOB and partial type 0.  Null
#: is 0 for a key column and 1 for the others, as Logdump 21.3 prints it (S1, S3) and as
#: the reader takes a binary TDR's columns (a key column NOT NULL).
_NOT_IN_TDR = {"level": 0, "bump": 0, "hp": 0, "lp": 0, "elem": 1, "occurs": 0,
               "char_len": 0, "lob": 0, "partial": 0}

#: Where Logdump 21.3 ends each of a TDR column's 23 numbers, counted from the end of the
#: name column: every row of S1's and S3's TDRs puts them there (docs/trail-format.md).
_LOGDUMP_ENDS = (3, 10, 19, 22, 25, 27, 29, 36, 43, 50, 52, 54, 56, 58, 60, 65, 67, 71, 76,
                 85, 92, 94, 96)
_LOGDUMP_WIDTHS = tuple(b - a for a, b in zip((0, *_LOGDUMP_ENDS), _LOGDUMP_ENDS,
                                              strict=False))


def column_rows(columns: list[tuple[str, list[int]]]) -> list[str]:
    """A TDR's column rows as Logdump 21.3 prints them: each name left-aligned in the
    longest name's width plus two, each number right-aligned in its field (a number too
    wide for it still gets a space before it)."""
    width = max((len(name) for name, _n in columns), default=0) + 2
    rows = []
    for name, numbers in columns:
        first, *rest = numbers
        cells = [f"{first:>{_LOGDUMP_WIDTHS[0]}}"] + [
            " " + f"{v:>{w - 1}}" for v, w in zip(rest, _LOGDUMP_WIDTHS[1:], strict=False)]
        rows.append(f"{name:<{width}}" + "".join(cells))
    return rows


def column_numbers(c: BinColumn) -> list[int]:
    """The 23 numbers Logdump prints for a binary TDR column (the DEFGEN column table)."""
    n = _NOT_IN_TDR
    return [c.data_type, c.external_length, c.offset, c.scale, n["level"], 0 if c.key else 1,
            n["bump"], c.length_a, c.length_c, c.table_length, c.unknown_u16_2, c.least_dt,
            n["hp"], n["lp"], n["elem"], n["occurs"], 1 if c.key else 0, c.sub_type,
            c.native_type, c.charset, n["char_len"], n["lob"], n["partial"]]


def record_length(tdr: BinTdr) -> int:
    """DEFGEN's record length: the last column's fetch offset plus its width (a null flag,
    a length for a variable value, one byte more), rounded up to even."""
    if not tdr.columns:
        return 0
    c = tdr.columns[-1]
    width = c.length_c + 3 + (2 if c.data_type == GG_ASCII_VAR else 0)
    end = c.offset + width
    return end + (end & 1)


def tdr_text(tdr: BinTdr, name: str) -> list[str]:
    """A binary TDR as Logdump prints it (what :func:`encode_tdr`'s text holds)."""
    rows = column_rows([(c.name, column_numbers(c)) for c in tdr.columns])
    return [f"TDR version: {tdr.version}", f"Definition for table {name}",
            f"Record Length: {record_length(tdr)}", f"Columns: {len(tdr.columns)}", *rows,
            "End of definition"]


def _binary_tdr(tdr: BinTdr, name: str | None, db_type: str) -> TableSpec:
    if not name:
        raise ValueError("the TDR record names no table")
    if tdr.trailgate is not None:  # trailgate's own TDR: its exact definition
        definition = decode_tabledef(tdr.trailgate)
        if name != definition.qualified_name:
            schema, _, tname = name.rpartition(".")
            definition = TableDef(schema, tname, definition.columns, definition.key,
                                  definition.key_kind, definition.object_id)
        return TableSpec(definition.qualified_name, definition,
                         spec_of(definition).columns, binary=tdr)
    if not tdr.columns:
        raise ValueError("the TDR lists no columns")
    columns: list[Column] = []
    specs: dict[int, ColumnSpec] = {}
    for index, c in enumerate(tdr.columns):
        col, spec = _column(c.name, index, column_numbers(c), db_type or "ORACLE")
        col.nullable = not c.key  # a key column is NOT NULL; the TDR says no more
        columns.append(col)
        specs[index] = spec
    keys = [c.name for c in tdr.columns if c.key]
    schema, _, tname = name.rpartition(".")
    table = TableDef(schema, tname, columns, key=keys or [c.name for c in columns],
                     key_kind="PRIMARY" if keys else "ALL")
    return TableSpec(table.qualified_name, table, specs, binary=tdr)


#: Oracle's type code for each kind as DEFGEN and a 12.2 TDR give it (TIMESTAMP is 187
#: there, not the dictionary's 180 that seed 004's metadata uses).
_TDR_NATIVE = {**ORACLE_TYPE_CODES, ColumnKind.TIMESTAMP: 187}


def _bin_column(col: Column, offset: int, key: bool) -> BinColumn:
    kind = col.kind
    table_len = least_dt = sub = scale = 0
    if kind is ColumnKind.CHAR:
        dt, ext = GG_ASCII_FIXED, col.length or 1
    elif kind in (ColumnKind.DATE, ColumnKind.TIMESTAMP):
        dt, ext = GG_DATETIME, 19 if kind is ColumnKind.DATE else 29
        table_len, least_dt = ext, 5 if kind is ColumnKind.DATE else 6
    elif kind is ColumnKind.NUMBER:
        # a negative scale (Oracle, PostgreSQL 15+) does not fit the unsigned field: 0 there,
        # the exact definition travels in trailgate's own token
        dt, ext, sub, scale = GG_ASCII_VAR, (col.precision + 2) if col.precision else 50, 2, \
            min(max(col.scale or 0, 0), 0xFFFF)
        table_len = ext
    else:
        dt, ext = GG_ASCII_VAR, _external_length(col)
    return BinColumn(col.name, dt, ext, ext, ext, table_len, 0, offset, -1,
                     _TDR_NATIVE.get(kind, 1), sub, 0, least_dt, scale, 0,
                     0x22 | (1 if key else 0), bytes(14))


def _offsets(columns: list[BinColumn]) -> list[BinColumn]:
    """``columns`` with their fetch offsets by DEFGEN's rule (what S19's TDRs hold)."""
    out, offset = [], 0
    for c in columns:
        out.append(replace(c, offset=offset))
        end = offset + c.length_c + 3 + (2 if c.data_type == GG_ASCII_VAR else 0)
        offset = end + (end & 1)
    return out


def encode_tdr_binary(table: TableDef, exact: bool = True, db_type: str = "ORACLE") -> bytes:
    """The TDR's D area in GoldenGate's binary layout (docs/trail-format.md): the TDR the
    definition was read from when it still describes it (:func:`_kept_tdr`), else each
    column as a GoldenGate Extract describes an Oracle column (values stay text, as
    trailgate writes them), and with ``exact`` a trailgate token holding the exact
    definition."""
    kept = _kept_tdr(table, db_type)
    if kept is not None:
        return kept
    keys = set(table.key) if table.key_kind != "ALL" else set()
    columns = _offsets([_bin_column(col, 0, col.name in keys) for col in table.columns])
    return build_tdr(BinTdr(1, len([c for c in columns if c.key]), columns,
                            trailgate=encode_tabledef(table) if exact else None))


def _kept_tdr(table: TableDef, db_type: str) -> bytes | None:
    """The binary TDR ``table`` was read from, written again: as read (its bytes) when it
    still gives ``table`` and frames every column as trailgate sends it; when it frames
    some column otherwise (GoldenGate's binary numbers, a length-prefixed CHAR: trailgate
    sends 11.2's text), those columns described as trailgate describes them and the
    offsets laid out anew, every other token and field as read, and trailgate's token with
    the exact definition when the TDR alone no longer gives it.  ``None``: nothing to keep
    (no such TDR, or one that no longer describes ``table``)."""
    if table.source_tdr is None:
        return None
    try:
        area = bytes.fromhex(table.source_tdr)
        tdr = parse_tdr(area)
        read = _binary_tdr(tdr, table.qualified_name, db_type)
        bare = _binary_tdr(replace(tdr, trailgate=None), table.qualified_name, db_type)
    except (ValueError, KeyError, TypeError):
        return None
    if read.definition != table or len(tdr.columns) != len(table.columns) or [
            c.index for c in table.columns] != list(range(len(table.columns))):
        return None  # the TDR's columns are by position: a table with gaps is described anew
    sent = spec_of(table).columns
    framed = {i for i, c in bare.columns.items() if c.mode != sent[i].mode}
    if not framed:
        return area
    keys = set(table.key) if table.key_kind != "ALL" else set()
    columns = _offsets([
        _bin_column(table.columns[i], 0, table.columns[i].name in keys) if i in framed else c
        for i, c in enumerate(tdr.columns)])
    out = replace(tdr, columns=columns, trailgate=None)
    if _binary_tdr(out, table.qualified_name, db_type).definition != table:
        out.trailgate = encode_tabledef(table)
    return build_tdr(out, tdr.tree.order if tdr.tree is not None else "big")


def encode_ddr_binary(ddr: DatabaseDef) -> bytes:
    """The DDR's D area in GoldenGate's binary layout."""
    return build_ddr(BinDdr(ddr.version, ddr.name, ddr.timezone,
                            bytes.fromhex(ddr.case_sensitivity.replace(" ", ""))))
