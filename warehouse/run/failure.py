"""A run that fails: one line that says what went wrong and what state the warehouse is in, and nothing of
the run kept (its files deleted; in a root that held no warehouse, the folders it made).
"""

from __future__ import annotations

import errno
import os
import re
import signal
import threading
from contextlib import contextmanager

from warehouse import urlpaths
from warehouse.errors import Interrupted, ObjectStoreError, StorageError, WarehouseError, WorkerLost
from warehouse.run.commit import COMMITTED
from warehouse.store import delta
from warehouse.store.storage import Store


@contextmanager
def nothing_kept_unless_committed(store: Store, run_id: str, created: str | None):
    """On any exception (with the lock still held): delete every file of the run and, in a
    root that held no warehouse, the lock file and the folders the run created."""
    try:
        yield
    except BaseException:
        with _no_interrupts():  # a second Ctrl-C must not stop the clean-up half-way
            if not _committed(store, run_id):  # (a Ctrl-C the commit deferred comes after its snapshot)
                store.discard_run(run_id)
                store.forget(created=created)
        raise


@contextmanager
def said_in_one_line(store: Store, run_id: str, doing: str = "ingest into"):
    """Faults the user can act on as one-line messages that say what state the warehouse is in (``doing``:
    what the run was, for the message: ``cannot ingest into ROOT: ...``)."""
    try:
        yield
    except KeyboardInterrupt:
        raise Interrupted(_interrupted_state(store, run_id)) from None
    except WorkerLost:
        raise WarehouseError(
            "an ingest worker process died (killed from outside, or out of memory?): run again, with fewer "
            f"--jobs or a lower --max-record-mb if it was memory ({_state(store)})"
        ) from None
    except Exception as e:
        if isinstance(e, OSError) or (delta.is_delta_error(e) and _OS_ERROR.search(str(e))):
            _said_os_error(store, e, doing)
        raise


#: how deltalake names the system error under its own ("... Read-only file system (os error 30)")
_OS_ERROR = re.compile(r"\(os error (\d+)\)")


_FILE_IN_ERROR = re.compile(r"(?:file|path|directory) (/[^\s:]+)")


def _said_os_error(store: Store, e: Exception, doing: str) -> None:
    """Raise the one-line error for a system error met writing the root (``e``: an OSError, or deltalake's
    error around one)."""
    said = _OS_ERROR.search(str(e))
    if said:  # deltalake's (an OSError or not): the system error it names under its own lines, and the file
        named = _FILE_IN_ERROR.search(str(e))
        code = int(said.group(1))
        e = OSError(code, os.strerror(code), *([named.group(1)] if named else []))
    if urlpaths.is_url(e.filename):  # an object the run's own checks could not stat
        raise ObjectStoreError(f"{e.strerror} ({_state(store)})") from None
    # A write into the remote root refused (a worker's Parquet put, the catalog's): the library names
    # no local file. A local file's fault (a full temporary disk) keeps the local message below.
    if store.remote and not e.filename:
        refused = store.filesystems.run_error(str(store.root), e, writing=True)
        raise ObjectStoreError(f"{refused} ({_state(store)})", bucket=refused.bucket, key=refused.key) from None
    raise StorageError(_storage_message(store, e, doing)) from None


def _committed(store: Store, run_id: str) -> bool:
    try:
        return store.read_snapshot().run_id == run_id
    except Exception:
        return False


def _state(store: Store) -> str:
    return "the warehouse is as it was before this run" if store.exists() else f"there is no warehouse at {store.root}"


def first_missing(path) -> str | None:
    """The topmost directory of ``path`` (itself included) that does not exist yet, if any."""
    path = os.path.abspath(path)
    top = None
    while not os.path.lexists(path):
        top = path
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return top


@contextmanager
def _no_interrupts():
    """SIGINT ignored for the duration (main thread only: elsewhere signals cannot be set)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _interrupted_state(store: Store, run_id: str) -> str:
    if _committed(store, run_id):
        return COMMITTED
    if not store.exists():
        return f"interrupted: nothing was written, there is no warehouse at {store.root}"
    return "interrupted: the warehouse is as it was before this run, nothing of the run was kept"


_OS_HINTS = {
    errno.ENOSPC: "free some space and run again",
    errno.EDQUOT: "free some space (disk quota) and run again",
    errno.EACCES: "choose a --root you may write to, or fix its permissions",
    errno.EPERM: "choose a --root you may write to, or fix its permissions",
    errno.EROFS: "the file system is read-only: choose a --root you may write to",
    errno.ENOTDIR: "a part of that path is a file, not a directory: choose another --root",
    errno.ENAMETOOLONG: "choose a shorter --root",
    errno.EISDIR: "it must be a file: move the folder away and run again",
    errno.EFBIG: "free some space (or raise the file size limit) and run again",
}


def _storage_message(store: Store, e: OSError, doing: str = "ingest into") -> str:
    where = f": {e.filename}" if e.filename else ""
    hint = _OS_HINTS.get(e.errno, "fix the cause and run again")
    return f"cannot {doing} {store.root}: {e.strerror or e}{where}; {hint} ({_state(store)})"
