"""TABLE / TABLEEXCLUDE / COLS / COLSEXCEPT / TOKENS / GETTRUNCATES applied to changes."""

from __future__ import annotations

import pickle

import pytest

from trailgate.errors import ConfigError
from trailgate.extract.tables import TableRules
from trailgate.extract.tokens import GroupEnv, check_tokens
from trailgate.model import Change, Column, ColumnKind, OpType, TableDef, julian_from_unix_micros
from trailgate.params import parse_params_text

ENV = GroupEnv("EXT1", "the test", "host1", "gg", 4242)
ORDERS = TableDef("public", "orders", [
    Column("id", 0, ColumnKind.NUMBER, "integer", nullable=False),
    Column("customer", 1, ColumnKind.VARCHAR2, "text"),
    Column("secret", 2, ColumnKind.VARCHAR2, "text"),
    Column("blob", 3, ColumnKind.RAW, "bytea"),
], key=["id"])
COMMIT = julian_from_unix_micros(1_700_000_000_123_456)  # 2023-11-14 22:13:20.123456 UTC


def _rules(body: str) -> TableRules:
    params = parse_params_text("EXTRACT ext1\nEXTTRAIL ./dirdat/aa\n" + body, "ext1.prm")
    for spec in params.tables:
        check_tokens(spec)
    return TableRules(params.tables, params.table_excludes, ENV)


def _change(op: OpType = OpType.INSERT, table: str = "public.orders") -> Change:
    return Change(op, table, after={0: b"7", 1: b"ann", 2: b"s", 3: b"\x01\x02"},
                  before={0: b"6", 1: b"old", 2: b"s0"} if op is OpType.PK_UPDATE else None,
                  io_time=COMMIT, audit_seq=3, audit_pos=99)


def _apply(rules: TableRules, change: Change, index: int = 0, count: int = 1):
    return rules.apply(change, ORDERS, 1234, "x9", COMMIT, index, count)


def test_exact_table_wins_excludes_win_and_others_are_dropped():
    rules = _rules("TABLE public.*;\nTABLE public.orders, COLS (customer);\n"
                   "TABLEEXCLUDE public.tmp_*\n")
    assert rules.rule("public.orders").spec.cols == ["customer"]
    assert rules.rule("public.items").spec.name == "public.*"
    assert rules.rule("public.tmp_1") is None and rules.rule("other.orders") is None
    assert _apply(rules, _change(table="other.orders")) is None


def test_cols_and_colsexcept_keep_the_key():
    cols = _apply(_rules("TABLE public.orders, COLS (customer);"), _change(OpType.PK_UPDATE))
    assert cols.after == {0: b"7", 1: b"ann"} and cols.before == {0: b"6", 1: b"old"}
    except_ = _apply(_rules("TABLE public.orders, COLSEXCEPT (secret, id);"), _change())
    assert except_.after == {0: b"7", 1: b"ann", 3: b"\x01\x02"}


def test_truncates_only_with_gettruncates():
    assert _apply(_rules("TABLE public.*;"), _change(OpType.TRUNCATE)) is None
    kept = _apply(_rules("GETTRUNCATES\nTABLE public.*;"), _change(OpType.TRUNCATE))
    assert kept is not None and kept.op is OpType.TRUNCATE


def test_tokens():
    rules = _rules("""TABLE public.orders, TOKENS (
        t_commit = @GETENV('GGHEADER', 'COMMITTIMESTAMP'), t_op = @GETENV('GGHEADER', 'OPTYPE'),
        t_table = @GETENV('GGHEADER', 'TABLENAME'), t_obj = @GETENV('GGHEADER', 'OBJECTNAME'),
        t_pos = @GETENV('GGHEADER', 'LOGPOSITION'), t_rba = @GETENV('GGHEADER', 'LOGRBA'),
        t_ind = @GETENV('GGHEADER', 'TRANSACTIONINDICATOR'),
        t_ba = @GETENV('GGHEADER', 'BEFOREAFTERINDICATOR'),
        t_csn = @GETENV('TRANSACTION', 'CSN'), t_xid = @GETENV('TRANSACTION', 'XID'),
        t_group = @GETENV('GGENVIRONMENT', 'GROUPNAME'),
        t_pid = @GETENV('GGENVIRONMENT', 'PROCESSID'),
        t_host = @GETENV('GGENVIRONMENT', 'HOSTNAME'),
        t_cust = customer, t_blob = blob, t_lit = 'fixed', t_none = nosuchcolumn);""")
    tokens = _apply(rules, _change(OpType.PK_UPDATE), index=1, count=3).tokens
    assert tokens == {
        "t_commit": "2023-11-14 22:13:20.123456", "t_op": "PK FIELD COMP",
        "t_table": "public.orders", "t_obj": "orders", "t_pos": "99", "t_rba": "3",
        "t_ind": "MIDDLE", "t_ba": "AFTER", "t_csn": "1234", "t_xid": "x9", "t_group": "EXT1",
        "t_pid": "4242", "t_host": "host1", "t_cust": "ann", "t_blob": "0102",
        "t_lit": "fixed", "t_none": ""}
    assert _apply(rules, _change(OpType.DELETE), 0, 1).tokens["t_ind"] == "WHOLE"
    assert pickle.loads(pickle.dumps(rules)).rule("public.orders").spec.tokens


@pytest.mark.parametrize("expr, message", [
    ("@GETENV('RECORD', 'FILESEQNO')", "not known when an Extract computes tokens"),
    ("@TOKEN('a')", "reads a token in a Replicat"),
])
def test_tokens_an_extract_cannot_compute_are_refused(expr, message):
    with pytest.raises(ConfigError, match=message) as info:
        _rules(f"TABLE public.orders, TOKENS (t = {expr});")
    assert "ext1.prm, line 3" in str(info.value)
