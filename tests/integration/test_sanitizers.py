"""The C extensions under AddressSanitizer and UBSan: every extension setup.py builds is
compiled with ``-fsanitize=address,undefined`` into a temporary directory, and the tests that
drive the C code (the C-versus-Python differential tests on random input, the fuzzers'
malformed input, ``sanitized_checks.py`` for the COPY pump) run on those builds in a child
interpreter; any sanitizer report, a failed test or an extension that was not the sanitized
build fails the run (heavy: ``./dev sanitize``).  Two quick checks stay in the default suite:
that the harness catches a read past a buffer and an undefined operation, and that every C
file under src/ is in a setup.py extension (so the sanitizer run builds it)."""

from __future__ import annotations

import os
import re
import textwrap
from pathlib import Path

import pytest
from sanitizer_support import (
    REPO,
    ExtensionSpec,
    Run,
    Sanitized,
    asan_runtime,
    compiler,
    discover_extensions,
)

from trailgate.db.cluster import Cluster

#: seconds the whole sanitized test run may take (a loaded 2-core machine)
RUN_TIMEOUT = 3 * 3600
#: test files run sanitized besides those naming an extension: the fuzzers (malformed input
#: through every reader), the trail tests (the codec's C paths on every format) and the
#: tests on GoldenGate's own bytes (the real 12.2 file, its little-endian twin, 21c vectors)
ALSO_UNDER_SANITIZERS = ["test_*fuzz*.py", "test_trail_*.py", "test_gg*.py"]
#: the tests left out under the sanitizers: the trail tests rerun with the accelerator off
#: (pure Python, nothing to sanitize) and the fuzz harness's deliberate crash
NOT_UNDER_SANITIZERS = [
    "tests/unit/test_trail_speedups.py::test_trail_tests_pass_in_the_other_mode",
    # the fuzz harness's own check: a deliberate segfault (ctypes) must end a worker by its
    # signal, where ASan reports the SEGV and exits with status 1
    "tests/unit/test_fuzz_inputs.py::test_the_worker_catches_escapes_crashes_and_hangs"]

PROBE = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <limits.h>

/* the byte after a bytes object's buffer and its terminating NUL: past the allocation */
static PyObject *overread(PyObject *self, PyObject *arg)
{
    const char *data = PyBytes_AsString(arg);
    if (data == NULL)
        return NULL;
    return PyLong_FromLong((unsigned char)data[PyBytes_GET_SIZE(arg) + 1]);
}

/* INT_MAX + n: a signed overflow for n > 0 */
static PyObject *add_to_max(PyObject *self, PyObject *arg)
{
    volatile int base = INT_MAX;
    int n = (int)PyLong_AsLong(arg);
    return PyLong_FromLong(base + n);
}

static PyMethodDef methods[] = {
    {"overread", overread, METH_O, ""}, {"add_to_max", add_to_max, METH_O, ""},
    {NULL, NULL, 0, NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_tgprobe", "", -1, methods};
PyMODINIT_FUNC PyInit__tgprobe(void) { return PyModule_Create(&module); }
"""

#: as a fuzz worker runs: a child of the child, its stderr on /dev/null unless
#: TRAILGATE_FUZZ_STDERR names a file (fuzz_worker.main)
IN_A_GRANDCHILD = textwrap.dedent("""
    import os, subprocess, sys
    keep = os.environ.get("TRAILGATE_FUZZ_STDERR")
    err = open(keep, "ab") if keep else subprocess.DEVNULL
    sys.exit(subprocess.run([sys.executable, "-c", sys.argv[1]], stderr=err).returncode)
""")


def _toolchain() -> tuple[str, Path]:
    cc = compiler()
    if cc is None:
        pytest.skip("no C compiler")
    runtime = asan_runtime(cc)
    if runtime is None:
        pytest.skip(f"{cc} has no shared AddressSanitizer runtime (libasan.so)")
    return cc, runtime


def _c_files_built(specs: list[ExtensionSpec]) -> set[Path]:
    """The C files the extensions compile: their sources and the .c files those include."""
    built: set[Path] = set()
    todo = [REPO / s for spec in specs for s in spec.sources]
    while todo:
        path = todo.pop().resolve()
        if path in built or not path.exists():
            continue
        built.add(path)
        for name in re.findall(r'#include\s+"([^"]+\.c)"', path.read_text(errors="replace")):
            todo.append(path.parent / name)
    return built


def test_every_c_file_is_in_a_setup_py_extension() -> None:
    specs = discover_extensions()
    assert {s.name for s in specs} >= {"trailgate.trail._speedups", "trailgate.apply._spanplan"}
    missing = set(REPO.joinpath("src").rglob("*.c")) - _c_files_built(specs)
    assert not missing, f"C files no setup.py extension builds (nor sanitizes): {missing}"


def test_the_harness_catches_a_read_past_a_buffer_and_undefined_behaviour(tmp_path) -> None:
    """A one-off extension that reads one byte past a bytes object and adds past INT_MAX:
    each fails its run with the sanitizer's report naming the line, also in a grandchild
    whose stderr is not the run's (as the fuzz workers'); a sound call passes and reports
    nothing."""
    cc, runtime = _toolchain()
    source = tmp_path / "_tgprobe.c"
    source.write_text(PROBE)
    san = Sanitized.prepare(tmp_path / "san", [ExtensionSpec("_tgprobe", (str(source),))], cc,
                            runtime)
    cases = {
        "sound": ("import _tgprobe; print(_tgprobe.add_to_max(0), _tgprobe.__file__)", None),
        "overread": ("import _tgprobe; _tgprobe.overread(b'abcdefgh')",
                     "heap-buffer-overflow"),
        "overflow": ("import _tgprobe; _tgprobe.add_to_max(1)", "signed integer overflow"),
    }
    for label, (code, finding) in cases.items():
        for where, args in (("child", ["-c", code]), ("grandchild",
                                                      ["-c", IN_A_GRANDCHILD, code])):
            if where == "grandchild" and finding is None:
                continue
            run = san.run(args, tmp_path / f"logs-{label}-{where}", timeout=120)
            found = "\n".join(run.findings())
            if finding is None:
                assert run.returncode == 0 and not found, (run.output, found)
                assert str(san.modules["_tgprobe"]) in run.output
            else:
                assert run.returncode != 0, (label, where, run.output)
                assert finding in found, (label, where, found, run.output)
                assert "_tgprobe.c:" in found, found  # the line, from the debug info
            assert [(what, name) for _, what, name, _ in run.loads] == [("loaded", "_tgprobe")]


def _covering_tests(specs: list[ExtensionSpec]) -> dict[str, list[Path]]:
    """Extension name -> the unit test files (tests/unit and below) that name it
    (``_spanplan`` or ``spanplan`` as a word), but for those building a sanitized module of
    their own; the inner checks (sanitized_checks.py) name the COPY pump."""
    found: dict[str, list[Path]] = {}
    candidates = sorted(p for p in REPO.joinpath("tests", "unit").rglob("test_*.py")
                        if "sanitiz" not in p.name)  # a test's own sanitized build: not here
    candidates.append(Path(__file__).with_name("sanitized_checks.py"))
    for spec in specs:
        word = re.compile(rf"(?<![A-Za-z0-9_])_?{re.escape(spec.short_name.lstrip('_'))}"
                          r"(?![A-Za-z0-9_])")
        found[spec.name] = [p for p in candidates if word.search(p.read_text())]
    return found


def _check(run: Run, san: Sanitized, what: str) -> None:
    print(f"sanitized run, {what}: {run.seconds:.0f} s, exit status {run.returncode}")
    print(run.output[-800:])
    findings = run.findings()
    assert not findings, "\n\n".join(findings)[-20000:]
    assert run.returncode == 0, run.output[-8000:]
    failed = [entry for entry in run.loads if entry[1] != "loaded"]
    assert not failed, f"sanitized extensions that did not load: {failed}"
    paths = {name: str(path) for name, path in san.modules.items()}
    assert all(paths[name] == where for _, _, name, where in run.loads)
    assert re.search(r"\d+ passed", run.output)


@pytest.mark.heavy
def test_c_extensions_under_address_and_undefined_behaviour_sanitizers(
        tmp_path, pg_cluster: Cluster) -> None:
    """The quick cases of every file naming an extension, of the fuzzers and of the trail
    tests; the quick cases of the files naming an extension with each call into C also made
    with mutated arguments (sanitizer_mutate.py); then the heavy cases of the files naming
    an extension and of the trail fuzzer (``TRAILGATE_SANITIZE_HEAVY=0`` leaves those out)."""
    cc, runtime = _toolchain()
    specs = discover_extensions()
    covering = _covering_tests(specs)
    untested = [name for name, files in covering.items() if not files]
    assert not untested, f"no test names these extensions, so none runs sanitized: {untested}"
    naming = {p for ps in covering.values() for p in ps}
    unit = REPO / "tests" / "unit"
    quick = sorted(naming | {p for glob in ALSO_UNDER_SANITIZERS for p in unit.rglob(glob)})
    heavy = sorted(naming | {unit / "test_fuzz_trails.py"})
    san = Sanitized.prepare(tmp_path / "san", specs, cc, runtime)
    env = {"TRAILGATE_SANITIZE_PG": pg_cluster.create_database("sanitized_copy")}
    base = ["-m", "pytest", "-q", "-s", "-p", "no:cacheprovider",
            *(f"--deselect={t}" for t in NOT_UNDER_SANITIZERS)]
    mutated = sorted(naming - {Path(__file__).with_name("sanitized_checks.py")})
    passes = [("quick cases", ["-m", "not heavy"], quick),
              ("quick cases, calls mutated", ["-m", "not heavy", "-p", "sanitizer_mutate"],
               mutated)]
    if os.environ.get("TRAILGATE_SANITIZE_HEAVY", "1") != "0":
        passes.append(("heavy cases", ["-m", "heavy"], heavy))
    env["PYTHONPATH"] = os.pathsep.join(  # the mutating plugin's directory
        [str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")])
    loads: list[tuple[int, str, str, str]] = []
    for n, (what, options, files) in enumerate(passes):
        run = san.run([*base, *options, *(str(p.relative_to(REPO)) for p in files)],
                      tmp_path / f"logs-{n}", RUN_TIMEOUT, env)
        _check(run, san, f"{what}, {len(files)} files")
        loads += run.loads
    assert {name for _, _, name, _ in loads} == set(san.modules), "extensions never loaded"
    assert len({pid for pid, *_ in loads}) > 2, "no child process loaded an extension"
