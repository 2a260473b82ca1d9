"""Hadoop's local filesystem without a fork per file operation, for local Spark sessions.

Without its native library Hadoop's local filesystem forks a shell for every ``chmod`` and
``stat``, and a streaming query's offset and commit logs do both on every micro-batch.
Java classes beside this module (``java/trailgate/hadoop``) do the same through
``java.nio``; they are compiled once per machine with the JDK's ``javac`` into a cache, and
without a JDK the session keeps Hadoop's own.  docs/spark.md, "The local filesystem
without forks".
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

__all__ = ["FS_CLASS", "FS_CONTEXT_CLASS", "jar", "local_fs_settings"]

FS_CLASS = "trailgate.hadoop.NioChecksumFileSystem"
FS_CONTEXT_CLASS = "trailgate.hadoop.NioLocalFs"
_SOURCES = Path(__file__).with_name("java")
_COMPILE_TIMEOUT = 180
log = logging.getLogger("trailgate.spark")


def _javac() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home and os.access(Path(home) / "bin" / "javac", os.X_OK):
        return str(Path(home) / "bin" / "javac")
    return shutil.which("javac")


def _hadoop_jar() -> Path | None:
    try:
        import pyspark
    except ImportError:
        return None
    jars = sorted((Path(pyspark.__file__).parent / "jars").glob("hadoop-client-api-*.jar"))
    return jars[-1] if jars else None


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "trailgate"


def _sources() -> list[Path]:
    return sorted(_SOURCES.rglob("*.java"))


def jar(cache: Path | None = None, javac: str | None = None) -> Path | None:
    """The compiled classes' jar (built on first use), or None when there is no JDK, no
    Hadoop jar or the build failed: the session then uses Hadoop's own classes."""
    hadoop, javac = _hadoop_jar(), javac or _javac()
    sources = _sources()
    if hadoop is None or javac is None or not sources:
        return None
    digest = hashlib.sha256(hadoop.name.encode())
    for src in sources:
        digest.update(src.relative_to(_SOURCES).as_posix().encode() + b"\0" + src.read_bytes())
    cache = cache or _cache_dir()
    target = cache / f"trailgate-hadoop-{digest.hexdigest()[:16]}.jar"
    if target.is_file():
        return target
    try:
        cache.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=cache, prefix=".build-") as tmp:
            classes = Path(tmp) / "classes"
            done = subprocess.run(
                [javac, "--release", "17", "-nowarn", "-cp", str(hadoop), "-d", str(classes),
                 *map(str, sources)],
                capture_output=True, timeout=_COMPILE_TIMEOUT, check=False)
            if done.returncode != 0:
                lines = done.stderr.decode(errors="replace").strip().splitlines()
                log.info("%s could not compile %s (%s); Spark uses Hadoop's local "
                         "filesystem", javac, _SOURCES, lines[0] if lines else "no message")
                return None
            staged = Path(tmp) / target.name
            with zipfile.ZipFile(staged, "w", zipfile.ZIP_DEFLATED) as zf:
                for path in sorted(classes.rglob("*.class")):
                    zf.write(path, path.relative_to(classes).as_posix())
            os.replace(staged, target)  # several processes may build at once: last one wins
    except (OSError, subprocess.SubprocessError) as exc:
        log.info("could not build %s (%s); Spark uses Hadoop's local filesystem", target, exc)
        return None
    return target


@functools.cache
def _process_jar() -> Path | None:
    """:func:`jar` once per process: a session may be asked for many times, and a build
    that failed is not tried again on each."""
    return jar()


def local_fs_settings(master: str) -> dict[str, str]:
    """Spark settings that put the classes in use — for a local master only (a cluster's
    executors would not find the jar) and only when the jar can be had."""
    if not master.startswith("local"):
        return {}
    path = _process_jar()
    if path is None:
        return {}
    return {
        "spark.driver.extraClassPath": str(path),
        "spark.hadoop.fs.file.impl": FS_CLASS,
        "spark.hadoop.fs.AbstractFileSystem.file.impl": FS_CONTEXT_CLASS,
    }
