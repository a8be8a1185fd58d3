"""Opening a source, local or an object, and how much of it is read at a time.

Only regular files are read (a FIFO would block the run forever, ``/dev/zero``
never ends), and never more than their size said when opened. A source may be an
object (``s3://bucket/key``, see ``filesystems.py``): it is opened the same way, for
ranged reads of a buffer at a time.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import BinaryIO

from warehouse import urlpaths
from warehouse.filesystems import FileSystems

HEAD_BYTES = 64 * 1024
DEFAULT_MAX_RECORD_BYTES = 64 * 1024 * 1024
CHUNK = 1 << 20


def read_piece(f: BinaryIO, size: int):
    """``size`` bytes of ``f`` from where it stands (fewer at its end), read into memory of Arrow's
    pool: a worker reads a 32 MB piece after another, and Arrow's allocator hands back the pages
    of the last one, while a new ``bytes`` of that size is fresh memory from the kernel, every
    page of it faulted in and zeroed first (0.4 -> 0.2 CPU-s per GiB). ``bytes`` where the file
    cannot read into a buffer (``readinto``)."""
    import pyarrow as pa

    if not hasattr(f, "readinto"):
        return f.read(size)
    buf = pa.allocate_buffer(size)
    view, got = memoryview(buf), 0
    while got < size and (n := f.readinto(view[got:])):
        got += n
    view.release()
    return buf if got == size else buf.slice(0, got)


def open_regular(path: str) -> BinaryIO:
    """Open a regular file for reading, or raise OSError saying why not.

    O_NONBLOCK makes opening a FIFO return at once instead of waiting for a writer;
    for a regular file the flag changes nothing.
    """
    extra = getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)  # POSIX flags; Windows has no FIFOs to fear
    f = open(path, "rb", opener=lambda p, flags: os.open(p, flags | extra))
    try:
        mode = os.fstat(f.fileno()).st_mode
        if not stat.S_ISREG(mode):
            raise OSError(errno.EINVAL, "not a regular file (a FIFO, device or socket); only regular files are read")
    except BaseException:
        f.close()
        raise
    return f


def open_source(path: str, filesystems: FileSystems) -> tuple[BinaryIO, int, int]:
    """(file, size, mtime_ns) of a regular local file or an object (a URL, through ``filesystems``);
    OSError saying why not."""
    if urlpaths.is_url(path):
        return filesystems.open_object(path)
    f = open_regular(path)
    st = os.fstat(f.fileno())
    return f, st.st_size, st.st_mtime_ns


def normpath(path: str) -> str:
    """A path made absolute and normal, ``..`` resolved by name; a URL stays a URL (``urlpaths.normpath``)."""
    return urlpaths.normpath(path)
