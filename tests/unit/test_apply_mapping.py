"""MAP/TARGET resolution, COLMAP, KEYCOLS, WHERE and start-up checks (no database needed)."""

from __future__ import annotations

import pytest

from trailgate.apply import Mapper, MappingError, StaticCatalog, TargetColumn, TargetTable
from trailgate.apply.expressions import optype_name
from trailgate.apply.records import TrailChange
from trailgate.apply.values import pg_type_for_source, text_from_trail
from trailgate.errors import ConfigError
from trailgate.model import Change, Column, ColumnKind, OpType, TableDef, TrailPosition
from trailgate.params import ReplicatParams, parse_params_text

K = ColumnKind
SRC = TableDef("public", "orders", [Column("id", 0, K.NUMBER, "integer"),
                                    Column("name", 1, K.VARCHAR2, "text"),
                                    Column("qty", 2, K.NUMBER, "integer")], ["id"])


def target(schema: str = "replica", name: str = "orders", key: list[str] | None = None,
           cols: tuple[str, ...] = ("id", "name", "qty")) -> TargetTable:
    return TargetTable(schema, name, [TargetColumn(c, "text") for c in cols],
                       ["id"] if key is None else key)


def mapper(body: str, tables: list[TargetTable], head: str = "", **kw: bool) -> Mapper:
    p = parse_params_text(f"REPLICAT rep1\nTARGETDB x\n{head}{body}", "dirprm/rep1.prm")
    assert isinstance(p, ReplicatParams)
    return Mapper(p, StaticCatalog(tables, **kw))


def tc(op: OpType, after=None, before=None, table: str = "public.orders",
       tokens=None) -> TrailChange:
    return TrailChange(Change(op, table, after, before, tokens=tokens), 9, "1.2.3",
                       TrailPosition(2, 345))


def test_wildcard_map_resolves_target_and_uses_defaults() -> None:
    m = mapper("MAP public.*, TARGET replica.*;", [target()])
    mc = m.map(tc(OpType.INSERT, {0: b"1", 1: b"a", 2: None}), SRC)
    assert mc is not None and mc.target == "replica.orders"
    assert mc.key == {"id": "1"} and mc.values == {"id": "1", "name": "a", "qty": None}
    assert m.map(tc(OpType.INSERT, {0: b"1"}, table="other.t"), SRC) is None


def test_compressed_update_sets_only_present_columns() -> None:
    m = mapper("MAP public.orders, TARGET replica.orders;", [target()])
    mc = m.map(tc(OpType.FIELD_COMP, {0: b"1", 2: b"5"}), SRC)
    assert mc is not None and mc.op is OpType.UPDATE
    assert mc.key == {"id": "1"} and mc.values == {"id": "1", "qty": "5"}


def test_pk_update_and_delete_use_the_before_key() -> None:
    m = mapper("MAP public.orders, TARGET replica.orders;", [target()])
    pk = m.map(tc(OpType.PK_UPDATE, {0: b"2", 1: b"x"}, {0: b"1"}), SRC)
    assert pk is not None and pk.key == {"id": "1"} and pk.new_key() == {"id": "2"}
    de = m.map(tc(OpType.DELETE, before={0: b"7"}), SRC)
    assert de is not None and de.key == {"id": "7"} and de.values == {}


def test_missing_target_table_names_file_line_and_object() -> None:
    m = mapper("MAP public.a, TARGET replica.a;\n\nMAP public.b, TARGET replica.gone;\n",
               [target(name="a")])
    with pytest.raises(ConfigError) as err:
        m.validate()
    assert str(err.value).startswith("dirprm/rep1.prm, line 5: ")
    assert "replica.gone does not exist" in str(err.value)


def test_missing_wildcard_target_is_reported_when_the_table_arrives() -> None:
    m = mapper("MAP public.*, TARGET replica.*;", [])
    m.validate()
    with pytest.raises(ConfigError, match=r"line 3: .*replica\.orders does not exist"):
        m.map(tc(OpType.INSERT, {0: b"1"}), SRC)


def test_colmap_errors_name_the_line() -> None:
    m = mapper("MAP public.orders, TARGET replica.orders, COLMAP (id = id, name = nosuch);",
               [target()])
    with pytest.raises(ConfigError, match=r"line 3: .*has no column nosuch"):
        m.map(tc(OpType.INSERT, {0: b"1"}), SRC)
    m = mapper("MAP public.orders, TARGET replica.orders, COLMAP (id = id, bogus = name);",
               [target()])
    with pytest.raises(ConfigError, match="COLMAP target column bogus"):
        m.validate()
    m = mapper("MAP public.orders, TARGET replica.orders, KEYCOLS (nope);", [target()])
    with pytest.raises(ConfigError, match="KEYCOLS column nope"):
        m.validate()


def test_colmap_without_usedefaults_maps_only_listed_columns() -> None:
    m = mapper("MAP public.orders, TARGET replica.orders, COLMAP (id = id, name = 'lit', "
               "qty = @GETENV('GGHEADER', 'OPTYPE'));", [target()])
    mc = m.map(tc(OpType.FIELD_COMP, {0: b"1", 1: b"ignored"}), SRC)
    assert mc is not None and mc.values == {"id": "1", "name": "lit", "qty": "SQL COMPUPDATE"}


def test_key_choice_keycols_target_source_all() -> None:
    keyless = target(key=[])
    m = mapper("MAP public.orders, TARGET replica.orders, KEYCOLS (name);", [target()])
    assert m.mapping("public.orders", SRC).key_kind == "KEYCOLS"  # type: ignore[union-attr]
    m = mapper("MAP public.orders, TARGET replica.orders;", [target(key=["qty"])])
    assert m.mapping("public.orders", SRC).key_kind == "PRIMARY"  # type: ignore[union-attr]
    m = mapper("MAP public.orders, TARGET replica.orders;", [keyless])
    assert m.mapping("public.orders", SRC).key_kind == "SOURCE"  # type: ignore[union-attr]
    nokey = TableDef("public", "orders", SRC.columns, ["id", "name", "qty"], "ALL")
    m = mapper("MAP public.orders, TARGET replica.orders;", [keyless])
    mapping = m.mapping("public.orders", nokey)
    assert mapping is not None and mapping.key_kind == "ALL"


def test_update_without_the_key_column_is_a_mapping_error() -> None:
    m = mapper("MAP public.orders, TARGET replica.orders, KEYCOLS (name);", [target()])
    with pytest.raises(MappingError, match=r"trail position 2:345 .*key column name"):
        m.map(tc(OpType.FIELD_COMP, {0: b"1", 2: b"3"}), SRC)


def test_where_and_presence_tests() -> None:
    m = mapper("MAP public.orders, TARGET replica.orders, "
               "WHERE (qty >= 10 OR name = @NULL);", [target()])
    assert m.map(tc(OpType.INSERT, {0: b"1", 1: b"a", 2: b"9"}), SRC) is None
    assert m.map(tc(OpType.INSERT, {0: b"1", 1: b"a", 2: b"10"}), SRC) is not None
    assert m.map(tc(OpType.INSERT, {0: b"1", 1: None, 2: b"1"}), SRC) is not None
    m = mapper("MAP public.orders, TARGET replica.orders, WHERE (qty = @PRESENT);",
               [target()])
    assert m.map(tc(OpType.FIELD_COMP, {0: b"1", 1: b"x"}), SRC) is None


def test_mapexclude_and_token() -> None:
    m = mapper("MAP public.*, TARGET replica.*, COLMAP (USEDEFAULTS, name = @TOKEN('tk'));\n"
               "MAPEXCLUDE public.secret\n", [target(), target(name="secret")])
    assert m.map(tc(OpType.INSERT, {0: b"1"}, table="public.secret"), SRC) is None
    mc = m.map(tc(OpType.INSERT, {0: b"1"}, tokens={"tk": "v"}), SRC)
    assert mc is not None and mc.values["name"] == "v"


def test_truncates_follow_gettruncates() -> None:
    m = mapper("MAP public.orders, TARGET replica.orders;", [target()])
    assert m.map(tc(OpType.TRUNCATE), SRC) is None
    m = mapper("MAP public.orders, TARGET replica.orders;", [target()], head="GETTRUNCATES\n")
    mc = m.map(tc(OpType.TRUNCATE), SRC)
    assert mc is not None and mc.op is OpType.TRUNCATE


def test_assumetargetdefs_and_missing_metadata() -> None:
    m = mapper("MAP public.orders, TARGET replica.orders;", [target()])
    with pytest.raises(ConfigError, match="ASSUMETARGETDEFS"):
        m.map(tc(OpType.INSERT, {0: b"1"}), None)
    m = mapper("MAP public.orders, TARGET replica.orders;", [target()],
               head="ASSUMETARGETDEFS\n")
    mc = m.map(tc(OpType.INSERT, {0: b"1", 2: b"3"}), None)
    assert mc is not None and mc.values == {"id": "1", "qty": "3"}


def test_created_target_definition_for_delta() -> None:
    m = mapper("MAP public.orders, TARGET lake.orders, COLMAP (USEDEFAULTS, "
               "at = @GETENV('GGHEADER', 'COMMITTIMESTAMP'));", [], creates_tables=True)
    mapping = m.mapping("public.orders", SRC)
    assert mapping is not None and not mapping.target.exists
    assert [(c.name, c.type_name) for c in mapping.target.columns] == [
        ("id", "integer"), ("name", "text"), ("qty", "integer"),
        ("at", "timestamp with time zone")]
    assert mapping.key_kind == "SOURCE"


@pytest.mark.parametrize(("value", "column", "expected"), [
    (b"2013-03-14:22:39:56", Column("D", 0, K.DATE, "DATE"), "2013-03-14 22:39:56"),
    (b"2013-03-14:00:00:00", Column("D", 0, K.DATE, "date"), "2013-03-14"),
    (b"2013-03-14:22:39:56.120000000", Column("T", 0, K.TIMESTAMP, "TIMESTAMP(6)"),
     "2013-03-14 22:39:56.120000"),
    (b"2013-03-14:22:39:56.000000000", Column("T", 0, K.TIMESTAMP, "timestamp with time zone"),
     "2013-03-14 22:39:56.000000+00"),
    (b"\x01\xff", Column("R", 0, K.RAW, "RAW(2)"), "\\x01ff"),
    (b"1", Column("B", 0, K.NUMBER, "boolean"), "true"),
    (b"-12.5", Column("N", 0, K.NUMBER, "NUMBER"), "-12.5"),
    (None, Column("N", 0, K.NUMBER, "NUMBER"), None),
])
def test_trail_values_to_postgres_text(value, column, expected) -> None:
    assert text_from_trail(value, column) == expected


@pytest.mark.parametrize(("column", "expected"), [
    (Column("a", 0, K.NUMBER, "NUMBER(10)"), "bigint"),
    (Column("a", 0, K.NUMBER, "NUMBER(8,2)"), "numeric(8,2)"),
    (Column("a", 0, K.NUMBER, "NUMBER"), "numeric"),
    (Column("a", 0, K.NUMBER, "FLOAT(126)"), "double precision"),
    (Column("a", 0, K.DATE, "DATE"), "timestamp without time zone"),
    (Column("a", 0, K.TIMESTAMP, "TIMESTAMP(3)", scale=3), "timestamp(3) without time zone"),
    (Column("a", 0, K.RAW, "RAW(16)"), "bytea"),
    (Column("a", 0, K.VARCHAR2, "VARCHAR2(30)"), "text"),
    (Column("a", 0, K.NUMBER, "numeric(5,1)"), "numeric(5,1)"),
])
def test_target_types_for_source_columns(column, expected) -> None:
    assert pg_type_for_source(column) == expected


def test_optype_names() -> None:
    assert [optype_name(o) for o in (OpType.INSERT, OpType.FIELD_COMP, OpType.PK_UPDATE)] == [
        "INSERT", "SQL COMPUPDATE", "PK UPDATE"]
