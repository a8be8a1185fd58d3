"""Small file operations the store's commit guarantees rest on: a file created only if absent, never opened through
a link, fsync'ed to disk, an emptied folder removed."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from warehouse.errors import StorageError


def create_if_absent(path: Path, data: bytes) -> None:
    """Write ``data`` at ``path`` in one step, unless ``path`` exists (then FileExistsError).

    The one conditional write of the warehouse: a snapshot is created whole or not at all,
    and never replaces another (on object storage this is a conditional put).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    not_a_link(path.parent)
    tmp = path.parent / f".{path.name}.{os.getpid()}.tmp"
    tmp.unlink(missing_ok=True)  # a stale one of a dead run with this pid, or a link planted there (never followed)
    with open(open_regular(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL), "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    try:
        os.link(tmp, path)  # fails if path exists: never overwrites
    finally:
        tmp.unlink(missing_ok=True)
    fsync(path.parent)


def not_a_link(path: Path) -> None:
    """StorageError when ``path`` (a folder of the warehouse's own state) is a symbolic link: what the
    warehouse writes there would land wherever it points."""
    if os.path.islink(path):
        raise _a_link(path)


def _a_link(path: Path) -> StorageError:
    try:
        target = f" (to {os.readlink(path)})"
    except OSError:
        target = ""
    return StorageError(f"{path}: is a symbolic link{target}; the warehouse never follows one in its own files "
                        f"(it could point anywhere): remove it (rm {path}) and run again")


def open_regular(path: Path, flags: int) -> int:
    """A file of the warehouse's own state opened without following a link at its name, refused when it
    is not a regular file (a FIFO, a device): a link planted there (to a victim, or dangling) would have
    the run truncate or create a file anywhere."""
    try:
        fd = os.open(path, flags | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0), 0o644)
    except OSError as e:
        if e.errno == errno.ELOOP or os.path.islink(path):
            raise _a_link(path) from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise StorageError(f"{path}: is not a regular file (a FIFO, socket or device?); remove it (rm {path}) "
                           "and run again")
    os.set_blocking(fd, True)
    return fd


def rmdir_if_empty(path: Path) -> None:
    try:
        path.rmdir()
    except OSError:  # not empty, or gone: either way nothing of ours to remove
        pass


def fsync(path: str | os.PathLike) -> None:
    """Make a file's data, or a directory's entries, durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
