"""Fuzzed text inputs: parameter files (a group's, GLOBALS, the Manager's; with INCLUDE and
OBEY), GGSCI command lines and obey files, Logdump command lines, JSON Lines for ``trail
import``, Oracle redo logfile dumps.  Each starts from real ones (docs/ examples, the test
fixtures, a real export) and is damaged at line and token starts, or replaced by random
text; it goes through its entry points in a worker process (fuzz_worker.py) and must give a
result or trailgate's own error naming where (file and line), never another exception, a
crash or a hang.  The quick cases run in the default suite; ``./dev test-heavy -k fuzz``
runs hundreds of examples each."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fuzz_support import (
    FIXTURES,
    HEAVY,
    QUICK,
    REPO,
    apply_edits,
    doc_blocks,
    edits,
    fuzz_settings,
    jsonl_base,
    line_anchors,
    same_on_both_paths,
    trail_base,
    worker,
)
from hypothesis import given
from hypothesis import strategies as st

PROFILES = [pytest.param(QUICK, id="quick"),
            pytest.param(HEAVY, id="heavy", marks=pytest.mark.heavy)]


def _texts(bases: list[bytes], extra: list[bytes]) -> st.SearchStrategy[bytes]:
    """A base damaged at its line and token starts, several bases joined, or random text."""
    damaged = st.tuples(st.sampled_from(bases), edits(8, extra)).map(
        lambda b: apply_edits(b[0], line_anchors(b[0]), b[1]))
    joined = st.lists(st.sampled_from(bases), min_size=2, max_size=3).map(b"\n".join)
    words = st.lists(st.sampled_from([*extra, b" ", b",", b"\n", b"(", b")", b"x", b"1"]),
                     max_size=40).map(b" ".join)
    return st.one_of(damaged, damaged, damaged, joined, words,
                     st.text(max_size=300).map(lambda t: t.encode("utf-8", "surrogatepass")),
                     st.binary(max_size=300))


# -- parameter files -------------------------------------------------------------------------

def _param_bases() -> list[bytes]:
    groups = doc_blocks(r"(EXTRACT|REPLICAT)\s")
    replicat = "REPLICAT rep1\nTARGETDB LIBFILE x\n"
    pieces = [replicat + b for b in doc_blocks(r"(MAP|COLMAP|REPERROR|BATCHSQL|DDL)\b")]
    pieces += ["EXTRACT ext1\nSOURCEDB app\nEXTTRAIL ./dirdat/aa\n" + b
               for b in doc_blocks(r"(TABLE|TRANLOGOPTIONS|TOKENS)\b")]
    others = doc_blocks(r"(PORT|AUTOSTART|PURGEOLD|GGSCHEMA|CHECKPOINTTABLE)")
    return [b.encode() for b in groups + pieces + others]


def _param_words() -> list[bytes]:
    from trailgate.params import KNOWN_PARAMETERS

    words = [w.encode() for w in sorted(KNOWN_PARAMETERS)]
    return [*words, b"INCLUDE dirprm/inc.prm", b"OBEY ./grp.prm", b"INCLUDE " + b"n" * 5000,
            b"OBEY /nonexistent/x.prm", b"INCLUDE dirprm", b"COLMAP (USEDEFAULTS, a = b)",
            b"FILTER (x > 1)", b"WHERE (a = 'b')", b"TOKENS (T = @GETENV ('GGHEADER'))",
            b"TARGET", b"KEYCOLS (a)", b"EXCEPT", b"SQLEXEC", b"@COLSTAT (NULL)"]


def test_parameter_file_bases_are_found() -> None:
    assert len(_param_bases()) >= 8  # docs/ still hold the example parameter files


@pytest.mark.parametrize("profile", PROFILES)
def test_fuzz_parameter_files(profile: dict) -> None:
    bases = _param_bases()
    words = _param_words()

    @fuzz_settings(profile)
    @given(_texts(bases, words), st.sampled_from(bases))
    def check(text: bytes, include: bytes) -> None:
        worker().check("params", {"data": text, "extra": {"inc.prm": include}})

    check()


# -- GGSCI -----------------------------------------------------------------------------------

def _ggsci_lines() -> list[bytes]:
    import re

    lines: set[str] = set()
    for md in [*(REPO / "docs").glob("*.md"), REPO / "README.md"]:
        for m in re.finditer(r"^GGSCI[^>\n]*> (.+)$", md.read_text("utf-8"), re.M):
            lines.add(m.group(1))
    return [line.encode() for line in sorted(lines)]


#: verbs a fuzzed obey file may run: they touch nothing outside the home (no database, no
#: process started, no editor)
_RUNNABLE = ("ADD EXTRACT", "ADD REPLICAT", "ADD EXTTRAIL", "ADD RMTTRAIL", "DELETE EXTRACT",
             "DELETE REPLICAT", "DELETE EXTTRAIL", "DELETE RMTTRAIL", "INFO", "STATUS",
             "ALTER EXTRACT", "ALTER REPLICAT", "VIEW", "HELP", "HISTORY", "OBEY", "EXIT")


def _runnable(text: bytes) -> bool:
    for raw in text.decode("utf-8", "replace").splitlines():
        line = raw.strip().upper()
        if line and not line.startswith(("--", "#")) and not line.startswith(_RUNNABLE):
            return False
    return True


@pytest.mark.parametrize("profile", PROFILES)
def test_fuzz_ggsci_commands(profile: dict) -> None:
    lines = _ggsci_lines()
    words = [b"ADD", b"INFO", b"DELETE", b"ALTER", b"EXTRACT", b"REPLICAT", b"EXTTRAIL",
             b"RMTTRAIL", b"BEGIN", b"NOW", b"EXTSEQNO", b"EXTRBA", b"MEGABYTES", b"SHOWCH",
             b"DETAIL", b"!", b"!-1", b"*", b"TRANLOG", b"EXTTRAILSOURCE", b"2026-11-27 10:00",
             b"VIEW PARAMS", b"VIEW REPORT", b"OBEY setup.oby", b"THREADS", b"DESC"]
    runnable = [b for b in lines if _runnable(b)]
    assert len(runnable) >= 10

    @fuzz_settings(profile)
    @given(st.one_of(_texts(runnable, words).filter(_runnable),
                     st.lists(st.sampled_from(runnable), max_size=6).map(b"\n".join)),
           _texts(lines, words))
    def check(script: bytes, any_lines: bytes) -> None:
        worker().check("ggsci", {"text": script + b"\n" + any_lines, "run": False})
        worker().check("ggsci", {"text": script, "run": True})

    check()


# -- Logdump ---------------------------------------------------------------------------------

@pytest.mark.parametrize("profile", PROFILES)
def test_fuzz_logdump_commands(profile: dict) -> None:
    from fuzz_worker import LOGDUMP_SCRIPT

    from trailgate.logdump.commands import COMMANDS

    names = sorted({c.name for c in COMMANDS} | {a for c in COMMANDS for a in c.aliases})
    bases = [line.encode() for line in LOGDUMP_SCRIPT] + [n.encode() for n in names]
    words = [*(n.encode() for n in names), b"ON", b"OFF", b"DETAIL", b"DATA", b"LAST",
             b"FIRST", b"INCLUDE", b"EXCLUDE", b"RECTYPE", b"FILENAME", b"AND", b"OR",
             b"NOT", b"STRING", b"HEX", b"IOTYPE", b"TRANSIND", b"RBA", b">", b"<", b"=",
             b"NEXT", b"TDR", b"DDR", b"GMT+25", b"2026-11-27", b"25:61:61", b"\"x",
             b"dirdat/aa000000000", b"dirdat/aa999999999", b"/dev/zero", b"saved.dat",
             b"18446744073709551616", b"-5", b"RECORDS"]

    @fuzz_settings(profile)
    @given(st.sampled_from([(None, None, False), ("21.1", "little", False)]),
           st.lists(_texts(bases, words), min_size=1, max_size=8))
    def check(fmt: tuple, lines: list[bytes]) -> None:
        worker().check("logdump", {"trail": trail_base(*fmt).files[0], "lines": lines})

    check()


# -- JSON Lines ------------------------------------------------------------------------------

_json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats()
    | st.text(max_size=12) | st.sampled_from(["change", "metadata", "file", "insert", "delete",
                                               "only", "first", "last", "middle", "NUMBER",
                                               "zz", "US03.STUDENT", "0:0", "ff"]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=4), max_leaves=8)


def _json_edit(lines: list[dict], picks: list[tuple[int, list[int], object, bool]]) -> bytes:
    """Each (line, path of key choices, value, delete) edit: walk ``path`` into the line's
    object, then set or delete the key reached; the lines as JSON again."""
    objs = json.loads(json.dumps(lines))
    for line, path, value, delete in picks:
        node = objs[line % len(objs)]
        for step in path:
            if isinstance(node, dict) and node:
                key = sorted(node)[step % len(node)]
                if isinstance(node[key], dict | list) and step % 3:
                    node = node[key]
                    continue
                if delete:
                    del node[key]
                else:
                    node[key] = value
                break
            if isinstance(node, list) and node:
                index = step % len(node)
                if isinstance(node[index], dict | list) and step % 3:
                    node = node[index]
                    continue
                node[index] = value
                break
    return "".join(json.dumps(o) + "\n" for o in objs).encode()


@pytest.mark.parametrize("profile", PROFILES)
def test_fuzz_json_lines_import(profile: dict) -> None:
    """Imported on the C and the pure-Python codec, with the same result on both."""
    base = jsonl_base()
    objs = [json.loads(line) for line in base.splitlines()]
    structural = st.lists(st.tuples(st.integers(0, 1000), st.lists(st.integers(0, 50),
                                                                    min_size=1, max_size=4),
                                    _json_values, st.booleans()), min_size=1, max_size=5)
    words = [b'"record": "change"', b'"io_type": 99', b'"columns": null', b'"hex": "zz"',
             b'"index": -1', b"{}", b"[]", b"null", b'{"record": "file"}']

    @fuzz_settings(profile)
    @given(st.one_of(structural.map(lambda p: _json_edit(objs, p)),
                     _texts([base], words)))
    def check(data: bytes) -> None:
        same_on_both_paths("jsonl", {"data": data})

    check()


# -- Oracle redo logfile dumps -----------------------------------------------------------------

@pytest.mark.parametrize("profile", PROFILES)
def test_fuzz_oracle_dumps(profile: dict) -> None:
    dumps = [p.read_bytes() for p in sorted(FIXTURES.glob("*.dmp"))]
    dictionary = (REPO / "src" / "trailgate" / "capture" / "oracle" / "examples"
                  / "us03_dictionary.json").read_bytes()
    words = [b"REDO RECORD", b"CHANGE #", b"OP:11.2", b"OP:5.1", b"OP:5.2", b"OP:5.4",
             b"OP:11.5", b"OP:11.3", b"OP:11.11", b"col  0:", b"[ 4]", b"[65535]",
             b"c2 02", b"ff ff ff ff", b"SCN:", b"0x0000.00000000", b"RBA:", b"LEN:",
             b"xid:", b"objn:", b"tabn:", b"slot:", b"nrow:", b"ncol:", b"nnew:", b"size:",
             b"bdba:", b"CON_ID:", b"KTB Redo", b"KDO Op code:"]

    @fuzz_settings(profile, scale=0.5)
    @given(_texts(dumps, words))
    def check(data: bytes) -> None:
        worker().check("oracle", {"data": data, "dictionary": dictionary})

    check()


def test_fuzz_bases_are_sound(tmp_path: Path) -> None:
    """The inputs the fuzzers damage are good ones: the base trails, dumps and JSON Lines go
    through their worker targets cleanly, so a failure later is the damage's doing."""
    from fuzz_support import TRAIL_FORMATS

    for fmt in TRAIL_FORMATS[:3]:
        worker().check("trail", {"files": list(trail_base(*fmt).files)})
    worker().check("jsonl", {"data": jsonl_base()})
    del tmp_path


@pytest.mark.parametrize(("how", "expected"), [
    ("escape", "KeyError escaped"), ("unlocated", "TrailFormatError without its place"),
    ("crash", "a signal: a crash"), ("hang", "a hang")])
def test_the_worker_catches_escapes_crashes_and_hangs(how: str, expected: str) -> None:
    """The harness itself: a clean error passes; an escape, an error without its place, a
    segfault and an endless loop each fail the example, and the next example still runs."""
    with pytest.raises(AssertionError, match=expected):
        worker().check("probe", {"do": how}, timeout=3)
    worker().check("probe", {"do": "clean"})


# -- the Manager's REST API ----------------------------------------------------------------------

_ROUTES = ["/api/groups/{}", "/api/groups/{}/stats", "/api/groups/{}/lag",
           "/api/groups/{}/report", "/api/groups/{}/start", "/api/groups/{}/stop",
           "/api/groups", "/api/manager", "/api/lag", "/api/events", "/metrics", "/collector",
           "/", "/console/", "/console/{}", "/openapi.json", "/{}"]


def _requests() -> st.SearchStrategy[list[tuple[str, str, bytes, bytes | None]]]:
    names = st.one_of(st.sampled_from(["pmp1", "PMP1", "PMP*", "*", "", ".", "..", "a" * 300,
                                       "pmp1/../..", "%00", "pmp1\x00", "nogroup"]),
                      st.text(max_size=40))
    auth = st.one_of(st.none(), st.sampled_from([b"Bearer TOKEN", b"Bearer", b"Basic",
                                                 b"Basic ====", b"Basic " + b"QQ==" * 3000,
                                                 b"bearer TOKEN ", b"Digest x"]),
                     st.binary(max_size=80).map(lambda b: b"Basic " + b),
                     st.binary(max_size=80))
    query = st.one_of(st.sampled_from([b"", b"lines=1", b"lines=0", b"lines=-1",
                                       b"lines=100001", b"lines=99999999999999999999999",
                                       b"lines=x", b"lines=1&lines=2", b"lines"]),
                      st.binary(max_size=40))

    def request(method: str, route: str, name: str, q: bytes, a: bytes | None
                ) -> tuple[str, str, bytes, bytes | None]:
        if method == "POST" and "PMP" in name.upper():
            a = b"Bearer wrong"  # never a real START or STOP of the home's pump
        return method, route.format(name), q, a

    return st.lists(st.builds(request, st.sampled_from(["GET", "GET", "POST", "HEAD", "PUT"]),
                              st.sampled_from(_ROUTES), names, query, auth),
                    min_size=1, max_size=6)


@pytest.mark.parametrize("profile", PROFILES)
def test_fuzz_manager_rest_requests(profile: dict) -> None:
    @fuzz_settings(profile)
    @given(_requests())
    def check(requests: list) -> None:
        worker().check("rest", {"requests": requests})

    check()


# -- the group registry --------------------------------------------------------------------------

def _registry_base(tmp_path: Path) -> bytes:
    """dirchk/groups.json as GGSCI writes it for a pump and a Replicat."""
    import contextlib
    import io

    from fuzz_worker import HOME_SETUP

    from trailgate.cli import main

    obey = tmp_path / "setup.oby"
    obey.write_text(HOME_SETUP, "utf-8")
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["--home", str(tmp_path), "ggsci", str(obey)]) == 0
    return (tmp_path / "dirchk" / "groups.json").read_bytes()


@pytest.mark.parametrize("profile", PROFILES)
def test_fuzz_group_registry(profile: dict, tmp_path: Path) -> None:
    """dirchk/groups.json edited by hand or damaged, then GGSCI INFO and VIEW and the
    Manager's status over it."""
    base = _registry_base(tmp_path)
    registry = json.loads(base)
    structural = st.lists(st.tuples(st.integers(0, 1000), st.lists(st.integers(0, 50),
                                                                    min_size=1, max_size=5),
                                    _json_values, st.booleans()), min_size=1, max_size=4)

    @fuzz_settings(profile, scale=0.5)
    @given(st.one_of(structural.map(lambda p: _json_edit([registry], p)),
                     _texts([base], [b"{}", b"[]", b"null", b'"groups"'])))
    def check(data: bytes) -> None:
        worker().check("registry", {"data": data})

    check()
