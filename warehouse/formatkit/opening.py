"""How much of a source is read at a time, and how it is read into memory.

A source, local or an object, is opened through the run's ``FileSystems.open`` (``filesystems.py``):
only regular files are read (a FIFO would block the run forever, ``/dev/zero`` never ends), and
never more than their size said when opened; an object for ranged reads of a buffer at a time.
"""

from __future__ import annotations

from typing import BinaryIO

from warehouse import urlpaths

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


def normpath(path: str) -> str:
    """A path made absolute and normal, ``..`` resolved by name; a URL stays a URL (``urlpaths.normpath``)."""
    return urlpaths.normpath(path)
