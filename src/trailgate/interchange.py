"""JSON Lines interchange: a trail's changes as one JSON object per line, and back.

``trailgate trail export`` writes, for each trail file, a ``file`` object (its header), then
for each table definition a ``metadata`` object and for each change a ``change`` object.
``trailgate trail import`` writes those objects into a trail; exporting a trailgate trail and
importing the result reproduces the same bytes.  The format is documented in
docs/interchange.md.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import struct
import sys
import typing
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO, TextIO

from trailgate.errors import ConfigError
from trailgate.json_fields import check_fields, fits, json_type
from trailgate.model import (
    Change,
    Column,
    ColumnKind,
    OpType,
    TableDef,
    TrailPosition,
    TransInd,
    unix_micros_from_julian,
)
from trailgate.trail import FileHeader, TrailReader, TrailRecord, TrailWriter
from trailgate.trail.ddl import ddl_fields
from trailgate.trail.header import DatabaseInfo, MachineInfo, ProducerInfo

__all__ = ["add_arguments", "export_records", "import_records", "run_export", "run_import"]

FORMAT_VERSION = 1


# -- values ---------------------------------------------------------------------------------

def _value_json(value: bytes | None, kind: ColumnKind | None) -> dict[str, Any]:
    if value is None:
        return {"value": None}
    if kind is not ColumnKind.RAW:
        try:
            return {"value": value.decode("utf-8")}
        except UnicodeDecodeError:
            pass
    return {"hex": value.hex()}


def _columns_json(values: dict[int, bytes | None] | None, table: TableDef | None
                  ) -> list[dict[str, Any]] | None:
    if values is None:
        return None
    by_index = {c.index: c for c in table.columns} if table else {}
    out: list[dict[str, Any]] = []
    for index in sorted(values):
        col = by_index.get(index)
        item: dict[str, Any] = {"index": index}
        if col is not None:
            item["name"] = col.name
            item["type"] = col.kind.value
        item.update(_value_json(values[index], col.kind if col else None))
        out.append(item)
    return out


def _columns_from_json(items: list[Any] | None, where: str) -> dict[int, bytes | None] | None:
    if items is None:
        return None
    values: dict[int, bytes | None] = {}
    for item in items:
        if not isinstance(item, dict):
            raise ValueError(f"{where}: a column must be a JSON object, not "
                             f"{json_type(item)}")
        if "index" not in item:
            raise ValueError(f"{where}: a column without its index")
        if "hex" in item:
            values[int(item["index"])] = bytes.fromhex(item["hex"])
        else:
            value = item.get("value")
            values[int(item["index"])] = None if value is None else str(value).encode("utf-8")
    return values


def _iso(julian: int) -> str:
    micros = unix_micros_from_julian(julian)
    try:
        stamp = datetime.fromtimestamp(micros / 1e6, UTC)
    except (OverflowError, OSError, ValueError):
        return ""
    return stamp.isoformat(timespec="microseconds")


# -- export ---------------------------------------------------------------------------------

def _header_json(header: FileHeader) -> dict[str, Any]:
    fields = {f.name: getattr(header, f.name) for f in dataclasses.fields(FileHeader)
              if f.name not in ("length", "tokens", "offsets")}
    fields["machine"] = dataclasses.asdict(header.machine)
    fields["database"] = dataclasses.asdict(header.database)
    fields["producer"] = dataclasses.asdict(header.producer)
    fields["producer"]["version"] = list(header.producer.version)
    enc = header.encryption  # which key the file was encrypted with: its values are here
    fields["encryption"] = None if enc is None else {
        "cipher": enc.cipher, "key_name": enc.key_name, "key_version": enc.key_version,
        "fingerprint": enc.fingerprint.hex()}
    return fields


_T = typing.TypeVar("_T")


def _built(cls: type[_T], data: Any, what: str, **converted: Any) -> _T:
    """``cls`` from the JSON object ``data`` (fields in ``converted`` already built): a
    ``ValueError`` names a field that is unknown or of the wrong JSON type."""
    if not isinstance(data, dict):
        raise ValueError(f"{what} must be a JSON object, not {json_type(data)}")
    check_fields(cls, data, what, skip=converted)
    hints = typing.get_type_hints(cls)
    fields = {**data, **converted}
    if typing.get_origin(hints.get("version")) is tuple and "version" in fields:
        fields["version"] = tuple(fields["version"])
    return cls(**fields)


def _header_from_json(data: Any) -> FileHeader:
    if not isinstance(data, dict):
        raise ValueError(f"the file header must be a JSON object, not {json_type(data)}")
    # an import writes the clear: ENCRYPTTRAIL is a writer's
    data = {k: v for k, v in data.items() if k != "encryption"}
    parts = {"machine": _built(MachineInfo, data.get("machine", {}), "header.machine"),
             "database": _built(DatabaseInfo, data.get("database", {}), "header.database"),
             "producer": _built(ProducerInfo, data.get("producer", {}), "header.producer")}
    return _built(FileHeader, data, "the file header", **parts)


def _tabledef_json(table: TableDef) -> dict[str, Any]:
    data = dataclasses.asdict(table)
    if data["source_tdr"] is None:
        del data["source_tdr"]
    return data


def _tabledef_from_json(data: Any) -> TableDef:
    if not isinstance(data, dict) or not isinstance(data.get("columns"), list):
        raise ValueError("a definition must be a JSON object with a \"columns\" array")
    columns = [_column_from_json(c) for c in data["columns"]]
    return _built(TableDef, data, "the definition", columns=columns)


def _column_from_json(data: Any) -> Column:
    if not isinstance(data, dict):
        raise ValueError(f"a column must be a JSON object, not {json_type(data)}")
    index = data.get("index")
    if isinstance(index, int) and not 0 <= index <= 0xFFFF:
        raise ValueError(f"a column index must be 0 to 65535, not {index}")
    return _built(Column, data, "a column", kind=ColumnKind(str(data.get("kind"))))


def export_records(trail: str | Path, start: TrailPosition | None = None,
                   single_file: bool = False) -> Iterator[dict[str, Any]]:
    """The JSON objects describing a trail (or one file of it) from ``start``."""
    reader = TrailReader(trail, start, single_file=single_file)
    seen_header = None
    txn_csn: int | None = None
    txn_xid: str | None = None
    for record in reader.records():
        if reader.header is not None and reader.header is not seen_header:
            seen_header = reader.header
            yield {"record": "file", "format": FORMAT_VERSION,
                   "header": _header_json(reader.header)}
        raw = record.raw
        if record.table_def is not None and record.change is None:
            yield {"record": "metadata", "position": str(record.position),
                   "table": record.table_def.qualified_name,
                   "definition": _tabledef_json(record.table_def)}
            continue
        change = record.change
        if change is None:
            continue
        if record.starts_transaction:
            txn_csn, txn_xid = raw.csn, raw.xid
        table = record.table_def
        obj: dict[str, Any] = {
            "record": "change",
            "position": str(record.position),
            "op": OpType(raw.io_type).label,
            "io_type": raw.io_type,
            "table": change.table,
            "csn": txn_csn,
            "xid": txn_xid,
            "first_in_transaction": record.starts_transaction,
            "trans_ind": TransInd(_trans_ind(record)).name.lower(),
            "timestamp": _iso(change.io_time),
            "io_time": change.io_time,
            "audit_rba": change.audit_seq,
            "audit_pos": change.audit_pos,
        }
        if change.rowid is not None:
            obj["rowid"] = change.rowid
        if change.before is not None:
            obj["before"] = _columns_json(change.before, table)
        if change.after is not None:
            obj["columns"] = _columns_json(change.after, table)
        if change.text is not None:
            obj["text"] = change.text
        if change.op is OpType.DDL:
            obj["ddl"] = ddl_fields(change.text or "")
        if change.tokens:
            obj["tokens"] = change.tokens
        if record.starts_transaction and raw.csn is None:
            obj["csn"] = None
        yield obj
        if record.ends_transaction:
            txn_csn = txn_xid = None


def _trans_ind(record: TrailRecord) -> int:
    if record.starts_transaction and record.ends_transaction:
        return TransInd.ONLY
    if record.starts_transaction:
        return TransInd.FIRST
    if record.ends_transaction:
        return TransInd.LAST
    return TransInd.MIDDLE


# -- import ---------------------------------------------------------------------------------

#: the JSON type each field of a change record must have
_CHANGE_FIELDS: dict[str, Any] = {
    "table": str, "io_time": int, "audit_rba": int, "audit_pos": int, "rowid": str | None,
    "text": str | None, "xid": str | None, "csn": int | None, "columns": list | None,
    "before": list | None}


def _change_from_json(obj: dict[str, Any], where: str) -> Change:
    for key, hint in _CHANGE_FIELDS.items():
        if key in obj and not fits(obj[key], hint):
            raise ValueError(f"{where}: {key!r} cannot be {json_type(obj[key])}")
    tokens = obj.get("tokens") or None
    if tokens is not None and not (isinstance(tokens, dict) and all(
            isinstance(v, str) for v in tokens.values())):
        raise ValueError(f"{where}: \"tokens\" must be an object of strings")
    try:
        op = OpType(int(obj["io_type"])) if "io_type" in obj else _op_by_label(obj["op"])
        return Change(
            op=op,
            table=obj["table"],
            after=_columns_from_json(obj.get("columns"), where),
            before=_columns_from_json(obj.get("before"), where),
            io_time=int(obj.get("io_time", 0)),
            audit_seq=int(obj.get("audit_rba", 0)),
            audit_pos=int(obj.get("audit_pos", 0)),
            rowid=obj.get("rowid"),
            tokens=tokens,
            text=obj.get("text"),
        )
    except KeyError as exc:
        raise ValueError(f"{where}: change lacks {exc.args[0]!r}") from None


def _op_by_label(label: str) -> OpType:
    for op in OpType:
        if op.label.lower() == str(label).lower() or op.name.lower() == str(label).lower():
            return op
    raise ValueError(f"unknown operation {label!r}")


def import_records(lines: Iterable[str], trail: str | Path, *, source: str = "<stdin>",
                   megabytes: int = 500) -> int:
    """Write JSON Lines change records into ``trail``; returns the number of changes."""
    writer: TrailWriter | None = None
    tables: dict[str, TableDef] = {}
    in_txn = False
    after_ddl = False  # the last change was a DDL record: its definition may come next
    commit_after_ddl = False  # …and it ended its transaction: commit once that is known
    count = 0
    try:
        for number, line in enumerate(lines, start=1):
            where = f"{source}, line {number}"
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ConfigError(f"not JSON: {exc.msg}", path=source, line=number) from None
            if not isinstance(obj, dict):
                raise ConfigError(f"a JSON {type(obj).__name__} where a record object "
                                  '({"record": ...}) should be; docs/interchange.md shows the '
                                  "format", path=source, line=number)
            kind = obj.get("record", "change")
            if kind != "metadata":
                if commit_after_ddl and writer is not None:
                    writer.commit_transaction()
                after_ddl = commit_after_ddl = False
            try:
                if kind == "file":
                    header = _header_from_json(obj["header"])
                    if writer is None:
                        writer = TrailWriter(trail, megabytes=1 << 20, producer=header.producer,
                                             database=header.database,
                                             compatibility=header.compatibility)
                    if in_txn:
                        raise ValueError(f"{where}: a new file starts inside a transaction")
                    writer.start_file(header)
                elif kind == "metadata":
                    table = _tabledef_from_json(obj["definition"])
                    tables[table.qualified_name] = table
                    if after_ddl and writer is not None:  # a DDL record's new definition
                        writer.add_definition(table)
                elif kind == "change":
                    if writer is None:
                        writer = TrailWriter(trail, megabytes=megabytes)
                    change = _change_from_json(obj, where)
                    first = obj.get("first_in_transaction", obj.get("trans_ind") in (
                        "first", "only", None))
                    if first or not in_txn:
                        if in_txn:
                            writer.commit_transaction()
                        writer.begin_transaction(obj.get("xid") or "", int(obj.get("csn") or 0))
                        in_txn = True
                    after_ddl = change.op is OpType.DDL
                    writer.add_change(change, tables.get(change.table))
                    count += 1
                    if obj.get("trans_ind", "only") in ("last", "only"):
                        in_txn = False
                        if after_ddl:
                            commit_after_ddl = True
                        else:
                            writer.commit_transaction()
                else:
                    raise ValueError(f"{where}: unknown record kind {kind!r}")
            except (KeyError, TypeError, ValueError) as exc:
                message = str(exc) if str(exc).startswith(source) else f"{where}: {exc}"
                raise ConfigError(message) from None
            except (OverflowError, struct.error) as exc:  # a number the trail cannot hold
                raise ConfigError(f"{where}: a number out of the trail format's range ({exc})"
                                  ) from None
        if writer is not None and (in_txn or commit_after_ddl):
            writer.commit_transaction()
            commit_after_ddl = False
    finally:
        if writer is not None:
            if commit_after_ddl:  # a whole DDL transaction before the line that failed
                writer.commit_transaction()
            writer.close()
    return count


# -- command line ---------------------------------------------------------------------------

def add_arguments(parser: argparse.ArgumentParser) -> None:
    if parser.prog.endswith("export"):
        parser.add_argument("trail", nargs="+", help="trail (DIR/aa) or trail file(s)")
        parser.add_argument("--from", dest="start", help="start at SEQNO:RBA")
        parser.add_argument("-o", "--output", help="write here instead of stdout")
    else:
        parser.add_argument("file", help="JSON Lines file (- for stdin)")
        parser.add_argument("--trail", required=True, help="trail to write, DIR/PREFIX")
        parser.add_argument("--megabytes", type=int, default=500,
                            help="file size limit when the input has no file records")


def run_export(args: argparse.Namespace) -> int:
    start = TrailPosition.parse(args.start) if args.start else None
    with contextlib.ExitStack() as stack:
        out: TextIO = sys.stdout
        if args.output:
            out = stack.enter_context(open(args.output, "w", encoding="utf-8"))
        for trail in args.trail:
            path = Path(trail)
            for obj in export_records(path, start, single_file=path.is_file()):
                out.write(json.dumps(obj, ensure_ascii=False) + "\n")
    return 0


def _utf8_lines(handle: BinaryIO, source: str) -> Iterator[str]:
    """The lines of ``handle`` as text; a line that is not UTF-8 is a ``ConfigError`` naming
    it (JSON Lines are UTF-8)."""
    for number, raw in enumerate(handle, start=1):
        try:
            yield raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ConfigError(f"byte {exc.start + 1} of the line is not UTF-8 ({exc.reason}): "
                              "JSON Lines are UTF-8; convert the file (iconv -t UTF-8)",
                              path=source, line=number) from None


def run_import(args: argparse.Namespace) -> int:
    if args.file == "-":
        count = import_records(_utf8_lines(sys.stdin.buffer, "<stdin>"), args.trail,
                               megabytes=args.megabytes)
    else:
        try:
            with open(args.file, "rb") as handle:
                count = import_records(_utf8_lines(handle, args.file), args.trail,
                                       source=args.file, megabytes=args.megabytes)
        except OSError as exc:
            raise ConfigError(f"cannot read: {exc.strerror}", path=args.file) from None
    print(f"Imported {count} changes into {args.trail}.", file=sys.stderr)
    return 0
