"""The child process the fuzz tests hand their inputs to (``fuzz_support.Worker``).

A fuzzed input may crash the C codec (a segfault ends the process), hang a loop or eat the
memory, so it is tried here, not in pytest's process: the parent sends ``(target,
payload)`` frames on stdin, each target runs the input through every entry point a user or
a peer reaches with it, and the reply is ``("ok", outcomes)`` when each entry point either
worked or raised one of trailgate's own errors naming where (``outcomes``: a line per entry
point, a hash of its result or its error, for comparing the C and pure-Python codecs), and
``("escape", what)`` otherwise.  The parent bounds each example's time and sees a crash as
the pipe closing.  Run with ``TRAILGATE_PURE_PYTHON=1`` for the pure-Python codec.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import io
import os
import pickle
import resource
import struct
import sys
import tempfile
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

_FRAME = struct.Struct("!I")
REPO = Path(__file__).resolve().parents[2]


class Escape(Exception):
    """An entry point ended in something other than a clean, located trailgate error."""


#: what each entry point gave for the current input, one line each (the reply's text): the
#: C and pure-Python workers must give the same
OUTCOMES: list[str] = []


def clean(label: str, fn: Callable[[], object], *, place: Callable[[Exception], bool]
          | None = None) -> object:
    """Run ``fn``: its result, or ``None`` after one of trailgate's own errors whose place
    ``place`` accepts; anything else raises :class:`Escape` saying what escaped from where."""
    from trailgate.errors import TrailgateError

    try:
        result = fn()
    except TrailgateError as exc:
        if place is not None and not place(exc):
            raise Escape(f"{label}: {type(exc).__name__} without its place: {exc}") from None
        OUTCOMES.append(f"{label}: {type(exc).__name__}: {exc}")
        return None
    except Exception as exc:
        raise Escape(f"{label}: {type(exc).__name__} escaped: {exc}\n"
                     f"{traceback.format_exc()}") from None
    OUTCOMES.append(f"{label}: {_digest(result)}")
    return result


def _digest(value: object) -> str:
    """A short hash of ``value`` (the example's directory left out, as it differs between
    the two workers), or the text itself with ``FUZZ_FULL`` set (to see a difference)."""
    text = (value if isinstance(value, str) else repr(value)).replace(os.getcwd(), "<tmp>")
    if os.environ.get("FUZZ_FULL"):
        return text
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def _cli(label: str, argv: list[str], stdin: bytes = b"") -> str:
    """``trailgate argv`` with ``stdin`` (decoded as a UTF-8 terminal's would be): a message
    and exit status 1 are clean, a traceback is not."""
    from trailgate.cli import main

    err, out = io.StringIO(), io.StringIO()
    old_stdin = sys.stdin
    try:
        sys.stdin = io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8")
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            status = clean(label, lambda: main(argv))
    except SystemExit as exc:  # argparse: the arguments themselves are fixed by the target
        raise Escape(f"{label}: exit {exc.code} from the argument parser: {err.getvalue()}"
                     ) from None
    finally:
        sys.stdin = old_stdin
    text = err.getvalue()
    if "Traceback" in text or "internal error" in out.getvalue():
        raise Escape(f"{label}: printed a traceback or an internal error:\n{text}"
                     f"{out.getvalue()[-2000:]}")
    if status not in (0, 1):
        raise Escape(f"{label}: exit status {status}: {text}")
    OUTCOMES.append(f"{label}: output {_digest(out.getvalue())}, {text.strip()[:300]}")
    return text


# -- trails -----------------------------------------------------------------------------

def _located(exc: Exception) -> bool:
    from trailgate.errors import TrailFormatError

    return not isinstance(exc, TrailFormatError) or exc.path is not None


LOGDUMP_SCRIPT = [
    "fileheader detail", "ghdr on", "detail data", "usertoken detail", "ggstoken detail",
    "headertoken detail", "reclen 200", "n 40", "pos 0", "count detail", "pos 0", "sfh",
    "sfh", "sft insert", "sfet", "sfmd tdr next", "sfmd ddr 1", "show tdr", "show tables",
    "pos last", "n", "pos 0", "filter include filename US03.STUDENT", "n 5", "filter clear",
    "save saved.dat ! 5 records", "nexttrail",
]


def _logdump(label: str, path: Path, script: list[str]) -> None:
    from trailgate.logdump.commands import execute
    from trailgate.logdump.session import Session

    out = io.StringIO()
    session = Session(out)
    try:
        clean(f"{label} OPEN", lambda: session.open(path))
        for line in script:
            if clean(f"{label} {line!r}", lambda line=line: execute(session, line)):
                break
    finally:
        clean(f"{label} close", session.close)
    if "Traceback" in out.getvalue():
        raise Escape(f"{label}: Logdump printed a traceback:\n{out.getvalue()[-3000:]}")
    OUTCOMES.append(f"{label} shows {_digest(out.getvalue())}")


def _trail(tmp: Path, payload: dict[str, Any]) -> None:
    """Every reader of a trail over ``payload["files"]`` (bytes per file, in order)."""
    from trailgate.model import TrailPosition
    from trailgate.trail import TrailReader, find_next_record

    d = tmp / "dirdat"
    d.mkdir()
    files: list[bytes] = payload["files"]
    for seq, data in enumerate(files):
        (d / f"aa{seq:09d}").write_bytes(data)
    trail = str(d / "aa")
    first = d / "aa000000000"

    def drain(it: Any, limit: int = 1_000_000) -> str:
        seen = hashlib.sha1()
        for n, item in enumerate(it):
            if n > limit:
                raise Escape("a reader yields without end")
            seen.update(repr(item).replace(str(tmp), "<tmp>").encode("utf-8", "surrogatepass"))
        return seen.hexdigest()

    clean("TrailReader.transactions", lambda: drain(TrailReader(trail).transactions()),
          place=_located)
    clean("TrailReader.records", lambda: drain(TrailReader(trail).records()), place=_located)
    clean("TrailReader.raw_records (one file, no values)",
          lambda: drain(TrailReader(first, single_file=True, values=False).records()),
          place=_located)

    start = payload.get("start", 0)  # a position anywhere in the first file (--from)
    clean(f"TrailReader.records from 0:{start}",
          lambda: drain(TrailReader(trail, TrailPosition(0, start)).records()), place=_located)
    data = files[0]

    def scan_headers() -> None:
        pos: int | None = 0
        for _ in range(400):
            pos = find_next_record(data, pos)
            if pos is None:
                return
            pos += 1

    clean("find_next_record (SCANFORHEADER)", scan_headers)
    _boundaries(trail, len(data))
    _logdump("Logdump", first, payload.get("logdump", LOGDUMP_SCRIPT))
    _cli("trail export", ["trail", "export", trail])
    _cli("trail export FILE --from", ["trail", "export", str(first), "--from", f"0:{start}"])
    _cli("trail dump --annotate", ["trail", "dump", "--annotate", str(first)])
    _cli("trail dump", ["trail", "dump", str(first), "--count", "40"])
    _direct_c(data)


def _boundaries(trail: str, size: int) -> None:
    """The Spark source's boundary scan and file splits, and the Replicat's span reader
    (their C loops in the C worker): positions or a located ``TrailFormatError``."""
    from trailgate.model import TrailPosition
    from trailgate.replicat.range_apply import read_span
    from trailgate.spark.trail_offsets import end_of_data, scan_boundary
    from trailgate.spark.trail_splits import split_file

    start = TrailPosition(0, 0)

    def scan_in_steps() -> list[object]:
        state = None
        at = start
        steps: list[object] = []
        for _ in range(200):
            boundary, n, state = scan_boundary(trail, at, max_records=3, state=state)
            if boundary <= at:
                break
            steps.append((boundary, n))
            at = boundary
        return steps

    def scan_once() -> tuple[object, ...]:
        boundary, covered, state = scan_boundary(trail, start)
        # where the scan stopped reading (state.resume) may be the file's start or its
        # header's end when no record follows: the same place, so not compared
        return boundary, covered, state.in_txn, state.pending, state.covered

    clean("scan_boundary", scan_once, place=_located)
    clean("scan_boundary (in steps)", scan_in_steps, place=_located)
    clean("split_file", lambda: split_file(trail, 0, start, max(64, size // 5)),
          place=_located)
    end = end_of_data(trail)
    if end is not None:  # None without the C codec (not compared)
        clean("read_span", lambda: read_span(trail, start, end) and None, place=_located)


def _direct_c(data: bytes) -> None:
    """The C functions called on the raw bytes, as their callers may: a result, ``None`` (the
    Python code decides) or ``ValueError``; never a crash."""
    from trailgate.replicat.range_apply import CLEAN_SCAN
    from trailgate.trail._accel import speedups
    from trailgate.trail.records import RawRecord

    if speedups is None:
        return
    ok = (ValueError, UnicodeDecodeError, OverflowError)
    for start in (0, data.find(b"G\x01")):
        with contextlib.suppress(*ok):
            speedups.scan_records(data, max(start, 0), len(data), CLEAN_SCAN, -1, None, None)
        with contextlib.suppress(*ok):
            speedups.split_records(data[max(start, 0):])
    pos = data.find(b"G")
    for _ in range(300):
        if pos < 0:
            break
        with contextlib.suppress(*ok):
            speedups.decode_record(data, pos, len(data), RawRecord)
        for fixed in (None, frozenset({0, 2})):
            with contextlib.suppress(*ok):
                speedups.decode_columns(data, fixed, pos, len(data))
        pos = data.find(b"G", pos + 1)


# -- the other inputs ---------------------------------------------------------------------

def _logdump_commands(tmp: Path, payload: dict[str, Any]) -> None:
    """Logdump command lines (``payload["lines"]``) on a sound trail file."""
    d = tmp / "dirdat"
    d.mkdir()
    (d / "aa000000000").write_bytes(payload["trail"])
    lines: list[bytes] = payload["lines"]
    _logdump("Logdump", d / "aa000000000",
             ["open dirdat/aa000000000",
              *(line.decode("utf-8", "replace") for line in lines)])
    _cli("trailgate logdump < commands", ["logdump", str(d / "aa000000000")],
         stdin=b"\n".join(lines))


def _jsonl(tmp: Path, payload: dict[str, Any]) -> None:
    """``trail import`` of JSON Lines text (bytes: any encoding), then the trail it wrote
    read back."""
    from trailgate.trail import TrailReader

    src = tmp / "changes.jsonl"
    src.write_bytes(payload["data"])
    _cli("trail import", ["trail", "import", str(src), "--trail", str(tmp / "out" / "ji")])
    if (tmp / "out").exists():
        clean("reading the imported trail",
              lambda: [t.transaction for t in TrailReader(tmp / "out" / "ji").transactions()])


def _params(tmp: Path, payload: dict[str, Any]) -> None:
    """A parameter file (bytes) as a group's, the GLOBALS file and the Manager's."""
    from trailgate.errors import ConfigError
    from trailgate.home import Home
    from trailgate.manager.params import parse_manager_params
    from trailgate.params import parse_globals, parse_params

    def located(exc: Exception) -> bool:
        return not isinstance(exc, ConfigError) or exc.path is not None

    prm = tmp / "dirprm" / "grp.prm"
    prm.parent.mkdir()
    prm.write_bytes(payload["data"])
    for name, extra in payload.get("extra", {}).items():
        (tmp / "dirprm" / name).write_bytes(extra)
    clean("parse_params", lambda: parse_params(prm, base_dir=tmp), place=located)
    (tmp / "GLOBALS").write_bytes(payload["data"])
    clean("parse_globals", lambda: parse_globals(tmp / "GLOBALS"), place=located)
    (tmp / "dirprm" / "mgr.prm").write_bytes(payload["data"])
    clean("parse_manager_params", lambda: parse_manager_params(Home(tmp)), place=located)


def _ggsci(tmp: Path, payload: dict[str, Any]) -> None:
    """GGSCI command lines: each parsed alone, the whole text parsed as an obey file, and run
    through ``trailgate ggsci`` when it holds only commands that touch nothing outside the
    home (``payload["run"]``)."""
    from trailgate.errors import ConfigError
    from trailgate.ggsci.parser import parse_command, parse_obey

    def located(exc: Exception) -> bool:
        return not isinstance(exc, ConfigError) or exc.path is not None or exc.line is None

    data: bytes = payload["text"]
    text = data.decode("utf-8", "replace")
    for line in text.splitlines()[:50]:
        clean(f"parse_command {line[:200]!r}", lambda line=line: parse_command(line))
    obey = tmp / "setup.oby"
    obey.write_bytes(data)
    clean("parse_obey", lambda: parse_obey(text, str(obey)), place=located)
    if payload.get("run"):
        home = tmp / "home"
        home.mkdir()
        _cli("trailgate ggsci OBEY", ["--home", str(home), "ggsci", str(obey)])
        _cli("trailgate ggsci < OBEY", ["--home", str(home), "ggsci"], stdin=data)


def _oracle(tmp: Path, payload: dict[str, Any]) -> None:
    """``trailgate capture oracle-dump`` of a redo logfile dump (bytes)."""
    dump = tmp / "redo.dmp"
    dump.write_bytes(payload["data"])
    dictionary = tmp / "dictionary.json"
    dictionary.write_bytes(payload["dictionary"])
    for unknown in ("stop", "skip"):
        _cli(f"capture oracle-dump --on-unknown {unknown}",
             ["capture", "oracle-dump", "--dictionary", str(dictionary), "--trail",
              str(tmp / f"ox{unknown}" / "ox"), "--on-unknown", unknown, str(dump)])


_MANAGER: dict[str, Any] = {}
#: a home's groups: a pump and a Replicat (what GGSCI writes to dirchk/groups.json)
HOME_SETUP = ("ADD EXTRACT pmp1, EXTTRAILSOURCE ./dirdat/lt\n"
              "ADD RMTTRAIL ./dirdat/rt, EXTRACT pmp1\n"
              "ADD REPLICAT rep1, EXTTRAIL ./dirdat/rt, NODBCHECKPOINT\n")


def _home(where: Path) -> Path:
    """A home at ``where`` holding PMP1 and REP1, set up by GGSCI."""
    from trailgate.home import Home

    where.mkdir(parents=True, exist_ok=True)
    obey = where / "setup.oby"
    obey.write_text(HOME_SETUP, "utf-8")
    _cli("GGSCI setup", ["--home", str(where), "ggsci", str(obey)])
    if Home(where).group("PMP1") is None:
        raise Escape("the home could not be set up (ADD EXTRACT pmp1)")
    return where


def _manager_state(home_dir: Path) -> Any:
    from trailgate.home import Home
    from trailgate.manager.auth import ensure_token
    from trailgate.manager.lag import LagMonitor
    from trailgate.manager.params import parse_manager_params
    from trailgate.manager.state import ManagerState
    from trailgate.manager.supervisor import Supervisor

    home = Home(home_dir)
    params = parse_manager_params(home)

    def log(level: str, code: str, message: str) -> None:
        pass

    return ManagerState(home, params, Supervisor(home, params, log),
                        LagMonitor(home, params, log), ensure_token(home), 7809)


def _manager_app() -> tuple[Any, str]:
    """The Manager's ASGI application over a home holding the pump PMP1 (made once per
    worker, kept for its life: requests only read it), and its token."""
    if not _MANAGER:
        from trailgate.manager.api import create_app

        state = _manager_state(_home(Path(tempfile.mkdtemp(prefix="tgfuzz-mgr-"))))
        # one event loop for the worker's life, as a server has (anyio's file threads stay
        # with the loop that started them)
        _MANAGER.update(app=create_app(state), token=state.token,
                        loop=asyncio.new_event_loop())
    return _MANAGER["app"], _MANAGER["token"]


def _registry(tmp: Path, payload: dict[str, Any]) -> None:
    """A group registry (dirchk/groups.json, bytes) as a hand edit or a damaged disk leaves
    it: what GGSCI's INFO and VIEW and the Manager's status make of it."""
    from trailgate.home import Home

    home = _home(tmp / "home")
    (home / "dirchk" / "groups.json").write_bytes(payload["data"])
    clean("Home.groups", lambda: Home(home).groups(),
          place=lambda exc: getattr(exc, "path", None) is not None)
    obey = tmp / "info.oby"
    obey.write_text("INFO ALL\nINFO PMP1, SHOWCH\nINFO REP1, DETAIL\nVIEW PARAMS PMP1\n",
                    "utf-8")
    _cli("GGSCI INFO", ["--home", str(home), "ggsci", str(obey)])
    clean("Manager statuses", lambda: _manager_state(home).statuses())


def _rest(tmp: Path, payload: dict[str, Any]) -> None:
    """HTTP requests (``payload["requests"]``: method, path, query, headers) to the Manager's
    REST API: any answer but a server error (500: an exception in a handler)."""
    from urllib.parse import quote

    app, token = _manager_app()

    async def call(method: str, path: str, query: bytes, headers: list[tuple[bytes, bytes]]
                   ) -> int:
        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
                 "method": method, "scheme": "http", "path": path, "root_path": "",
                 "raw_path": quote(path, safe="/", errors="surrogatepass").encode("ascii"),
                 "query_string": query, "headers": headers, "client": ("127.0.0.1", 5),
                 "server": ("127.0.0.1", 7809)}
        sent: list[dict[str, Any]] = []
        done = asyncio.Event()
        asked: list[bool] = []

        async def receive() -> dict[str, Any]:  # the request, then a disconnect once answered
            if not asked:
                asked.append(True)
                return {"type": "http.request", "body": b"", "more_body": False}
            await done.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)
            if message["type"] == "http.response.body" and not message.get("more_body"):
                done.set()

        await app(scope, receive, send)
        return int(next(m["status"] for m in sent if m["type"] == "http.response.start"))

    for method, path, query, auth in payload["requests"]:
        headers = [(b"host", b"127.0.0.1")]
        if auth is not None:
            headers.append((b"authorization", auth.replace(b"TOKEN", token.encode())))
        label = f"{method} {path[:100]!r}?{query[:60]!r}"
        status = clean(label, lambda method=method, path=path, query=query, headers=headers:
                       _MANAGER["loop"].run_until_complete(call(method, path, query, headers)))
        if isinstance(status, int) and status >= 500:
            raise Escape(f"{label}: HTTP {status}")


def _probe(tmp: Path, payload: dict[str, Any]) -> None:
    """What the harness must catch, on request: a clean error, an escape, a crash, a hang."""
    from trailgate.errors import TrailFormatError

    how = payload["do"]
    if how == "clean":
        clean("probe", lambda: (_ for _ in ()).throw(TrailFormatError("x", path="f", rba=0)),
              place=_located)
    elif how == "unlocated":
        clean("probe", lambda: (_ for _ in ()).throw(TrailFormatError("x")), place=_located)
    elif how == "escape":
        clean("probe", lambda: {}["missing"])
    elif how == "crash":
        import ctypes

        ctypes.string_at(0)  # reads address 0: SIGSEGV, as a C bug would
    elif how == "hang":
        while True:
            pass


TARGETS: dict[str, Callable[[Path, dict[str, Any]], None]] = {
    "trail": _trail, "logdump": _logdump_commands, "jsonl": _jsonl, "params": _params,
    "ggsci": _ggsci, "oracle": _oracle, "rest": _rest, "registry": _registry,
    "probe": _probe,
}


def _serve(proto_in: Any, proto_out: Any) -> None:
    while True:
        head = proto_in.read(_FRAME.size)
        if len(head) < _FRAME.size:
            return
        (length,) = _FRAME.unpack(head)
        target, payload = pickle.loads(proto_in.read(length))
        with tempfile.TemporaryDirectory(prefix="tgfuzz-") as tmp:
            os.chdir(tmp)
            OUTCOMES.clear()
            try:
                TARGETS[target](Path(tmp), payload)
                reply: tuple[str, str] = ("ok", "\n".join(OUTCOMES).replace(tmp, "<tmp>"))
            except Escape as exc:
                reply = ("escape", str(exc))
            except BaseException as exc:
                reply = ("escape", f"{type(exc).__name__} in the worker: {exc}\n"
                                   f"{traceback.format_exc()}")
            finally:
                os.chdir(REPO)
        body = pickle.dumps(reply)
        proto_out.write(_FRAME.pack(len(body)) + body)
        proto_out.flush()


def main() -> None:
    # the protocol keeps the real stdout; whatever the code under test prints goes nowhere
    proto_out = os.fdopen(os.dup(1), "wb")
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    # stderr too, unless TRAILGATE_FUZZ_STDERR names a file to append it to: the sanitizer
    # run keeps what UBSan writes there (it has no report file when ASan is loaded)
    keep = os.environ.get("TRAILGATE_FUZZ_STDERR")
    os.dup2(os.open(keep, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600) if keep else devnull, 2)
    sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - for the life of the process
    sys.stderr = sys.stdout
    # -1: no limit (the sanitizer run: ASan reserves terabytes of address space for its
    # shadow memory and limits the resident size itself)
    limit = int(os.environ.get("TRAILGATE_FUZZ_MEMORY", str(3 << 30)))
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    import trailgate.spark.trail_offsets  # noqa: F401 - imported once, not per example
    _serve(sys.stdin.buffer, proto_out)


if __name__ == "__main__":
    main()
