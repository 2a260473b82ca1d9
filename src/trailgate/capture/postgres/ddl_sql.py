"""The SQL of PostgreSQL DDL support: seed 004's marker and history tables in GGSCHEMA, and
the event-trigger functions that fill them, as one script.

Kept apart from the module that installs it (``ddl_setup``) because it is long and is
PostgreSQL, not Python.  ``@S@`` stands for the quoted schema, ``@SNAME@`` for its name as a
string literal, ``@PUB@`` for the publication's as a literal.  Literals avoid backslashes
(``chr(92)``): function bodies are parsed under the caller's ``standard_conforming_strings``.
"""

from __future__ import annotations

__all__ = ["ALL_TRIGGERS", "DDL_OBJECTS_SQL", "DDL_TRIGGERS_SQL", "EVENT_TRIGGERS",
           "GUARD_TRIGGERS", "SESSION_SETTINGS"]

#: The session settings a DDL statement's meaning depends on, recorded as C17/C18 pairs
#: (PostgreSQL's counterpart of seed 004's NLS parameters).
SESSION_SETTINGS = ("search_path", "DateStyle", "IntervalStyle", "TimeZone",
                    "standard_conforming_strings", "default_tablespace",
                    "default_table_access_method")

#: (event trigger, event, function) created by ADD DDLSUPPORT.
EVENT_TRIGGERS = (("ggs_ddl_trigger_end", "ddl_command_end", "ggs_ddl_trigger"),
                  ("ggs_ddl_trigger_drop", "sql_drop", "ggs_ddl_trigger"))

#: (event trigger, event, function): the guards, which fire before the triggers above
#: (PostgreSQL fires an event's triggers in name order).
GUARD_TRIGGERS = (("ggs_ddl_guard_end", "ddl_command_end", "ggs_ddl_guard"),
                  ("ggs_ddl_guard_drop", "sql_drop", "ggs_ddl_guard"))
assert all(g < t for (g, _, _), (t, _, _) in zip(GUARD_TRIGGERS, EVENT_TRIGGERS, strict=True))
#: Every event trigger DDL support has, guards first.
ALL_TRIGGERS = GUARD_TRIGGERS + EVENT_TRIGGERS

DDL_OBJECTS_SQL = """
CREATE SCHEMA IF NOT EXISTS @S@;
CREATE SEQUENCE IF NOT EXISTS @S@.ggs_marker_seq;
CREATE TABLE IF NOT EXISTS @S@.ggs_marker (
    seqno bigint NOT NULL,
    fragmentno integer NOT NULL,
    optime char(19) NOT NULL,
    type varchar(100) NOT NULL,
    subtype varchar(100) NOT NULL,
    marker_text varchar(4000),
    PRIMARY KEY (optime, seqno, fragmentno)
);
CREATE INDEX IF NOT EXISTS ggs_marker_ind1 ON @S@.ggs_marker (seqno, fragmentno);
CREATE TABLE IF NOT EXISTS @S@.ggs_ddl_hist (
    seqno bigint NOT NULL,
    objectid bigint,
    dataobjectid bigint,
    ddltype varchar(40),
    objectname varchar(100),
    objectowner varchar(100),
    objecttype varchar(40),
    fragmentno integer NOT NULL,
    optime char(19) NOT NULL,
    startscn bigint,
    metadata_text varchar(4000),
    auditcol varchar(80),
    CONSTRAINT ggs_ddl_hist_i1 PRIMARY KEY (seqno, fragmentno)
);
CREATE INDEX IF NOT EXISTS ggs_ddl_hist_index1 ON @S@.ggs_ddl_hist (objectid);
CREATE INDEX IF NOT EXISTS ggs_ddl_hist_i2 ON @S@.ggs_ddl_hist (objectid, startscn, fragmentno);
CREATE INDEX IF NOT EXISTS ggs_ddl_hist_i3 ON @S@.ggs_ddl_hist (startscn, fragmentno);
CREATE INDEX IF NOT EXISTS ggs_ddl_hist_i4
    ON @S@.ggs_ddl_hist (objectname, objectowner, objecttype, startscn, fragmentno);
CREATE INDEX IF NOT EXISTS ggs_ddl_hist_i5 ON @S@.ggs_ddl_hist (optime);
CREATE INDEX IF NOT EXISTS ggs_ddl_hist_i6 ON @S@.ggs_ddl_hist (startscn, auditcol, fragmentno);
"""

DDL_TRIGGERS_SQL = r"""
-- a value as marker text quotes it: '' for a quote, a backslash before a backslash
CREATE OR REPLACE FUNCTION @S@.ggs_q(v text) RETURNS text
LANGUAGE sql IMMUTABLE SET search_path = pg_catalog AS $fn$
    SELECT '''' || replace(replace(coalesce(v, ''), chr(92), chr(92) || chr(92)),
                           '''', '''''') || ''''
$fn$;

-- the statements of a query string: (byte offset, byte length), split at top-level
-- semicolons outside quotes, dollar quotes and comments
CREATE OR REPLACE FUNCTION @S@.ggs_ddl_split(q text)
RETURNS TABLE (pos integer, len integer)
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog AS $fn$
DECLARE
    b bytea := convert_to(q, 'UTF8') || decode('00000000', 'hex');  -- get_byte(b, n) is 0
    n integer := length(b) - 4;
    i integer := 0;
    start integer := 0;
    c integer;
    prev integer := 32;
    depth integer;
    tag bytea;
    k integer;
    esc boolean;
    q integer;
BEGIN
    WHILE i < n LOOP
        c := get_byte(b, i);
        IF c = 39 OR c = 34 THEN  -- 'string' (E'..' takes backslash escapes), "identifier"
            q := c;
            esc := c = 39 AND (prev = 69 OR prev = 101)
                   AND CASE WHEN i >= 2 THEN get_byte(b, i - 2) NOT BETWEEN 48 AND 122
                            ELSE true END;
            i := i + 1;
            WHILE i < n LOOP
                c := get_byte(b, i);
                IF esc AND c = 92 THEN
                    i := i + 2;
                    CONTINUE;
                END IF;
                IF c = q THEN
                    IF get_byte(b, i + 1) = q THEN
                        i := i + 2;
                        CONTINUE;
                    END IF;
                    EXIT;
                END IF;
                i := i + 1;
            END LOOP;
        ELSIF c = 45 AND get_byte(b, i + 1) = 45 THEN  -- -- comment
            WHILE i < n AND get_byte(b, i) <> 10 LOOP
                i := i + 1;
            END LOOP;
        ELSIF c = 47 AND get_byte(b, i + 1) = 42 THEN  -- /* comment */, nested
            depth := 1;
            i := i + 2;
            WHILE i < n AND depth > 0 LOOP
                IF get_byte(b, i) = 47 AND get_byte(b, i + 1) = 42 THEN
                    depth := depth + 1;
                    i := i + 2;
                ELSIF get_byte(b, i) = 42 AND get_byte(b, i + 1) = 47 THEN
                    depth := depth - 1;
                    i := i + 2;
                ELSE
                    i := i + 1;
                END IF;
            END LOOP;
            i := i - 1;
        ELSIF c = 36 AND NOT (prev BETWEEN 48 AND 57 OR prev BETWEEN 65 AND 90
                              OR prev BETWEEN 97 AND 122 OR prev = 95 OR prev >= 128
                              OR prev = 36) THEN  -- $tag$ … $tag$
            k := i + 1;
            WHILE k < n AND (get_byte(b, k) BETWEEN 65 AND 90 OR get_byte(b, k) BETWEEN 97 AND 122
                             OR get_byte(b, k) = 95 OR get_byte(b, k) >= 128
                             OR (k > i + 1 AND get_byte(b, k) BETWEEN 48 AND 57)) LOOP
                k := k + 1;
            END LOOP;
            IF k < n AND get_byte(b, k) = 36 THEN
                tag := substring(b FROM i + 1 FOR k - i + 1);
                k := position(tag IN substring(b FROM k + 2 FOR n - k - 1));
                IF k = 0 THEN
                    i := n;  -- unterminated: the rest is one statement
                ELSE
                    i := i + length(tag) + k - 1 + length(tag) - 1;
                END IF;
            END IF;
        ELSIF c = 59 THEN  -- ;
            pos := start;
            len := i - start;
            RETURN NEXT;
            start := i + 1;
        END IF;
        prev := CASE WHEN i < n THEN get_byte(b, i) ELSE 32 END;
        i := i + 1;
    END LOOP;
    IF start < n THEN
        pos := start;
        len := n - start;
        RETURN NEXT;
    END IF;
END
$fn$;

-- what kind of statement a text or an event trigger's tag is: its first word and the
-- object word after any modifiers ('CREATE UNIQUE INDEX' and tag 'CREATE INDEX' give
-- 'CREATE INDEX'; 'CREATE TABLE AS' gives 'CREATE TABLE'); '' when it has no word
CREATE OR REPLACE FUNCTION @S@.ggs_ddl_key(t text) RETURNS text
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog AS $fn$
DECLARE
    words text[];
    first text;
    w text;
BEGIN
    t := regexp_replace(t, '^(\s+|--[^\n]*(\n|$)|/\*([^*]|\*+[^*/])*\*+/|\()+', '');
    words := regexp_split_to_array(upper(substring(t FROM '^[A-Za-z_ \t\r\n]*')), '\s+');
    first := words[1];
    IF first IS NULL OR first = '' THEN
        RETURN '';
    END IF;
    IF first IN ('COMMENT', 'GRANT', 'REVOKE', 'SELECT') THEN
        RETURN first;
    END IF;
    FOREACH w IN ARRAY words[2:] LOOP
        IF w NOT IN ('OR', 'REPLACE', 'GLOBAL', 'LOCAL', 'TEMP', 'TEMPORARY', 'UNLOGGED',
                     'UNIQUE', 'RECURSIVE', 'TRUSTED', 'PROCEDURAL', 'CONSTRAINT', '') THEN
            RETURN first || ' ' || w;
        END IF;
    END LOOP;
    RETURN first;
END
$fn$;

-- the statement of the query string that ran this DDL: the first statement of the same
-- kind not taken by an earlier DDL of this execution that names one of p_names; NULL when
-- there is none (the DDL ran inside a DO block or a function)
CREATE OR REPLACE FUNCTION @S@.ggs_ddl_statement(p_query text, p_tag text, p_names text[])
RETURNS text LANGUAGE plpgsql SET search_path = pg_catalog AS $fn$
DECLARE
    v_id text := statement_timestamp()::text || '|' || md5(coalesce(p_query, ''));
    v_state text := coalesce(current_setting('trailgate.ddl_statements', true), '');
    v_lines text[];
    v_key text := @S@.ggs_ddl_key(p_tag);
    v_b bytea := convert_to(coalesce(p_query, ''), 'UTF8');
    v_parts text[];
    v_text text;
    v_lower text;
    v_name text;
    v_found integer;
    i integer;
    r record;
BEGIN
    IF split_part(v_state, chr(10), 1) = v_id THEN
        v_lines := (string_to_array(v_state, chr(10)))[2:];
    ELSE
        v_lines := ARRAY[]::text[];
        FOR r IN SELECT s.pos, s.len FROM @S@.ggs_ddl_split(p_query) s LOOP
            v_text := convert_from(substring(v_b FROM r.pos + 1 FOR r.len), 'UTF8');
            v_lines := v_lines || (r.pos || ',' || r.len || ',' || @S@.ggs_ddl_key(v_text)
                                   || ',0');
        END LOOP;
    END IF;
    v_found := NULL;
    FOR i IN 1 .. coalesce(array_length(v_lines, 1), 0) LOOP
        v_parts := string_to_array(v_lines[i], ',');
        CONTINUE WHEN v_parts[4] = '1' OR v_parts[3] <> v_key;
        v_text := convert_from(substring(v_b FROM v_parts[1]::integer + 1
                                         FOR v_parts[2]::integer), 'UTF8');
        v_lower := lower(v_text);
        FOREACH v_name IN ARRAY p_names LOOP
            IF v_name <> '' AND position(lower(v_name) IN v_lower) > 0 THEN
                v_found := i;
                EXIT;
            END IF;
        END LOOP;
        EXIT WHEN v_found IS NOT NULL;
    END LOOP;
    IF v_found IS NOT NULL THEN
        v_lines[v_found] := regexp_replace(v_lines[v_found], ',0$', ',1');
    END IF;
    PERFORM set_config('trailgate.ddl_statements',
                       v_id || chr(10) || array_to_string(v_lines, chr(10)), false);
    IF v_found IS NULL THEN
        RETURN NULL;
    END IF;
    RETURN btrim(v_text, ' ' || chr(9) || chr(10) || chr(13));
END
$fn$;

-- the definition of relation p_oid as GGS_DDL_HIST metadata text (seed 004's keys)
CREATE OR REPLACE FUNCTION @S@.ggs_ddl_metadata(p_oid oid, p_seq bigint, p_optype text,
                                                 p_master_owner text, p_master_name text)
RETURNS text LANGUAGE plpgsql STABLE SET search_path = pg_catalog AS $fn$
DECLARE
    c record;
    v_rel record;
    v_out text;
    v_key text[];
    v_kind text;
    v_cols text := '';
    v_n integer := 0;
    v_code integer;
    v_base text;
BEGIN
    SELECT cl.relname, ns.nspname, cl.relkind, cl.relfilenode, cl.relreplident,
           (SELECT current_setting('block_size')) AS bs
      INTO v_rel FROM pg_class cl JOIN pg_namespace ns ON ns.oid = cl.relnamespace
     WHERE cl.oid = p_oid;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    IF v_rel.relreplident = 'd' THEN
        SELECT array_agg(a.attname::text ORDER BY k.ord) INTO v_key
          FROM pg_index ix, unnest(ix.indkey::int2[]) WITH ORDINALITY AS k(attnum, ord),
               pg_attribute a
         WHERE ix.indrelid = p_oid AND ix.indisprimary AND a.attrelid = p_oid
           AND a.attnum = k.attnum;
        v_kind := CASE WHEN v_key IS NULL THEN 'NONE' ELSE 'PRIMARY' END;
    ELSIF v_rel.relreplident = 'i' THEN
        SELECT array_agg(a.attname::text ORDER BY k.ord) INTO v_key
          FROM pg_index ix, unnest(ix.indkey::int2[]) WITH ORDINALITY AS k(attnum, ord),
               pg_attribute a
         WHERE ix.indrelid = p_oid AND ix.indisreplident AND a.attrelid = p_oid
           AND a.attnum = k.attnum;
        v_kind := 'UNIQUE';
    ELSIF v_rel.relreplident = 'f' THEN
        SELECT array_agg(attname::text ORDER BY attnum) INTO v_key FROM pg_attribute
         WHERE attrelid = p_oid AND attnum > 0 AND NOT attisdropped AND attgenerated = '';
        v_kind := 'ALL';
    ELSE
        v_kind := 'NONE';
    END IF;
    FOR c IN
        SELECT a.attname::text AS name, a.attnotnull, a.atttypmod,
               CASE WHEN t.typtype = 'd'
                    THEN format_type(t.typbasetype, CASE WHEN a.atttypmod >= 0 THEN a.atttypmod
                                                         ELSE t.typtypmod END)
                    ELSE format_type(a.atttypid, a.atttypmod) END AS ftype,
               CASE WHEN t.typtype = 'd' THEN t.typbasetype ELSE a.atttypid END AS base
          FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
         WHERE a.attrelid = p_oid AND a.attnum > 0 AND NOT a.attisdropped
           AND a.attgenerated = ''
         ORDER BY a.attnum
    LOOP
        v_n := v_n + 1;
        v_base := format_type(c.base, NULL);
        v_code := CASE
            WHEN c.ftype LIKE '%[]' THEN 1
            WHEN v_base IN ('smallint', 'integer', 'bigint', 'numeric', 'real',
                            'double precision', 'oid', 'boolean') THEN 2
            WHEN v_base IN ('character', 'bpchar') THEN 96
            WHEN v_base = 'date' THEN 12
            WHEN v_base LIKE 'timestamp%' THEN 180
            WHEN v_base = 'bytea' THEN 23
            ELSE 1 END;
        v_cols := v_cols
            || ',A2(''' || v_n || ''')=' || @S@.ggs_q(c.name)
            || ',A3(''' || v_n || ''')=''' || v_n || ''''
            || ',A4(''' || v_n || ''')=''' || v_n || ''''
            || ',A5(''' || v_n || ''')=''' || v_code || ''''
            || ',D(''' || v_n || ''')=' || @S@.ggs_q(c.ftype)
            || ',A6(''' || v_n || ''')=''' || CASE WHEN v_base IN ('character varying',
                   'character', 'bpchar') AND c.atttypmod > 4 THEN (c.atttypmod - 4)::text
                   ELSE '' END || ''''
            || ',A7(''' || v_n || ''')=''' || CASE WHEN c.attnotnull THEN '0' ELSE '1' END
            || ''''
            || ',A8(''' || v_n || ''')=''' || CASE WHEN v_base = 'numeric' AND c.atttypmod > 4
                   THEN (((c.atttypmod - 4) >> 16) & 65535)::text ELSE '' END || ''''
            || ',A9(''' || v_n || ''')=''' || CASE WHEN v_base = 'numeric' AND c.atttypmod > 4
                   THEN ((c.atttypmod - 4) & 65535)::text ELSE '' END || '''';
    END LOOP;
    v_out := ',C6=' || @S@.ggs_q(@SNAME@ || '.GGS_MARKER')
        || ',C5=''' || p_seq || ''''
        || ',C2=''' || (pg_current_wal_lsn() - '0/0'::pg_lsn)::bigint || ''''
        || ',S=''' || p_oid::bigint || ''''
        || ',W=' || @S@.ggs_q(v_rel.nspname)
        || ',X=' || @S@.ggs_q(v_rel.relname)
        || ',Y=' || @S@.ggs_q(CASE v_rel.relkind WHEN 'r' THEN 'TABLE' WHEN 'p' THEN 'TABLE'
                                 WHEN 'i' THEN 'INDEX' WHEN 'I' THEN 'INDEX'
                                 WHEN 'S' THEN 'SEQUENCE' WHEN 'v' THEN 'VIEW'
                                 WHEN 'm' THEN 'MATERIALIZED VIEW'
                                 WHEN 'f' THEN 'FOREIGN TABLE' ELSE 'OTHER' END)
        || ',Z=' || @S@.ggs_q(p_optype)
        || ',A1=' || @S@.ggs_q(session_user::text)
        || ',C3=' || @S@.ggs_q(p_master_owner)
        || ',C4=' || @S@.ggs_q(p_master_name)
        || ',R=''' || v_rel.bs || ''''
        || ',I=''' || v_rel.relfilenode || ''''
        || ',K=''' || v_n || ''''
        || ',N=''VALID'''
        || ',P=''' || CASE WHEN v_rel.relkind = 'p' THEN 'YES' ELSE 'NO' END || ''''
        || ',H=''' || v_n || ''''
        || ',T=' || @S@.ggs_q(array_to_string(v_key, ','))
        || ',V=' || @S@.ggs_q(v_kind)
        || v_cols;
    RETURN v_out;
END
$fn$;

-- write the marker (and history) of one DDL; never raises: a failure becomes a marker
-- row of subtype DDLERROR, and if even that fails a WARNING
CREATE OR REPLACE FUNCTION @S@.ggs_ddl_capture(p_event text, p_tag text, p_query text,
                                                p_settings text[])
RETURNS void LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET standard_conforming_strings = on AS $fn$
DECLARE
    v_names text[] := ARRAY['search_path', 'DateStyle', 'IntervalStyle', 'TimeZone',
                            'standard_conforming_strings', 'default_tablespace',
                            'default_table_access_method'];
    v_classid oid;
    v_objid oid;
    v_type text;
    v_schema text;
    v_ident text;
    v_name text;
    v_owner text := '';
    v_objtype text;
    v_optype text := split_part(p_tag, ' ', 1);
    v_master_owner text := '';
    v_master_name text := '';
    v_unique text := '';
    v_seq bigint;
    v_stmt text;
    v_error text := '';
    v_rows text := '';
    v_env text;
    v_meta text;
    v_optime char(19) := to_char(clock_timestamp(), 'YYYY-MM-DD:HH24:MI:SS');
    v_frag integer;
    v_piece text;
    v_pub text := @PUB@;
    i integer;
BEGIN
    IF coalesce(current_setting('trailgate.internal_ddl', true), '') = 'on' THEN
        RETURN;  -- trailgate's own DDL (ADD TRANDATA, SCHEMATRANDATA)
    END IF;
    IF p_tag ~ '^(CREATE|ALTER|DROP) (PUBLICATION|SUBSCRIPTION|EVENT TRIGGER)' THEN
        RETURN;
    END IF;
    IF p_event = 'ddl_command_end' THEN
        IF p_tag LIKE 'DROP %' THEN
            RETURN;  -- told at sql_drop, while the objects are known
        END IF;
        SELECT c.classid, c.objid, c.object_type, c.schema_name, c.object_identity
          INTO v_classid, v_objid, v_type, v_schema, v_ident
          FROM pg_event_trigger_ddl_commands() c
         WHERE NOT c.in_extension AND c.command_tag = p_tag
         ORDER BY CASE c.object_type WHEN 'table' THEN 0 WHEN 'table column' THEN 0
                  WHEN 'view' THEN 1 WHEN 'materialized view' THEN 1
                  WHEN 'foreign table' THEN 1 WHEN 'index' THEN 2 WHEN 'sequence' THEN 3
                  ELSE 4 END
         LIMIT 1;
    ELSE
        IF p_tag NOT LIKE 'DROP %' THEN
            RETURN;  -- ALTER … DROP COLUMN and the like: told at ddl_command_end
        END IF;
        SELECT d.classid, d.objid, d.object_type, d.schema_name, d.object_identity,
               d.object_name
          INTO v_classid, v_objid, v_type, v_schema, v_ident, v_name
          FROM pg_event_trigger_dropped_objects() d
         WHERE d.original
         ORDER BY CASE d.object_type WHEN 'table' THEN 0 WHEN 'view' THEN 1
                  WHEN 'materialized view' THEN 1 WHEN 'foreign table' THEN 1
                  WHEN 'index' THEN 2 WHEN 'sequence' THEN 3 ELSE 4 END
         LIMIT 1;
    END IF;
    IF v_type IS NULL THEN
        RETURN;
    END IF;
    IF v_classid = 'pg_class'::regclass AND p_event = 'ddl_command_end' THEN
        SELECT cl.relname INTO v_name FROM pg_class cl WHERE cl.oid = v_objid;
    END IF;
    v_name := coalesce(v_name, regexp_replace(v_ident, '^.*[.]', ''));
    v_owner := coalesce(v_schema, '');
    v_stmt := @S@.ggs_ddl_statement(p_query, p_tag, ARRAY[v_name, v_ident]);
    IF v_owner = @SNAME@ OR v_owner IN ('trailgate', 'pg_catalog', 'information_schema')
       OR v_owner LIKE 'pg_temp%' OR v_owner LIKE 'pg_toast%' THEN
        RETURN;
    END IF;
    v_objtype := upper(CASE v_type WHEN 'table column' THEN 'table'
                                   WHEN 'table constraint' THEN 'table' ELSE v_type END);
    BEGIN
        v_seq := nextval(@SNAME@ || '.ggs_marker_seq');
        IF v_type = 'index' THEN
            IF p_event = 'ddl_command_end' THEN
                SELECT tn.nspname, tc.relname,
                       CASE WHEN ix.indisunique THEN 'UNIQUE' ELSE 'NONUNIQUE' END
                  INTO v_master_owner, v_master_name, v_unique
                  FROM pg_index ix JOIN pg_class tc ON tc.oid = ix.indrelid
                  JOIN pg_namespace tn ON tn.oid = tc.relnamespace
                 WHERE ix.indexrelid = v_objid;
            ELSE  -- dropped: its table as the history last described it
                EXECUTE format('SELECT substring(metadata_text FROM %L), '
                               || 'substring(metadata_text FROM %L) FROM %s.ggs_ddl_hist '
                               || 'WHERE objectid = $1 AND metadata_text LIKE '',C6=%%'' '
                               || 'ORDER BY seqno DESC LIMIT 1',
                               ',C3=''((?:[^'']|'''')*)''', ',C4=''((?:[^'']|'''')*)''',
                               quote_ident(@SNAME@))
                   INTO v_master_owner, v_master_name USING v_objid::bigint;
                v_master_owner := replace(coalesce(v_master_owner, ''), '''''', '''');
                v_master_name := replace(coalesce(v_master_name, ''), '''''', '''');
            END IF;
        END IF;
        IF v_stmt IS NULL AND v_master_name <> '' THEN
            v_stmt := @S@.ggs_ddl_statement(p_query, p_tag, ARRAY[v_master_name]);
        END IF;
        IF v_stmt IS NULL THEN
            v_error := 'the statement cannot be isolated from the query that ran it (a DO '
                       || 'block, a function or a procedure): C1 holds that whole query';
            v_stmt := coalesce(p_query, '');
        END IF;
        IF p_tag IN ('CREATE TABLE AS', 'SELECT INTO') AND EXISTS (
                SELECT 1 FROM pg_publication_namespace pn
                  JOIN pg_publication p ON p.oid = pn.pnpubid
                  JOIN pg_class cl ON cl.relnamespace = pn.pnnspid
                 WHERE p.pubname = v_pub AND cl.oid = v_objid) THEN
            v_rows := 'YES';  -- its rows were published: they travel as inserts
        END IF;
        IF p_event = 'ddl_command_end' AND v_classid = 'pg_class'::regclass
           AND p_tag IN ('CREATE TABLE', 'CREATE TABLE AS', 'SELECT INTO', 'ALTER TABLE')
           AND to_regclass('trailgate.prepared_schemas') IS NOT NULL THEN
            -- SCHEMATRANDATA's own trigger fires after this one: give a new table its
            -- logging now, so that the history below has the key the log will carry; a
            -- table it logs gets its key chosen again after ALTER TABLE (a primary key
            -- added: the log carries it, not every column), as DDLOPTIONS ADDTRANDATA does
            PERFORM 1 FROM trailgate.prepared_schemas WHERE schema_name = v_owner
               AND (p_tag <> 'ALTER TABLE' OR EXISTS (
                        SELECT 1 FROM trailgate.log_groups g WHERE g.table_oid = v_objid
                           AND g.generated = 'SCHEMATRANDATA'));
            IF FOUND THEN
                PERFORM trailgate.add_trandata(v_objid::regclass, NULL, false,
                                               'SCHEMATRANDATA',
                                               (SELECT publication FROM trailgate.prepared_schemas
                                                 WHERE schema_name = v_owner));
            END IF;
        END IF;
        IF v_classid = 'pg_class'::regclass THEN  -- the new definition (or, dropped, who)
            v_meta := CASE WHEN p_event = 'ddl_command_end'
                           THEN @S@.ggs_ddl_metadata(v_objid, v_seq, v_optype,
                                                     v_master_owner, v_master_name) END;
            IF v_meta IS NULL THEN
                v_meta := ',C6=' || @S@.ggs_q(@SNAME@ || '.GGS_MARKER')
                    || ',C5=''' || v_seq || ''',S=''' || v_objid::bigint || ''''
                    || ',W=' || @S@.ggs_q(v_owner) || ',X=' || @S@.ggs_q(v_name)
                    || ',Y=' || @S@.ggs_q(v_objtype) || ',Z=' || @S@.ggs_q(v_optype)
                    || ',C3=' || @S@.ggs_q(v_master_owner)
                    || ',C4=' || @S@.ggs_q(v_master_name) || ',H=''0''';
            END IF;
            v_frag := 0;
            FOR v_piece IN SELECT @S@.ggs_ddl_pieces(',G1=' || @S@.ggs_q(v_stmt))
                           UNION ALL SELECT @S@.ggs_ddl_pieces(v_meta) LOOP
                v_frag := v_frag + 1;
                EXECUTE format('INSERT INTO %s.ggs_ddl_hist (seqno, objectid, dataobjectid, '
                               || 'ddltype, objectname, objectowner, objecttype, fragmentno, '
                               || 'optime, startscn, metadata_text) VALUES '
                               || '($1, $2, $2, $3, $4, $5, $6, $7, $8, $9, $10)',
                               quote_ident(@SNAME@))
                    USING v_seq, v_objid::bigint, v_optype, v_name, v_owner, v_objtype,
                          v_frag, v_optime,
                          (pg_current_wal_lsn() - '0/0'::pg_lsn)::bigint, v_piece;
            END LOOP;
        END IF;
        v_env := ',C5=''' || v_seq || ''''
            || ',B2=''' || coalesce(v_objid::bigint::text, '') || ''''
            || ',G4='''''
            || ',B3=' || @S@.ggs_q(v_owner) || ',B4=' || @S@.ggs_q(v_name)
            || ',C12=' || @S@.ggs_q(v_master_owner) || ',C13=' || @S@.ggs_q(v_master_name)
            || ',B5=' || @S@.ggs_q(v_objtype) || ',B6=' || @S@.ggs_q(v_optype)
            || ',B7=''' || CASE WHEN v_classid = 'pg_class'::regclass THEN v_seq::text
                              ELSE '' END || ''''
            || ',B8=' || @S@.ggs_q(@SNAME@ || '.GGS_DDL_HIST')
            || ',B9=' || @S@.ggs_q(session_user::text)
            || ',C7=' || @S@.ggs_q(current_setting('server_version'))
            || ',C8=' || @S@.ggs_q(current_setting('server_version_num'))
            || ',C9=''VALID'',C10=''1'''
            || ',C11=' || @S@.ggs_q(coalesce(nullif(current_setting('cluster_name'), ''),
                                             current_database()))
            || ',G3=' || @S@.ggs_q(v_unique) || ',C14=''NO'',C20=''NO''';
        IF v_error <> '' THEN
            v_env := v_env || ',E1=' || @S@.ggs_q(v_error);
        END IF;
        IF v_rows <> '' THEN
            v_env := v_env || ',E2=' || @S@.ggs_q(v_rows);
        END IF;
        IF v_classid = 'pg_class'::regclass AND p_event = 'ddl_command_end' THEN
            -- what existing rows hold in columns added with a default (a target that
            -- cannot run the DDL, a Delta table, fills them with it)
            v_env := v_env || coalesce((
                SELECT string_agg(',E3(' || @S@.ggs_q(a.attname::text) || ')='
                                  || @S@.ggs_q(a.attmissingval::text), '' ORDER BY a.attnum)
                  FROM pg_attribute a
                 WHERE a.attrelid = v_objid AND a.atthasmissing AND NOT a.attisdropped), '');
        END IF;
        FOR i IN 1 .. array_length(v_names, 1) LOOP
            v_env := v_env || ',C17(''' || i || ''')=' || @S@.ggs_q(v_names[i])
                || ',C18(''' || i || ''')=' || @S@.ggs_q(p_settings[i]);
        END LOOP;
        v_env := v_env || ',C19=''' || array_length(v_names, 1) || '''';
        v_frag := 0;
        FOR v_piece IN SELECT @S@.ggs_ddl_pieces(',C1=' || @S@.ggs_q(v_stmt))
                       UNION ALL SELECT @S@.ggs_ddl_pieces(v_env) LOOP
            v_frag := v_frag + 1;
            EXECUTE format('INSERT INTO %s.ggs_marker (seqno, fragmentno, optime, type, '
                           || 'subtype, marker_text) VALUES ($1, $2, $3, ''DDL'', $4, $5)',
                           quote_ident(@SNAME@))
                USING v_seq, v_frag, v_optime,
                      CASE WHEN v_error = '' THEN 'DDLINFO' ELSE 'DDLERROR' END, v_piece;
        END LOOP;
    EXCEPTION WHEN OTHERS THEN
        v_error := SQLERRM;
        BEGIN
            v_seq := coalesce(v_seq, nextval(@SNAME@ || '.ggs_marker_seq'));
            v_frag := 0;
            FOR v_piece IN SELECT @S@.ggs_ddl_pieces(',C1=' || @S@.ggs_q(coalesce(p_query, '')))
                           UNION ALL SELECT @S@.ggs_ddl_pieces(
                               ',C5=''' || v_seq || ''',B3=' || @S@.ggs_q(v_owner)
                               || ',B4=' || @S@.ggs_q(coalesce(v_name, ''))
                               || ',B5=' || @S@.ggs_q(coalesce(v_objtype, ''))
                               || ',B6=' || @S@.ggs_q(v_optype)
                               || ',B9=' || @S@.ggs_q(session_user::text)
                               || ',E1=' || @S@.ggs_q('the DDL trigger failed: ' || v_error))
            LOOP
                v_frag := v_frag + 1;
                EXECUTE format('INSERT INTO %s.ggs_marker (seqno, fragmentno, optime, type, '
                               || 'subtype, marker_text) VALUES ($1, $2, $3, ''DDL'', '
                               || '''DDLERROR'', $4)', quote_ident(@SNAME@))
                    USING v_seq, v_frag, v_optime, v_piece;
            END LOOP;
            RAISE WARNING 'trailgate DDL capture: % (DDL sequence % is marked DDLERROR)',
                v_error, v_seq;
        EXCEPTION WHEN OTHERS THEN
            RAISE WARNING 'trailgate DDL capture failed, this DDL is not captured: % (then %)',
                v_error, SQLERRM;
        END;
    END;
END
$fn$;

-- text in pieces of at most 4000 characters (the VARCHAR(4000) columns)
CREATE OR REPLACE FUNCTION @S@.ggs_ddl_pieces(t text) RETURNS SETOF text
LANGUAGE sql IMMUTABLE SET search_path = pg_catalog AS $fn$
    SELECT substr(t, (g - 1) * 4000 + 1, 4000)
      FROM generate_series(1, greatest(1, (length(t) + 3999) / 4000)) AS g ORDER BY g
$fn$;

-- the guard runs first (event triggers fire in name order) as the role that ran the DDL:
-- trailgate.internal_ddl marks trailgate's own DDL, run by a superuser (the one that
-- installed DDL support, or trailgate's SECURITY DEFINER functions); any other role that
-- sets it is captured all the same (its own search_path: a user's operators cannot
-- answer its test)
CREATE OR REPLACE FUNCTION @S@.ggs_ddl_guard() RETURNS event_trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
    IF coalesce(pg_catalog.current_setting('trailgate.internal_ddl', true), '') = 'on'
       AND NOT coalesce((SELECT r.rolsuper FROM pg_catalog.pg_roles r
                          WHERE r.rolname = current_user), false) THEN
        PERFORM pg_catalog.set_config('trailgate.internal_ddl', '', true);
    END IF;
EXCEPTION WHEN OTHERS THEN
    PERFORM pg_catalog.set_config('trailgate.internal_ddl', '', true);
END
$fn$;

-- the capture triggers' function: SECURITY DEFINER, so that only it (not every user) may
-- call ggs_ddl_capture, and without a SET search_path, so that it reads the DDL session's
-- own settings: its body therefore uses no operator and only qualified names (nothing a
-- user's search_path could put in its place); nothing here may fail the user's DDL
CREATE OR REPLACE FUNCTION @S@.ggs_ddl_trigger() RETURNS event_trigger
LANGUAGE plpgsql SECURITY DEFINER AS $fn$
BEGIN
    PERFORM @S@.ggs_ddl_capture(tg_event, tg_tag, pg_catalog.current_query(), ARRAY[
        pg_catalog.current_setting('search_path'), pg_catalog.current_setting('DateStyle'),
        pg_catalog.current_setting('IntervalStyle'), pg_catalog.current_setting('TimeZone'),
        pg_catalog.current_setting('standard_conforming_strings'),
        pg_catalog.current_setting('default_tablespace'),
        pg_catalog.current_setting('default_table_access_method')]);
EXCEPTION WHEN OTHERS THEN
    RAISE WARNING 'trailgate DDL capture failed, this DDL is not captured: %', SQLERRM;
END
$fn$;
"""
