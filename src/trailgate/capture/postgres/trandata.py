"""Supplemental logging (TRANDATA, SCHEMATRANDATA) mapped onto PostgreSQL.

GoldenGate's log group ``GGS_<object id>`` becomes a table's REPLICA IDENTITY (its key
chosen as GoldenGate chooses one), its membership of the trailgate publication and a row in
``trailgate.log_groups`` (what ``INFO TRANDATA`` reports).  One PL/pgSQL function,
``trailgate.add_trandata``, does all three, so ``ADD TRANDATA`` and the SCHEMATRANDATA event
trigger choose keys alike.  docs/postgres.md, "Supplemental logging".
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg
from psycopg import errors as pgerrors
from psycopg import sql

from trailgate.db.connect import query_value
from trailgate.errors import ConfigError, SourceError

__all__ = [
    "DEFAULT_PUBLICATION",
    "LogGroup",
    "add_schematrandata",
    "add_trandata",
    "capture_warnings",
    "delete_schematrandata",
    "delete_trandata",
    "ensure_catalog",
    "info_schematrandata",
    "info_trandata",
    "log_group",
    "resolve_tables",
]

DEFAULT_PUBLICATION = "trailgate"
CATALOG_SCHEMA = "trailgate"

_CATALOG_SQL = r"""
CREATE SCHEMA IF NOT EXISTS trailgate;
CREATE TABLE IF NOT EXISTS trailgate.log_groups (
    log_group_name text PRIMARY KEY,
    table_oid oid NOT NULL UNIQUE,
    schema_name text NOT NULL,
    table_name text NOT NULL,
    columns text[] NOT NULL,
    key_kind text NOT NULL,
    replica_identity text NOT NULL,
    publication text NOT NULL,
    generated text NOT NULL,
    created timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS trailgate.prepared_schemas (
    schema_name text PRIMARY KEY,
    "timestamp" timestamptz NOT NULL DEFAULT now(),
    csn numeric NOT NULL,
    publication text NOT NULL
);
CREATE OR REPLACE FUNCTION trailgate.add_trandata(
    rel regclass, cols text[], nokey boolean, generated text, pub text)
RETURNS text LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
    key_cols text[];
    key_kind text;
    ident text;
    idx_name text;
    logged text[];
    missing text;
    internal text := current_setting('trailgate.internal_ddl', true);
BEGIN
    -- its ALTER TABLE and ALTER PUBLICATION are trailgate's own DDL: not DDL to replicate
    PERFORM set_config('trailgate.internal_ddl', 'on', true);
    SELECT array_agg(a.attname::text ORDER BY k.ord) INTO key_cols
      FROM pg_index i, unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, ord),
           pg_attribute a
     WHERE i.indrelid = rel AND i.indisprimary
       AND a.attrelid = rel AND a.attnum = k.attnum;
    IF key_cols IS NOT NULL THEN
        key_kind := 'PRIMARY';
        ident := 'DEFAULT';
    ELSE
        SELECT c.relname INTO idx_name
          FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
         WHERE i.indrelid = rel AND i.indisunique AND i.indimmediate AND i.indisvalid
           AND i.indpred IS NULL AND i.indexprs IS NULL AND NOT (0 = ANY(i.indkey::int2[]))
           AND NOT EXISTS (SELECT 1 FROM unnest(i.indkey::int2[]) AS k(attnum)
                             JOIN pg_attribute a ON a.attrelid = rel AND a.attnum = k.attnum
                            WHERE NOT a.attnotnull)
         ORDER BY c.relname LIMIT 1;
        IF idx_name IS NOT NULL THEN
            key_kind := 'UNIQUE';
            ident := format('USING INDEX %I', idx_name);
            SELECT array_agg(a.attname::text ORDER BY k.ord) INTO key_cols
              FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid,
                   unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, ord), pg_attribute a
             WHERE i.indrelid = rel AND c.relname = idx_name
               AND a.attrelid = rel AND a.attnum = k.attnum;
        ELSE
            key_kind := 'ALL';
            ident := 'FULL';
            SELECT array_agg(attname::text ORDER BY attnum) INTO key_cols FROM pg_attribute
             WHERE attrelid = rel AND attnum > 0 AND NOT attisdropped AND attgenerated = '';
        END IF;
    END IF;
    IF cols IS NOT NULL THEN
        SELECT string_agg(c, ', ') INTO missing FROM unnest(cols) AS c
         WHERE NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = rel AND attnum > 0
                             AND NOT attisdropped AND attname = c);
        IF missing IS NOT NULL THEN
            RAISE EXCEPTION 'table % has no column %', rel, missing USING ERRCODE = '42703';
        END IF;
        -- PostgreSQL can only log extra columns by logging them all.
        IF EXISTS (SELECT 1 FROM unnest(cols) AS c WHERE c <> ALL(key_cols)) THEN
            ident := 'FULL';
        END IF;
    END IF;
    logged := CASE WHEN nokey THEN cols
                   ELSE key_cols || ARRAY(SELECT c FROM unnest(cols) AS c
                                           WHERE c <> ALL(key_cols)) END;
    EXECUTE format('ALTER TABLE %s REPLICA IDENTITY %s', rel, ident);
    IF NOT EXISTS (SELECT 1 FROM pg_publication_rel r JOIN pg_publication p ON p.oid = r.prpubid
                    WHERE p.pubname = pub AND r.prrelid = rel) THEN
        EXECUTE format('ALTER PUBLICATION %I ADD TABLE %s', pub, rel);
    END IF;
    INSERT INTO trailgate.log_groups AS g (log_group_name, table_oid, schema_name, table_name,
                columns, key_kind, replica_identity, publication, generated)
    SELECT 'GGS_' || rel::oid, rel, n.nspname, c.relname, logged, key_kind, ident, pub,
           generated
      FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = rel
    ON CONFLICT (table_oid) DO UPDATE SET columns = EXCLUDED.columns,
        key_kind = EXCLUDED.key_kind, replica_identity = EXCLUDED.replica_identity,
        publication = EXCLUDED.publication,
        generated = CASE WHEN g.generated = 'USER NAME' THEN g.generated
                         ELSE EXCLUDED.generated END,
        created = now();
    PERFORM set_config('trailgate.internal_ddl', coalesce(internal, ''), true);
    RETURN key_kind;
END
$fn$;
CREATE OR REPLACE FUNCTION trailgate.on_create_table() RETURNS event_trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
    r record;
    pub text;
BEGIN
    FOR r IN SELECT * FROM pg_event_trigger_ddl_commands() WHERE object_type = 'table' LOOP
        SELECT publication INTO pub FROM trailgate.prepared_schemas
         WHERE schema_name = r.schema_name;
        IF pub IS NOT NULL THEN
            PERFORM trailgate.add_trandata(r.objid, NULL, false, 'SCHEMATRANDATA', pub);
        END IF;
    END LOOP;
END
$fn$;
"""

_EVENT_TRIGGER_SQL = """
CREATE EVENT TRIGGER trailgate_schematrandata ON ddl_command_end
WHEN TAG IN ('CREATE TABLE', 'CREATE TABLE AS', 'SELECT INTO')
EXECUTE FUNCTION trailgate.on_create_table()
"""

Conn = psycopg.Connection[Any]


def _stamp(level: str, code: str, text: str) -> str:
    """A GGSCI event line: ``2013-03-17 01:17:49 INFO OGG-01788 text``."""
    return f"{datetime.now():%Y-%m-%d %H:%M:%S}  {level} {code}  {text}"


def _db_error(exc: psycopg.Error, what: str) -> SourceError:
    diag = exc.diag.message_primary or str(exc)
    hint = ""
    if isinstance(exc, pgerrors.InsufficientPrivilege):
        hint = (": the DBLOGIN user must own the tables (or be a superuser) and have CREATE on "
                "the database; SCHEMATRANDATA needs a superuser (event trigger)")
    elif isinstance(exc, pgerrors.LockNotAvailable):
        hint = ": the table is locked by another session; retry when it is free"
    return SourceError(f"{what} failed: {diag}{hint}")


def ensure_catalog(conn: Conn, publication: str = DEFAULT_PUBLICATION) -> None:
    """Install trailgate's catalog and the publication in the source database (idempotent)."""
    try:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(hashtext('trailgate.catalog'))")
            conn.execute(_CATALOG_SQL)
            exists = conn.execute("SELECT 1 FROM pg_publication WHERE pubname = %s",
                                  (publication,)).fetchone()
            if not exists:
                conn.execute(sql.SQL("CREATE PUBLICATION {}").format(sql.Identifier(publication)))
    except psycopg.Error as exc:
        raise _db_error(exc, "installing the trailgate catalog") from None


# --- table names -----------------------------------------------------------------------------

_PART_RE = re.compile(r'"((?:[^"]|"")*)"|([^."]+)')


def _split_name(spec: str) -> list[tuple[str, bool]]:
    """``schema.table`` into parts, each (name, quoted); unquoted names fold to lower case."""
    parts: list[tuple[str, bool]] = []
    for chunk in _iter_parts(spec.strip()):
        parts.append(chunk)
    if not parts or len(parts) > 2:
        raise ConfigError(f"invalid table name {spec!r}: expected [schema.]table")
    return parts


def _iter_parts(spec: str) -> list[tuple[str, bool]]:
    out, pos = [], 0
    while pos < len(spec):
        m = _PART_RE.match(spec, pos)
        if m is None:
            raise ConfigError(f"invalid table name {spec!r}: expected [schema.]table")
        quoted = m.group(1) is not None
        out.append((m.group(1).replace('""', '"') if quoted else m.group(2).strip().lower(),
                    quoted))
        pos = m.end()
        if pos < len(spec):
            if spec[pos] != ".":
                raise ConfigError(f"invalid table name {spec!r}: expected [schema.]table")
            pos += 1
    return out


def _like(name: str, quoted: bool) -> str:
    escaped = name.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped if quoted else escaped.replace("*", "%").replace("?", "_")


def resolve_tables(conn: Conn, spec: str, *, require_schema: bool = False
                   ) -> list[tuple[int, str, str]]:
    """Tables matching ``[schema.]table`` (``*``/``?`` wildcards) as (oid, schema, table).

    Without a schema the login's current schema is used (``require_schema`` refuses that,
    as GGSCI's DELETE TRANDATA does).
    """
    parts = _split_name(spec)
    if len(parts) == 1:
        if require_schema:
            raise ConfigError(f"{spec}: the schema must be given (schema.table)")
        row = conn.execute("SELECT current_schema()").fetchone()
        schema = (row[0] if row and row[0] else "public", True)
    else:
        schema = parts[0]
    table = parts[-1]
    rows = conn.execute(
        "SELECT c.oid::int8, n.nspname::text, c.relname::text FROM pg_class c "
        "JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE c.relkind IN ('r', 'p') AND n.nspname LIKE %s AND c.relname LIKE %s "
        "AND n.nspname NOT IN ('pg_catalog', 'information_schema', 'trailgate') "
        "ORDER BY 2, 3", (_like(*schema), _like(*table))).fetchall()
    return [(int(oid), s, t) for oid, s, t in rows]


def _tables_or_error(conn: Conn, spec: str, *, require_schema: bool = False
                     ) -> list[tuple[int, str, str]]:
    tables = resolve_tables(conn, spec, require_schema=require_schema)
    if not tables:
        raise ConfigError(f"no table matches {spec} in database {conn.info.dbname}: check the "
                          "name (unquoted names are folded to lower case)")
    return tables


# --- log groups ------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class LogGroup:
    """A row of ``trailgate.log_groups``."""

    name: str
    table_oid: int
    schema: str
    table: str
    columns: list[str]
    key_kind: str
    replica_identity: str
    generated: str

    @property
    def qualified_name(self) -> str:
        return f"{self.schema}.{self.table}"


def log_group(conn: Conn, table_oid: int) -> LogGroup | None:
    """The log group of a table, or None when it has no supplemental logging."""
    if not _catalog_exists(conn):
        return None
    row = conn.execute(
        "SELECT log_group_name, table_oid::int8, schema_name, table_name, columns, key_kind, "
        "replica_identity, generated FROM trailgate.log_groups WHERE table_oid = %s",
        (table_oid,)).fetchone()
    return LogGroup(*row) if row else None


def _catalog_exists(conn: Conn) -> bool:
    row = conn.execute("SELECT to_regclass('trailgate.log_groups') IS NOT NULL").fetchone()
    return bool(row and row[0])


def _run(conn: Conn, what: str, fn: Callable[[], Any]) -> Any:
    try:
        with conn.transaction():
            conn.execute("SET LOCAL lock_timeout = '5s'")
            conn.execute("SET LOCAL trailgate.internal_ddl = 'on'")  # not DDL to replicate
            return fn()
    except psycopg.Error as exc:
        if isinstance(exc, pgerrors.UndefinedColumn):
            raise ConfigError(f"{what}: {exc.diag.message_primary}") from None
        raise _db_error(exc, what) from None


# --- TRANDATA --------------------------------------------------------------------------------

def add_trandata(conn: Conn, spec: str, *, cols: list[str] | None = None, nokey: bool = False,
                 publication: str = DEFAULT_PUBLICATION) -> list[str]:
    """``ADD TRANDATA [schema.]table [, COLS (c1, c2)] [, NOKEY]``: the messages GGSCI prints."""
    if nokey and not cols:
        raise ConfigError("ADD TRANDATA … NOKEY needs COLS (…): without the key some columns "
                          "must be logged")
    ensure_catalog(conn, publication)
    tables = _tables_or_error(conn, spec)
    lines: list[str] = []
    for oid, schema, table in tables:
        name = f"{schema}.{table}"
        key_kind = _run(conn, f"ADD TRANDATA {name}", functools.partial(
            query_value, conn,
            "SELECT trailgate.add_trandata(%s::oid::regclass, %s, %s, 'USER NAME', %s)",
            (oid, cols, nokey, publication)))
        if key_kind == "ALL" and not nokey:
            lines.append(_stamp("WARNING", "OGG-06439", f"No unique key is defined for table "
                                f"{name}. All viewable columns will be used as a key."))
        lines.append(f"Logging of supplemental redo data enabled for table {name}.")
    return lines


def info_trandata(conn: Conn, spec: str) -> list[str]:
    """``INFO TRANDATA schema.table|schema.*``: GGSCI's two lines per table."""
    lines: list[str] = []
    for oid, schema, table in _tables_or_error(conn, spec):
        name = f"{schema}.{table}"
        group = log_group(conn, oid)
        if group is None:
            lines.append(f"Logging of supplemental redo log data is disabled for table {name}.")
            continue
        lines.append(f"Logging of supplemental redo log data is enabled for table {name}.")
        lines.append(f"Columns supplementally logged for table {name}: "
                     f"{', '.join(group.columns)}.")
    return lines


def delete_trandata(conn: Conn, spec: str) -> list[str]:
    """``DELETE TRANDATA schema.table``: the schema is required, as in GGSCI (seed 000)."""
    tables = _tables_or_error(conn, spec, require_schema=True)
    lines = []
    for oid, schema, table in tables:
        name = f"{schema}.{table}"
        group = log_group(conn, oid)
        if group is None:
            lines.append(f"Logging of supplemental redo data is already disabled for table "
                         f"{name}.")
            continue
        _run(conn, f"DELETE TRANDATA {name}", functools.partial(_drop_group, conn, oid))
        lines.append(f"Logging of supplemental redo data disabled for table {name}.")
    return lines


def _drop_group(conn: Conn, oid: int) -> None:
    row = conn.execute("DELETE FROM trailgate.log_groups WHERE table_oid = %s "
                       "RETURNING publication", (oid,)).fetchone()
    rel = sql.SQL("{}.{}").format(*(sql.Identifier(p) for p in conn.execute(
        "SELECT n.nspname::text, c.relname::text FROM pg_class c JOIN pg_namespace n "
        "ON n.oid = c.relnamespace WHERE c.oid = %s", (oid,)).fetchone() or ()))
    conn.execute(sql.SQL("ALTER TABLE {} REPLICA IDENTITY DEFAULT").format(rel))
    if row and conn.execute(
            "SELECT 1 FROM pg_publication_rel r JOIN pg_publication p ON p.oid = r.prpubid "
            "WHERE p.pubname = %s AND r.prrelid = %s", (row[0], oid)).fetchone():
        conn.execute(sql.SQL("ALTER PUBLICATION {} DROP TABLE {}").format(
            sql.Identifier(row[0]), rel))


# --- SCHEMATRANDATA --------------------------------------------------------------------------

def _schema_name(conn: Conn, spec: str) -> str:
    parts = _split_name(spec)
    if len(parts) != 1:
        raise ConfigError(f"invalid schema name {spec!r}")
    name = parts[0][0]
    if not conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (name,)).fetchone():
        raise ConfigError(f"schema {name} does not exist in database {conn.info.dbname}")
    return name


def add_schematrandata(conn: Conn, spec: str, *,
                       publication: str = DEFAULT_PUBLICATION) -> list[str]:
    """``ADD SCHEMATRANDATA schema``: log every table in it, now and created later."""
    schema = _schema_name(conn, spec)
    ensure_catalog(conn, publication)

    def work() -> None:
        has_trigger = conn.execute(
            "SELECT 1 FROM pg_event_trigger WHERE evtname = 'trailgate_schematrandata'"
        ).fetchone()
        if not has_trigger:
            conn.execute(_EVENT_TRIGGER_SQL)
        conn.execute(
            "INSERT INTO trailgate.prepared_schemas (schema_name, csn, publication) "
            "VALUES (%s, pg_current_wal_lsn() - '0/0'::pg_lsn, %s) ON CONFLICT (schema_name) "
            "DO UPDATE SET \"timestamp\" = now(), csn = EXCLUDED.csn, "
            "publication = EXCLUDED.publication", (schema, publication))
        conn.execute(
            "SELECT trailgate.add_trandata(c.oid, NULL, false, 'SCHEMATRANDATA', %s) "
            "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s AND c.relkind IN ('r', 'p') ORDER BY c.relname",
            (publication, schema))
        # the whole schema is published too (PostgreSQL 15+): a table created later is then
        # published from its creation, so even the rows of a CREATE TABLE AS are captured
        if conn.info.server_version >= 150000 and not conn.execute(
                "SELECT 1 FROM pg_publication_namespace pn JOIN pg_publication p ON "
                "p.oid = pn.pnpubid JOIN pg_namespace n ON n.oid = pn.pnnspid "
                "WHERE p.pubname = %s AND n.nspname = %s", (publication, schema)).fetchone():
            conn.execute(sql.SQL("ALTER PUBLICATION {} ADD TABLES IN SCHEMA {}").format(
                sql.Identifier(publication), sql.Identifier(schema)))

    _run(conn, f"ADD SCHEMATRANDATA {schema}", work)
    return [_stamp("INFO", "OGG-01788", f"SCHEMATRANDATA has been added on schema {schema}.")]


def info_schematrandata(conn: Conn, spec: str) -> list[str]:
    """``INFO SCHEMATRANDATA schema``: enabled or not, and the prepared timestamp and CSN."""
    schema = _schema_name(conn, spec)
    row = None
    if _catalog_exists(conn):
        row = conn.execute(
            "SELECT \"timestamp\", csn::int8, (SELECT count(*) FROM trailgate.log_groups g "
            "WHERE g.schema_name = p.schema_name) FROM trailgate.prepared_schemas p "
            "WHERE schema_name = %s", (schema,)).fetchone()
    if row is None:
        return [f"Schema level supplemental logging is disabled on schema {schema}."]
    ts, csn, count = row
    return [
        _stamp("INFO", "OGG-06480", "Schema level supplemental logging, excluding non-validated "
               f"keys, is enabled on schema {schema}."),
        f"Schema {schema} prepared at {ts:%Y-%m-%d %H:%M:%S} UTC, CSN {csn}; "
        f"{count} table(s) supplementally logged.",
    ]


def delete_schematrandata(conn: Conn, spec: str) -> list[str]:
    """``DELETE SCHEMATRANDATA schema``: stop logging tables that only the schema logged."""
    schema = _schema_name(conn, spec)
    if not _catalog_exists(conn):
        return [_stamp("INFO", "OGG-01792", f"SCHEMATRANDATA has been deleted on schema "
                       f"{schema}.")]

    def work() -> None:
        row = conn.execute("DELETE FROM trailgate.prepared_schemas WHERE schema_name = %s "
                           "RETURNING publication", (schema,)).fetchone()
        if row and conn.info.server_version >= 150000 and conn.execute(
                "SELECT 1 FROM pg_publication_namespace pn JOIN pg_publication p ON "
                "p.oid = pn.pnpubid JOIN pg_namespace n ON n.oid = pn.pnnspid "
                "WHERE p.pubname = %s AND n.nspname = %s", (row[0], schema)).fetchone():
            conn.execute(sql.SQL("ALTER PUBLICATION {} DROP TABLES IN SCHEMA {}").format(
                sql.Identifier(row[0]), sql.Identifier(schema)))
        for (oid,) in conn.execute(
                "SELECT table_oid::int8 FROM trailgate.log_groups WHERE schema_name = %s "
                "AND generated = 'SCHEMATRANDATA'", (schema,)).fetchall():
            _drop_group(conn, oid)

    _run(conn, f"DELETE SCHEMATRANDATA {schema}", work)
    return [_stamp("INFO", "OGG-01792", f"SCHEMATRANDATA has been deleted on schema {schema}.")]


# --- what the Extract checks at start --------------------------------------------------------

def capture_warnings(conn: Conn, specs: list[str], *,
                     publication: str = DEFAULT_PUBLICATION) -> list[str]:
    """Prepare the Extract's TABLE list for capture and return warnings about it.

    Tables with TRANDATA are already published.  A table without TRANDATA but with a
    primary key (or another replica identity) is added to the publication: its updates and
    deletes carry the key PostgreSQL logs.  A table with no replica identity at all is left
    out, because PostgreSQL would then reject updates and deletes on it at the source.
    """
    ensure_catalog(conn, publication)
    warnings: list[str] = []
    seen: set[int] = set()
    for spec in specs:
        tables = resolve_tables(conn, spec)
        if not tables:
            warnings.append(f"WARNING: no table matches {spec} in database "
                            f"{conn.info.dbname}.")
        for oid, schema, table in tables:
            if oid in seen:
                continue
            seen.add(oid)
            name = f"{schema}.{table}"
            if log_group(conn, oid) is not None:
                continue
            ident, has_pk = conn.execute(
                "SELECT c.relreplident::text, EXISTS (SELECT 1 FROM pg_index i WHERE "
                "i.indrelid = c.oid AND i.indisprimary) FROM pg_class c WHERE c.oid = %s",
                (oid,)).fetchone() or ("d", False)
            if ident == "n" or (ident == "d" and not has_pk):
                warnings.append(
                    f"WARNING: table {name} has no supplemental logging and no key the log "
                    f"can carry: it is not captured (PostgreSQL would reject its updates and "
                    f"deletes once published). Run ADD TRANDATA {name}.")
                continue
            what = {"d": "its primary key", "i": "its replica identity index",
                    "f": "all columns"}[ident]
            _run(conn, f"publishing {name}", functools.partial(_publish, conn, publication, oid))
            warnings.append(
                f"WARNING: table {name} has no supplemental logging (ADD TRANDATA {name}); "
                f"its updates and deletes carry {what}, as the log provides.")
    return warnings


def _publish(conn: Conn, publication: str, oid: int) -> None:
    if conn.execute("SELECT 1 FROM pg_publication_rel r JOIN pg_publication p "
                    "ON p.oid = r.prpubid WHERE p.pubname = %s AND r.prrelid = %s",
                    (publication, oid)).fetchone():
        return
    conn.execute(sql.SQL("ALTER PUBLICATION {} ADD TABLE {}").format(
        sql.Identifier(publication),
        sql.SQL(query_value(conn, "SELECT %s::oid::regclass::text", (oid,)))))
