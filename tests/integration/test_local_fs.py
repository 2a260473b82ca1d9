"""trailgate's local Hadoop filesystem (java.nio instead of a fork per chmod and stat): the
classes build, a local session uses them, and they behave as Hadoop's local filesystem —
permissions, file status, symlinks, missing files, listings, FileContext's atomic rename
(how Spark's streaming checkpoint writes its logs)."""

from __future__ import annotations

import logging
import os
import pwd
import stat
from pathlib import Path

import pytest
from spark_conftest import spark_session  # noqa: F401  (the ``spark`` fixture)

from trailgate.spark import local_fs, session
from trailgate.spark.session import LOCAL_JIT

pytestmark = pytest.mark.spark


@pytest.fixture(name="jvm_fs")
def _jvm_fs(spark):
    jvm = spark._jvm
    conf = spark._jsc.hadoopConfiguration()
    uri = jvm.java.net.URI("file:///")
    return jvm, conf, jvm.org.apache.hadoop.fs.FileSystem.get(uri, conf)


def _path(jvm, p: Path):
    return jvm.org.apache.hadoop.fs.Path(f"file://{p}")


def test_local_session_uses_the_classes(spark):
    conf = spark._jsc.hadoopConfiguration()
    assert local_fs.jar() is not None, "javac and pyspark's Hadoop jar are on this machine"
    assert conf.get("fs.file.impl") == local_fs.FS_CLASS
    assert conf.get("fs.AbstractFileSystem.file.impl") == local_fs.FS_CONTEXT_CLASS
    jvm = spark._jvm
    fs = jvm.org.apache.hadoop.fs.FileSystem.get(jvm.java.net.URI("file:///"), conf)
    assert fs.getRawFileSystem().getClass().getName() == "trailgate.hadoop.NioLocalFileSystem"


def test_permissions_and_status_as_the_file_has_them(jvm_fs, tmp_path):
    jvm, _conf, fs = jvm_fs
    target = tmp_path / "a" / "data.bin"
    perm = jvm.org.apache.hadoop.fs.permission.FsPermission(jvm.java.lang.Short(0o640))
    out = fs.create(_path(jvm, target), perm, True, 4096, 1, 1 << 20, None)
    out.write(bytearray(b"x" * 1234))
    out.close()
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o640
    fs.setPermission(_path(jvm, target), jvm.org.apache.hadoop.fs.permission.FsPermission(
        jvm.java.lang.Short(0o604)))
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o604

    st = fs.getFileStatus(_path(jvm, target))
    info = os.stat(target)
    assert (st.getLen(), st.isDirectory(), st.getPermission().toShort()) == (1234, False, 0o604)
    assert st.getOwner() == pwd.getpwuid(info.st_uid).pw_name
    assert st.getModificationTime() == info.st_mtime_ns // 1_000_000
    assert st.getPath().toString() == f"file:{target}"
    assert fs.getFileStatus(_path(jvm, target.parent)).isDirectory()
    listed = sorted(s.getPath().getName() for s in fs.listStatus(_path(jvm, target.parent)))
    assert listed == ["data.bin"]  # the checksum file is written, and hidden, as Hadoop's
    assert (target.parent / ".data.bin.crc").is_file()


def test_symlinks_and_missing_files(jvm_fs, tmp_path):
    jvm, _conf, fs = jvm_fs
    (tmp_path / "real").write_bytes(b"12345")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    raw = fs.getRawFileSystem()
    link = raw.getFileLinkStatus(_path(jvm, tmp_path / "link"))
    assert link.isSymlink() and link.getSymlink().toString() == str(tmp_path / "real")
    followed = raw.getFileStatus(_path(jvm, tmp_path / "link"))
    assert (followed.isSymlink(), followed.getLen()) == (False, 5)
    assert not fs.exists(_path(jvm, tmp_path / "missing"))
    with pytest.raises(Exception, match=r"FileNotFoundException.*does not exist"):
        fs.getFileStatus(_path(jvm, tmp_path / "missing"))


def test_file_context_atomic_overwrite(spark, tmp_path):
    """What Spark's checkpoint manager does per log entry: write a temp file, rename it over
    the final name."""
    jvm = spark._jvm
    conf = spark._jsc.hadoopConfiguration()
    fc = jvm.org.apache.hadoop.fs.FileContext.getFileContext(jvm.java.net.URI("file:///"), conf)
    flags = jvm.java.util.EnumSet.of(jvm.org.apache.hadoop.fs.CreateFlag.CREATE,
                                     jvm.org.apache.hadoop.fs.CreateFlag.OVERWRITE)
    opts = jvm.org.apache.hadoop.fs.Options.CreateOpts
    no_opts = spark.sparkContext._gateway.new_array(opts, 0)
    (tmp_path / "log").mkdir()  # as Spark's checkpoint manager does before its first entry
    for text in (b"first", b"second"):
        tmp = _path(jvm, tmp_path / "log" / ".0.tmp")
        out = fc.create(tmp, flags, no_opts)
        out.write(bytearray(text))
        out.close()
        rename = jvm.org.apache.hadoop.fs.Options.Rename
        fc.rename(tmp, _path(jvm, tmp_path / "log" / "0"),
                  spark.sparkContext._gateway.new_array(rename, 1)
                  if text == b"first" else _overwrite(spark, rename))
    assert (tmp_path / "log" / "0").read_bytes() == b"second"
    assert not (tmp_path / "log" / ".0.tmp").exists()


def _overwrite(spark, rename):
    arr = spark.sparkContext._gateway.new_array(rename, 1)
    arr[0] = rename.OVERWRITE
    return arr


def test_streaming_checkpoint_round_trip(spark, tmp_path):
    """A streaming query checkpoints through the classes and resumes from its logs."""
    src = tmp_path / "in"
    src.mkdir()
    out, ck = tmp_path / "out", tmp_path / "ck"
    for n in (1, 2):
        (src / f"{n}.json").write_text(f'{{"n": {n}}}\n')
        q = (spark.readStream.schema("n INT").json(str(src)).writeStream.format("parquet")
             .option("path", str(out)).option("checkpointLocation", str(ck))
             .trigger(availableNow=True).start())
        q.awaitTermination()
    assert sorted(r.n for r in spark.read.parquet(str(out)).collect()) == [1, 2]
    assert (ck / "offsets" / "1").is_file() and (ck / "commits" / ".1.crc").is_file()


def test_build_is_cached_and_optional(tmp_path, caplog):
    built = local_fs.jar(cache=tmp_path / "cache")
    assert built is not None and built.parent == tmp_path / "cache"
    mtime = built.stat().st_mtime_ns
    assert local_fs.jar(cache=tmp_path / "cache") == built
    assert built.stat().st_mtime_ns == mtime  # not compiled again
    assert local_fs.jar(cache=tmp_path / "none", javac=str(tmp_path / "no-javac")) is None
    failing = tmp_path / "javac"
    failing.write_text("#!/bin/sh\necho 'error: no compiler here' >&2\nexit 1\n")
    failing.chmod(0o755)
    with caplog.at_level(logging.INFO, logger="trailgate.spark"):
        assert local_fs.jar(cache=tmp_path / "failed", javac=str(failing)) is None
    assert "error: no compiler here" in caplog.text
    for cache in ("cache", "failed"):
        assert not list((tmp_path / cache).glob(".build-*"))  # no leftovers


def test_only_for_local_masters():
    assert local_fs.local_fs_settings("spark://cluster:7077") == {}
    assert local_fs.local_fs_settings("local[2]")["spark.hadoop.fs.file.impl"] == \
        local_fs.FS_CLASS


def test_local_jvm_compiles_with_c1_only(spark, tmp_path):
    args = list(spark._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
                .getInputArguments())
    assert LOCAL_JIT in args
    assert LOCAL_JIT in session._defaults(tmp_path, True)["spark.driver.extraJavaOptions"]
    cluster = session._defaults(tmp_path, False)
    assert LOCAL_JIT not in cluster["spark.driver.extraJavaOptions"]
    assert LOCAL_JIT not in cluster["spark.executor.extraJavaOptions"]
