"""The SQL lexer and a DDL statement's names through MAP: every name the statement gives a
table is found (qualified or not, quoted or not), nothing else is touched, and the text
around the names is kept exactly."""

from __future__ import annotations

import pytest

from trailgate.apply.ddl_names import find_names, quote_name, translate
from trailgate.apply.sql_lexer import Kind, split_statements, tokenize
from trailgate.params.model import MapSpec
from trailgate.params.names import resolve_map

MAPS = [MapSpec("app.t100", "tgt.t200"), MapSpec("app.*", "rep.*"),
        MapSpec('app."Mixed"', 'rep."MixedToo"')]


def _map(name: str) -> str | None:
    return resolve_map(MAPS, name)


def _schema(schema: str) -> str | None:
    return {"app": "rep"}.get(schema)


def run(statement: str, *, owner: str = "app", path: tuple[str, ...] = ('"$user"', "app",
                                                                       "public"),
        no_data: bool = False) -> str:
    return translate(statement, owner=owner, map_table=_map, map_schema=_schema,
                     search_path=list(path), no_data=no_data).statement


# -- the lexer ----------------------------------------------------------------------------

@pytest.mark.parametrize("text", [
    "SELECT 'it''s; here', E'a\\'b;', $$x;y$$, $tag$ $$ ; $tag$ -- c;\n/* a /* nested; */ */ 1",
    'CREATE TABLE "we;ird"."x""y" (a int)', "SELECT U&'d\\0061t' , b'101', x'ff', $1 + 2.5e3",
    "unterminated 'string", "unterminated /* comment", "a::text[] <> '{}'",
])
def test_tokens_join_back_to_the_text(text):
    assert "".join(t.text for t in tokenize(text)) == text


def test_token_kinds():
    kinds = [(t.kind, t.text) for t in tokenize("x.\"Y\" 'a' $q$b$q$ 1.5 $2 ; -- c")
             if t.kind is not Kind.SPACE]
    assert kinds == [(Kind.WORD, "x"), (Kind.OP, "."), (Kind.QUOTED, '"Y"'),
                     (Kind.STRING, "'a'"), (Kind.STRING, "$q$b$q$"), (Kind.NUMBER, "1.5"),
                     (Kind.PARAM, "$2"), (Kind.OP, ";"), (Kind.COMMENT, "-- c")]
    assert tokenize('"Quo""ted"')[0].name == 'Quo"ted' and tokenize("MiXed")[0].name == "mixed"


def test_split_statements_respects_quotes_and_comments():
    text = ("/* one; */ ALTER TABLE a ADD b text DEFAULT 'x;y'; CREATE TABLE c (d text "
            "DEFAULT $$;$$);; -- trailing; comment\n")
    assert split_statements(text) == ["/* one; */ ALTER TABLE a ADD b text DEFAULT 'x;y'",
                                      " CREATE TABLE c (d text DEFAULT $$;$$)"]


def test_quote_name():
    assert quote_name("orders") == "orders"
    assert quote_name("Orders") == '"Orders"'
    assert quote_name("select") == '"select"'
    assert quote_name('a"b') == '"a""b"'


# -- names through MAP ---------------------------------------------------------------------

@pytest.mark.parametrize(("source", "target"), [
    # seed 004's example, unqualified: the object is where the source found it (B3)
    ("ALTER TABLE t100 ADD c4 NUMERIC", "ALTER TABLE tgt.t200 ADD c4 NUMERIC"),
    ("alter table APP.T100 add c int", "alter table tgt.t200 add c int"),
    ("ALTER TABLE IF EXISTS ONLY app.t1 ALTER COLUMN a TYPE bigint USING a::bigint",
     "ALTER TABLE IF EXISTS ONLY rep.t1 ALTER COLUMN a TYPE bigint USING a::bigint"),
    ('CREATE TABLE app."Mixed" (id int)', 'CREATE TABLE rep."MixedToo" (id int)'),
    ("CREATE UNLOGGED TABLE IF NOT EXISTS app.n (id int REFERENCES t2 (id), "
     "x int REFERENCES app.t100)",
     "CREATE UNLOGGED TABLE IF NOT EXISTS rep.n (id int REFERENCES rep.t2 (id), "
     "x int REFERENCES tgt.t200)"),
    ("create table t4 (like t1 including all)", "create table rep.t4 (like rep.t1 including all)"),
    ("CREATE TABLE p1 PARTITION OF parent FOR VALUES IN (1)",
     "CREATE TABLE rep.p1 PARTITION OF rep.parent FOR VALUES IN (1)"),
    ("CREATE TABLE c (x int) INHERITS (a, app.b)",
     "CREATE TABLE rep.c (x int) INHERITS (rep.a, rep.b)"),
    ("create table app.c as select a.x, b.y from app.t1 a join t2 b on a.id = b.id, "
     "generate_series(1, 2) g where a.x > 0",
     "create table rep.c as select a.x, b.y from rep.t1 a join rep.t2 b on a.id = b.id, "
     "generate_series(1, 2) g where a.x > 0"),
    ("CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS ix ON ONLY app.t1 (a)",
     "CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS ix ON ONLY rep.t1 (a)"),
    ("CREATE INDEX ON t1 USING btree (lower(b))", "CREATE INDEX ON rep.t1 USING btree (lower(b))"),
    ("DROP TABLE IF EXISTS app.t1, t2 CASCADE", "DROP TABLE IF EXISTS rep.t1, rep.t2 CASCADE"),
    ("DROP INDEX app.ix", "DROP INDEX rep.ix"),
    ("DROP INDEX ix", "DROP INDEX ix"),  # unqualified: found through the target search_path
    ("ALTER INDEX app.ix RENAME TO iy", "ALTER INDEX rep.ix RENAME TO iy"),
    ("ALTER TABLE app.t1 RENAME TO t9", "ALTER TABLE rep.t1 RENAME TO t9"),
    ("ALTER TABLE app.t100 RENAME TO t101", "ALTER TABLE tgt.t200 RENAME TO t101"),
    ("ALTER TABLE app.t1 RENAME COLUMN a TO b", "ALTER TABLE rep.t1 RENAME COLUMN a TO b"),
    ("ALTER TABLE t1 ADD CONSTRAINT fk FOREIGN KEY (x) REFERENCES t2 (id) ON DELETE CASCADE",
     "ALTER TABLE rep.t1 ADD CONSTRAINT fk FOREIGN KEY (x) REFERENCES rep.t2 (id) "
     "ON DELETE CASCADE"),
    ("COMMENT ON TABLE app.t1 IS 'a; b'", "COMMENT ON TABLE rep.t1 IS 'a; b'"),
    ("COMMENT ON COLUMN app.t1.c IS 'x'", "COMMENT ON COLUMN rep.t1.c IS 'x'"),
    ("CREATE SEQUENCE app.s START 5", "CREATE SEQUENCE rep.s START 5"),
    ("CREATE OR REPLACE VIEW v AS SELECT * FROM t1", "CREATE OR REPLACE VIEW rep.v AS SELECT "
                                                     "* FROM rep.t1"),
    # names in strings, comments and column references stay as they are
    ("ALTER TABLE t1 ADD c text DEFAULT 'app.t1' /* app.t1 */ CHECK (c <> 't1')",
     "ALTER TABLE rep.t1 ADD c text DEFAULT 'app.t1' /* app.t1 */ CHECK (c <> 't1')"),
    ("ALTER TABLE t1 ALTER c SET DEFAULT nextval('app.s')",
     "ALTER TABLE rep.t1 ALTER c SET DEFAULT nextval('app.s')"),
    # a table no MAP takes is left alone
    ("ALTER TABLE other.t ADD c int REFERENCES app.t1", "ALTER TABLE other.t ADD c int "
                                                        "REFERENCES rep.t1"),
    # statements it does not know keep their text
    ("CREATE FUNCTION app.f() RETURNS int LANGUAGE sql AS $$ SELECT 1 FROM app.t1 $$",
     "CREATE FUNCTION app.f() RETURNS int LANGUAGE sql AS $$ SELECT 1 FROM app.t1 $$"),
    ("GRANT SELECT ON app.t1 TO someone", "GRANT SELECT ON app.t1 TO someone"),
])
def test_translate(source, target):
    assert run(source) == target


def test_unqualified_names_follow_the_source_search_path():
    # found in the first search_path schema a MAP takes; the object itself under B3
    assert run("ALTER TABLE t1 ADD x int REFERENCES t2", owner="app",
               path=("other", "app")) == "ALTER TABLE rep.t1 ADD x int REFERENCES rep.t2"
    tr = translate("ALTER TABLE t1 ADD x int", owner="app", map_table=_map,
                   map_schema=_schema, search_path=['"$user"', "app", "public", "pg_catalog"])
    assert tr.search_path == ["rep", "public"]


def test_create_table_as_runs_without_data_when_its_rows_follow():
    assert run("CREATE TABLE app.c AS SELECT * FROM t1", no_data=True) == \
        "CREATE TABLE rep.c AS SELECT * FROM rep.t1 WITH NO DATA"
    assert run("CREATE TABLE app.c AS SELECT * FROM t1 WITH DATA", no_data=True) == \
        "CREATE TABLE rep.c AS SELECT * FROM rep.t1 WITH NO DATA"
    assert run("CREATE TABLE app.c AS SELECT * FROM t1") == \
        "CREATE TABLE rep.c AS SELECT * FROM rep.t1"


def test_shape_reports_column_renames_and_new_names():
    shape = find_names("ALTER TABLE app.t RENAME COLUMN \"Old\" TO new_one")
    assert shape.renamed_columns == [("Old", "new_one")]
    shape = find_names("ALTER TABLE app.t RENAME a TO b")
    assert shape.renamed_columns == [("a", "b")]
    shape = find_names("alter table app.t rename to u")
    assert [(r.role, r.parts) for r in shape.names] == [("object", ("app", "t")),
                                                       ("newname", ("u",))]
    assert find_names("").names == [] and find_names("SELECT 1").names == []
