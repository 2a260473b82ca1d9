"""Table definitions and DDL markers as key/value text, in seed 004's METADATA_TEXT form.

A metadata record's D area is text like ``,W='US03',X='STUDENT',H='8',A2('1')='STUDENT_KEY'``
using the DDLREPLICATION package's constants (seed 004), so a trail describes its own tables
and Logdump can show the definition as readable text.
"""

from __future__ import annotations

import re

from trailgate.model import Column, ColumnKind, TableDef

__all__ = [
    "ORACLE_TYPE_CODES",
    "decode_kv",
    "decode_tabledef",
    "encode_kv",
    "encode_tabledef",
]

#: Oracle internal type codes (seed 004's ``A5`` column type) for each column kind.
ORACLE_TYPE_CODES: dict[ColumnKind, int] = {
    ColumnKind.VARCHAR2: 1,
    ColumnKind.NUMBER: 2,
    ColumnKind.LONG: 8,
    ColumnKind.DATE: 12,
    ColumnKind.RAW: 23,
    ColumnKind.ROWID: 69,
    ColumnKind.CHAR: 96,
    ColumnKind.TIMESTAMP: 180,
}
_KIND_BY_CODE = {code: kind for kind, code in ORACLE_TYPE_CODES.items()}

#: One key, maybe indexed: ``A2('1')``; a value: ``'text'``.  ``''`` is a quote; a backslash
#: escapes a backslash or a comma (seed 004 writes ``'.\,'`` for ``.,``); any other backslash
#: is itself, so text written before backslashes were doubled still reads the same.
_KEY = re.compile(r"([A-Z][A-Z0-9]*)(?:\('((?:[^'\\]|''|\\[\\,]|\\)*)'\))?", re.S)
_VALUE = re.compile(r"'((?:[^'\\]|''|\\[\\,]|\\)*)'", re.S)
_UNESCAPE = re.compile(r"''|\\([\\,])", re.S)


def _quote(value: str) -> str:
    return value.replace("\\", "\\\\").replace("'", "''")


def _unquote(text: str) -> str:
    if "'" not in text and "\\" not in text:
        return text
    return _UNESCAPE.sub(lambda m: m.group(1) if m.group(1) is not None else "'", text)


def encode_kv(items: list[tuple[str, str | None, str]]) -> str:
    """Encode ``(key, index, value)`` items; index ``None`` gives ``,KEY='v'``."""
    parts = []
    for key, index, value in items:
        if index is None:
            parts.append(f",{key}='{_quote(value)}'")
        else:
            parts.append(f",{key}('{_quote(index)}')='{_quote(value)}'")
    return "".join(parts)


def decode_kv(text: str) -> list[tuple[str, str | None, str]]:
    """Decode the text :func:`encode_kv` writes, and seed 004's forms of it: items may be
    separated by commas and white space, and several keys may share one value
    (``,C('1'),C('C1')='C1'``: the column by number and by name).  Raises ``ValueError``
    on stray text."""
    items: list[tuple[str, str | None, str]] = []
    pos, end = 0, len(text)
    keys: list[tuple[str, str | None]] = []
    while True:
        while pos < end and text[pos] in ", \t\r\n":
            pos += 1
        if pos >= end:
            break
        match = _KEY.match(text, pos)
        if match is None:
            raise ValueError(f"metadata text is malformed at character {pos}: "
                             f"{text[pos:pos + 30]!r}")
        key, index = match.groups()
        keys.append((key, None if index is None else _unquote(index)))
        pos = match.end()
        if pos < end and text[pos] == "=":
            value = _VALUE.match(text, pos + 1)
            if value is None:
                raise ValueError(f"metadata text is malformed at character {pos + 1}: the "
                                 f"value of {key} is not quoted: {text[pos + 1:pos + 31]!r}")
            unquoted = _unquote(value.group(1))
            items.extend((k, i, unquoted) for k, i in keys)
            keys = []
            pos = value.end()
        elif pos < end and text[pos] != ",":
            raise ValueError(f"metadata text is malformed at character {pos}: "
                             f"{text[pos:pos + 30]!r}")
    if keys:
        raise ValueError(f"metadata text ends without a value for {keys[-1][0]}")
    return items


def _opt(value: int | None) -> str:
    return "" if value is None else str(value)


#: The item that carries a definition's binary TDR (``TableDef.source_tdr``) inside trailgate:
#: in the 11.2 form a 12c+ file's metadata records are read as, never in a trail written.
SOURCE_TDR_KEY = "ZTDR"


def encode_tabledef(table: TableDef, with_source: bool = False) -> bytes:
    """The D content of a metadata record for ``table``; with ``with_source`` the binary TDR
    it was read from too (the form a reader of a 12c+ file hands on, not seed 004's)."""
    items: list[tuple[str, str | None, str]] = [
        ("W", None, table.schema),
        ("X", None, table.name),
        ("S", None, _opt(table.object_id)),
        ("Y", None, "TABLE"),
        ("H", None, str(len(table.columns))),
        ("T", None, ",".join(table.key)),
        ("V", None, table.key_kind),
    ]
    for col in table.columns:
        n = str(col.index + 1)
        items += [
            ("A2", n, col.name),
            ("A3", n, n),
            ("A4", n, _opt(col.segcol)),
            ("A5", n, str(ORACLE_TYPE_CODES[col.kind])),
            ("D", n, col.source_type),
            ("A6", n, _opt(col.length)),
            ("A7", n, "1" if col.nullable else "0"),
            ("A8", n, _opt(col.precision)),
            ("A9", n, _opt(col.scale)),
        ]
    if with_source and table.source_tdr is not None:
        items.append((SOURCE_TDR_KEY, None, table.source_tdr))
    return encode_kv(items).encode("utf-8")


def _int_or_none(text: str) -> int | None:
    return int(text) if text != "" else None


def decode_tabledef(data: bytes) -> TableDef:
    """Parse a metadata record's D content. Raises ``ValueError`` when it is incomplete."""
    try:
        items = decode_kv(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ValueError(f"metadata text is not UTF-8: {exc}") from None
    table: dict[str, str] = {}
    cols: dict[int, dict[str, str]] = {}
    for key, index, value in items:
        if index is None:
            table[key] = value
        elif index.isdigit():
            cols.setdefault(int(index), {})[key] = value
        # else: seed 004 repeats each column's items by name (``C('C1')``): the number
        # form carries the same value
    try:
        columns = []
        for number in sorted(cols):
            attrs = cols[number]
            code = int(attrs["A5"])
            if code not in _KIND_BY_CODE:
                raise ValueError(f"unknown column type code {code}")
            columns.append(
                Column(
                    name=attrs["A2"],
                    index=number - 1,
                    kind=_KIND_BY_CODE[code],
                    source_type=attrs.get("D", ""),
                    length=_int_or_none(attrs.get("A6", "")),
                    precision=_int_or_none(attrs.get("A8", "")),
                    scale=_int_or_none(attrs.get("A9", "")),
                    nullable=attrs.get("A7", "1") != "0",
                    segcol=_int_or_none(attrs.get("A4", "")),
                )
            )
        if int(table.get("H", len(columns))) != len(columns):
            raise ValueError(f"column count H={table['H']} but {len(columns)} columns defined")
        key_columns = [k for k in table.get("T", "").split(",") if k]
        return TableDef(
            schema=table["W"],
            name=table["X"],
            columns=columns,
            key=key_columns,
            key_kind=table.get("V", "PRIMARY"),
            object_id=_int_or_none(table.get("S", "")),
            source_tdr=table.get(SOURCE_TDR_KEY),
        )
    except KeyError as exc:
        raise ValueError(f"metadata text lacks {exc.args[0]}") from None
