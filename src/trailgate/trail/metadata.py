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

_ITEM = re.compile(r",([A-Z][A-Z0-9]*)(?:\('((?:[^']|'')*)'\))?='((?:[^']|'')*)'", re.S)


def _quote(value: str) -> str:
    return value.replace("'", "''")


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
    """Decode the text :func:`encode_kv` writes. Raises ``ValueError`` on stray text."""
    items: list[tuple[str, str | None, str]] = []
    pos = 0
    text = text.rstrip("\n")
    while pos < len(text):
        if text[pos] in "\n ":
            pos += 1
            continue
        match = _ITEM.match(text, pos)
        if match is None:
            raise ValueError(f"metadata text is malformed at character {pos}: {text[pos:pos+30]!r}")
        key, index, value = match.groups()
        items.append(
            (key, None if index is None else index.replace("''", "'"), value.replace("''", "'"))
        )
        pos = match.end()
    return items


def _opt(value: int | None) -> str:
    return "" if value is None else str(value)


def encode_tabledef(table: TableDef) -> bytes:
    """The D content of a metadata record for ``table``."""
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
        else:
            if not index.isdigit():
                raise ValueError(f"column number {index!r} is not a number")
            cols.setdefault(int(index), {})[key] = value
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
        )
    except KeyError as exc:
        raise ValueError(f"metadata text lacks {exc.args[0]}") from None
