"""Which paths the trail sources read: a local path or a ``file:`` URI, nothing else.

Trail files are read with plain file I/O, on the driver (offsets, planning) and in every
task, so a trail must be on a filesystem each of them mounts at the same path (local disk
for ``local[*]``, a shared filesystem on a cluster).  An object store or HDFS URI would
otherwise fail deep inside a task as a missing file; it is refused when the query is
planned, with what to do instead.  docs/spark.md, "Running on a cluster".
"""

from __future__ import annotations

import re
from urllib.parse import unquote, urlsplit

__all__ = ["local_trail_path"]

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")


def local_trail_path(path: str) -> str:
    """``path`` as a local path: ``file:///gg/dirdat/aa`` and ``file:/gg/dirdat/aa`` become
    ``/gg/dirdat/aa``; a plain path is returned as it is; any other scheme is a ValueError
    naming it."""
    m = _SCHEME.match(path)
    if m is None or len(m.group(1)) == 1:  # no scheme (or a Windows drive letter)
        return path
    scheme = m.group(1).lower()
    if scheme == "file":
        parts = urlsplit(path)
        if parts.netloc not in ("", "localhost"):
            raise ValueError(f"trail path {path}: a file: URI names no host (file:///path); "
                             f"mount the other host's directory and give its local path")
        return unquote(parts.path)
    raise ValueError(
        f"trail path {path}: the trail sources do not read {scheme}: URIs; they read "
        f"trail files with plain file I/O on the driver and in every task, so give a local "
        f"path or a file: URI on a filesystem every node mounts at the same path (NFS, a "
        f"cluster filesystem, or the object store mounted with a FUSE client such as s3fs "
        f"or mountpoint-s3); Delta targets take object-store URIs themselves (docs/spark.md)")
