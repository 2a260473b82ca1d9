"""Building trailgate's C extensions with AddressSanitizer and UBSan, and running tests on them.

The extensions are found in setup.py (whatever it builds is built here, so a new extension
needs no change) and compiled with ``-fsanitize=address,undefined`` into a directory of
their own: the normal build in the source tree is left alone.  The tests then run in a child
interpreter that cannot pick the unsanitized modules by mistake: a small virtual environment
whose start-up hook puts an import finder first that maps each extension's name to its
sanitized file, and that sees the project's own environment through ``site.addsitedir``.
Every process the tests start with ``sys.executable`` (the fuzz workers) is that interpreter,
so they get the sanitized modules too, whatever ``PYTHONPATH`` they are given.  The finder
writes each load (or failed load) of an extension, with its process id, to a log, so a run in
which a process quietly fell back to pure Python is seen.  CPython is not instrumented: the
sanitizer's runtime is preloaded (``LD_PRELOAD``), Python's own allocator is switched to
``malloc`` so that every object is a heap block ASan guards; ASan writes each report to a
file per process, and UBSan (which has no report file beside ASan) to stderr, which the fuzz
workers keep in a file instead of /dev/null.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import time
import venv
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SANITIZE_FLAGS = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-O1", "-g"]
#: the environment variable the finder logs each extension load to
IMPORT_LOG_ENV = "TRAILGATE_SANITIZED_IMPORT_LOG"
#: the manifest (extension name -> sanitized file) the child's finder and checks read
MANIFEST_ENV = "TRAILGATE_SANITIZED_MANIFEST"
#: the file the fuzz workers' stderr goes to, in the run's log directory
WORKER_STDERR = "workers.stderr"
#: what a sanitizer writes when it finds something, in a report or on stderr
REPORT_MARKERS = ("ERROR: AddressSanitizer", "runtime error:", "SUMMARY: AddressSanitizer",
                  "SUMMARY: UndefinedBehaviorSanitizer", "ERROR: LeakSanitizer")


@dataclass(frozen=True)
class ExtensionSpec:
    """One ``setuptools.Extension`` of setup.py, as much of it as a compiler needs."""

    name: str
    sources: tuple[str, ...]
    include_dirs: tuple[str, ...] = ()
    define_macros: tuple[tuple[str, str | None], ...] = ()
    undef_macros: tuple[str, ...] = ()
    library_dirs: tuple[str, ...] = ()
    libraries: tuple[str, ...] = ()
    extra_compile_args: tuple[str, ...] = ()
    extra_link_args: tuple[str, ...] = ()

    @property
    def short_name(self) -> str:
        return self.name.rsplit(".", 1)[-1]


_CAPTURE = r"""
import json, runpy, sys, setuptools
found = []
def capture(**kwargs):
    found.extend(kwargs.get("ext_modules") or [])
setuptools.setup = capture
runpy.run_path(sys.argv[1], run_name="setup")
print(json.dumps([{
    "name": e.name, "sources": list(e.sources), "include_dirs": list(e.include_dirs or []),
    "define_macros": [list(m) for m in e.define_macros or []],
    "undef_macros": list(e.undef_macros or []), "library_dirs": list(e.library_dirs or []),
    "libraries": list(e.libraries or []), "extra_compile_args": list(e.extra_compile_args or []),
    "extra_link_args": list(e.extra_link_args or [])} for e in found]))
"""


def discover_extensions(root: Path = REPO) -> list[ExtensionSpec]:
    """The C extensions setup.py builds (run with ``setuptools.setup`` replaced by a
    recorder, in a process of its own), paths relative to ``root``."""
    done = subprocess.run([sys.executable, "-c", _CAPTURE, str(root / "setup.py")], cwd=root,
                          capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"reading the extensions from setup.py failed:\n{done.stderr}")
    specs = []
    for item in json.loads(done.stdout.strip().splitlines()[-1]):
        specs.append(ExtensionSpec(
            item["name"], tuple(item["sources"]), tuple(item["include_dirs"]),
            tuple((m[0], m[1]) for m in item["define_macros"]), tuple(item["undef_macros"]),
            tuple(item["library_dirs"]), tuple(item["libraries"]),
            tuple(item["extra_compile_args"]), tuple(item["extra_link_args"])))
    return specs


def compiler() -> str | None:
    """The C compiler (``CC`` or gcc), or None when there is none."""
    return shutil.which(os.environ.get("CC", "gcc"))


def asan_runtime(cc: str) -> Path | None:
    """The compiler's own shared ASan runtime (the one the sanitized modules link against
    and the child must preload), or None when the compiler has none."""
    done = subprocess.run([cc, "-print-file-name=libasan.so"], capture_output=True,
                          text=True, check=False)
    path = Path(done.stdout.strip())
    return path.resolve() if done.returncode == 0 and path.is_absolute() and path.exists() \
        else None


def build(specs: list[ExtensionSpec], out: Path, cc: str, root: Path = REPO) -> dict[str, Path]:
    """Compile each extension with the sanitizers into ``out`` (a file per extension, laid
    out as its package); extension name -> file.  A compile error raises with its output:
    an extension the normal build compiles must compile here too."""
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    include = sysconfig.get_paths()["include"]
    built: dict[str, Path] = {}
    for spec in specs:
        target = out.joinpath(*spec.name.split(".")[:-1]) / f"{spec.short_name}{suffix}"
        target.parent.mkdir(parents=True, exist_ok=True)
        cmd = [cc, "-shared", "-fPIC", *SANITIZE_FLAGS, f"-I{include}"]
        cmd += [f"-I{root / d}" for d in spec.include_dirs]
        cmd += [f"-D{n}" if v is None else f"-D{n}={v}" for n, v in spec.define_macros]
        cmd += [f"-U{n}" for n in spec.undef_macros]
        cmd += [*spec.extra_compile_args, *(str(root / s) for s in spec.sources)]
        cmd += ["-o", str(target), *(f"-L{root / d}" for d in spec.library_dirs)]
        cmd += [*(f"-l{lib}" for lib in spec.libraries), *spec.extra_link_args]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=600)
        if done.returncode != 0:
            raise RuntimeError(f"compiling {spec.name} with the sanitizers failed:\n"
                               f"{' '.join(cmd)}\n{done.stderr}")
        built[spec.name] = target
    return built


_FINDER = '''"""The sanitizer run's start-up hook: the C extensions from their sanitized build."""
import importlib.machinery
import importlib.util
import json
import os
import sys

_MANIFEST = json.loads(open(os.environ[{manifest!r}]).read()) if {manifest!r} in os.environ \\
    else {{}}


def _note(what, name, detail):
    log = os.environ.get({log!r})
    if log:
        with open(log, "a") as f:
            f.write(f"{{os.getpid()}} {{what}} {{name}} {{detail}}\\n")


class _Loader(importlib.machinery.ExtensionFileLoader):
    def create_module(self, spec):
        try:
            module = super().create_module(spec)
        except BaseException as exc:
            _note("FAILED", spec.name, repr(exc).replace("\\n", " "))
            raise
        _note("loaded", spec.name, self.path)
        return module


class _Finder:
    @classmethod
    def find_spec(cls, fullname, path=None, target=None):
        where = _MANIFEST.get(fullname)
        if where is None:
            return None
        return importlib.util.spec_from_file_location(fullname, where,
                                                      loader=_Loader(fullname, where))


sys.meta_path.insert(0, _Finder)
'''


def make_interpreter(out: Path) -> Path:
    """A virtual environment in ``out`` that sees this interpreter's packages and loads the
    sanitized extensions of the manifest named by ``TRAILGATE_SANITIZED_MANIFEST``; its
    python."""
    venv.EnvBuilder(with_pip=False, symlinks=True).create(out)
    site_packages = Path(sysconfig.get_path("purelib", vars={"base": str(out),
                                                              "platbase": str(out)}))
    (site_packages / "_tg_sanitized.py").write_text(
        _FINDER.format(manifest=MANIFEST_ENV, log=IMPORT_LOG_ENV))
    ours = sysconfig.get_paths()["purelib"]
    (site_packages / "_tg_sanitized.pth").write_text(
        f"import site; site.addsitedir({ours!r})\nimport _tg_sanitized\n")
    return out / "bin" / "python"


@dataclass
class Run:
    """What a sanitized test run gave."""

    returncode: int
    output: str
    seconds: float
    reports: dict[str, str] = field(default_factory=dict)  # file with a report -> its text
    loads: list[tuple[int, str, str, str]] = field(default_factory=list)  # pid, what, name, path

    def findings(self) -> list[str]:
        """The sanitizer reports: the report files', and any report on the run's output."""
        found = [f"{name}:\n{_from_first_report(text)}"
                 for name, text in sorted(self.reports.items())]
        if any(marker in self.output for marker in REPORT_MARKERS):
            found.append(f"on the run's output:\n{_from_first_report(self.output)}")
        return found


def _from_first_report(text: str, size: int = 6000) -> str:
    """``text`` from the line of its first sanitizer report on, ``size`` characters."""
    at = min((i for i in (text.find(m) for m in REPORT_MARKERS) if i >= 0), default=0)
    start = text.rfind("\n", 0, at) + 1
    return text[start:start + size]


@dataclass
class Sanitized:
    """The sanitized build of a set of extensions and the interpreter that loads it."""

    root: Path
    modules: dict[str, Path]
    python: Path
    runtime: Path

    @classmethod
    def prepare(cls, root: Path, specs: list[ExtensionSpec], cc: str, runtime: Path
                ) -> Sanitized:
        modules = build(specs, root / "ext", cc)
        (root / "manifest.json").write_text(json.dumps({k: str(v) for k, v in modules.items()}))
        return cls(root, modules, make_interpreter(root / "venv"), runtime)

    def env(self, logs: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
        """The child's environment: the runtime preloaded, reports to files in ``logs``,
        Python's objects on ASan's heap, the fuzz workers without their address-space limit
        (ASan reserves terabytes of shadow; its own RSS limit stands in)."""
        env = {k: v for k, v in os.environ.items() if k not in ("TRAILGATE_PURE_PYTHON",
                                                                 "PYTEST_ADDOPTS")}
        env.update({
            "LD_PRELOAD": str(self.runtime),
            "ASAN_OPTIONS": f"detect_leaks=0:halt_on_error=1:abort_on_error=0:"
                            f"quarantine_size_mb=64:hard_rss_limit_mb=4096:"
                            f"log_path={logs / 'asan'}",
            # UBSan ignores log_path beside ASan: it writes to stderr (the fuzz workers'
            # goes to a file here)
            "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1",
            "TRAILGATE_FUZZ_STDERR": str(logs / WORKER_STDERR),
            "PYTHONMALLOC": "malloc",
            "TRAILGATE_FUZZ_MEMORY": "-1",
            MANIFEST_ENV: str(self.root / "manifest.json"),
            IMPORT_LOG_ENV: str(logs / "imports.log"),
        })
        env.update(extra or {})
        return env

    def run(self, args: list[str], logs: Path, timeout: float,
            extra_env: dict[str, str] | None = None) -> Run:
        """``python ARGS`` under the sanitizers (cwd: the repository)."""
        logs.mkdir(parents=True, exist_ok=True)
        start = time.monotonic()
        try:
            done = subprocess.run([str(self.python), *args], cwd=REPO,
                                  env=self.env(logs, extra_env), capture_output=True,
                                  text=True, timeout=timeout, check=False)
            code, output = done.returncode, done.stdout + done.stderr
        except subprocess.TimeoutExpired as exc:
            code = -1
            output = f"no end within {timeout:.0f} s\n{exc.stdout!r}\n{exc.stderr!r}"
        seconds = time.monotonic() - start
        reports = {p.name: p.read_text(errors="replace") for p in sorted(logs.iterdir())
                   if p.name.startswith("asan.") and p.stat().st_size}
        stderr = logs / WORKER_STDERR
        if stderr.exists():
            text = stderr.read_text(errors="replace")
            if any(marker in text for marker in REPORT_MARKERS):
                reports[stderr.name] = text[-20000:]
        loads = []
        log = logs / "imports.log"
        if log.exists():
            for line in log.read_text().splitlines():
                pid, what, name, detail = line.split(" ", 3)
                loads.append((int(pid), what, name, detail))
        return Run(code, output, seconds, reports, loads)


def main(argv: list[str]) -> int:
    """``python tests/integration/sanitizer_support.py PYTEST-ARGS…``: build the extensions
    sanitized in a temporary directory and run pytest with these arguments on them (what
    ``./dev sanitize`` does for the whole set, minus the PostgreSQL the COPY pump needs)."""
    import tempfile

    cc = compiler()
    runtime = asan_runtime(cc) if cc else None
    if cc is None or runtime is None:
        print("no C compiler with a shared AddressSanitizer runtime (libasan.so)",
              file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="tg-sanitize-") as tmp:
        san = Sanitized.prepare(Path(tmp), discover_extensions(), cc, runtime)
        run = san.run(["-m", "pytest", "-p", "no:cacheprovider", "-s", *argv],
                      Path(tmp) / "logs", timeout=24 * 3600)
        print(run.output)
        findings = run.findings()
        for finding in findings:
            print(f"SANITIZER REPORT {finding}", file=sys.stderr)
        print(f"{run.seconds:.0f} s, exit status {run.returncode}, "
              f"{len(findings)} sanitizer report(s)", file=sys.stderr)
        return 1 if findings else run.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
