"""Where the warehouse keeps its files: the layout of the root, the lock, and the warehouse snapshots.

Layout under the root (docs/reading.md describes it for outside readers)::

    <table>/                  a Delta Lake table per declared table (and path_fields):
      _delta_log/               its commit log (written by ``deltalake``, see ``delta.py``)
      <run id>-b00001.parquet   data files; each name starts with the id of the run that wrote it
    .warehouse/               the project's own state, nothing else of it anywhere
      lock                      held by the run that is writing (ingest, compact)
      snapshots/<N>.json        warehouse snapshot N: each table's Delta version, what the run did
      damaged/<N>.json          a damaged snapshot the next writer set aside (kept for a look, never read)

Delta commits one table at a time; a *warehouse snapshot* pins every table's version at
once, and is written (``create_if_absent``) only after every table of a run committed.
``warehouse.connect`` reads the tables as a snapshot pins them, so a run that dies
between two table commits is invisible to it; the next run repairs the tables
(``commit.repair``). A root is a local directory (``Store``) or an ``s3://`` URL
(``RemoteStore``: snapshots and the writer's lease by conditional puts, through ``remote.py``).
"""

from __future__ import annotations

import datetime as dt
import errno
import os
import re
import secrets
import stat
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from warehouse import remote
from warehouse.errors import LeaseLost, LockedError, NotASnapshot, ObjectStoreError, StorageError

STATE_DIR = ".warehouse"
SNAPSHOTS = "snapshots"
#: where a damaged snapshot is set aside (``Store.set_aside``), under the state folder
DAMAGED = "damaged"
#: the version of this layout, in every snapshot; the layout before it (``manifest.json``) is 1
FORMAT_VERSION = 2
LEGACY_MANIFEST = "manifest.json"
#: a run id: UTC time to the millisecond and 4 random hex digits; every file of a run starts with it
RUN_ID = re.compile(r"^\d{8}T\d{9}Z-[0-9a-f]{4}")


def new_run_id() -> str:
    now = dt.datetime.now(dt.timezone.utc)
    return now.strftime("%Y%m%dT%H%M%S") + f"{now.microsecond // 1000:03d}Z-{secrets.token_hex(2)}"


@dataclass
class SnapshotRecord:
    """One warehouse snapshot: what ``.warehouse/snapshots/<number>.json`` holds.

    ``tables``: ``{table: {"version": Delta version, "columns": [columns some live file has]}}``
    (the columns let the views read files written before a column was declared).
    ``did``: what the run did (``files_ingested``, ``files_replaced``, ``files_pruned``,
    ``rows_added`` / ``rows_removed`` per table), for ``warehouse history``.
    """

    number: int = 0
    time: str = ""
    run_id: str | None = None
    operation: str = "ingest"
    did: dict = field(default_factory=dict)
    tables: dict[str, dict] = field(default_factory=dict)
    #: the SHA-256 of the SQL ``path_fields`` was materialised with
    path_fields_sql: str | None = None
    #: run options remembered between runs (e.g. the tokenizer directory)
    settings: dict = field(default_factory=dict)

    def version(self, table: str) -> int | None:
        t = self.tables.get(table)
        return None if t is None else t["version"]

    def to_json(self) -> dict:
        return {
            "format_version": FORMAT_VERSION, "snapshot": self.number, "time": self.time, "run_id": self.run_id,
            "operation": self.operation, "did": self.did, "tables": self.tables,
            "path_fields_sql": self.path_fields_sql, "settings": self.settings,
        }

    @classmethod
    def from_json(cls, d, where: str, number: int) -> "SnapshotRecord":
        """The snapshot in ``d`` (the parsed file ``where``, snapshot ``number``); a file that is not one
        (written by hand or by something else, or damaged) raises ``NotASnapshot`` saying what is wrong."""
        if isinstance(d, dict) and isinstance(d.get("format_version"), int) and d["format_version"] > FORMAT_VERSION:
            raise StorageError(
                f"{where}: warehouse format {d['format_version']!r}, this version reads {FORMAT_VERSION}; "
                "upgrade the warehouse package"
            )
        wrong = _not_a_snapshot(d, number)
        if wrong:
            raise NotASnapshot(where, number, wrong)
        return cls(number=d["snapshot"], time=d["time"], run_id=d.get("run_id"), operation=d.get("operation", ""),
                   did=d.get("did", {}), tables=d["tables"], path_fields_sql=d.get("path_fields_sql"),
                   settings=d.get("settings", {}))


#: what a table may be called in a snapshot: a name, never a path (the tables are folders of the root)
TABLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
#: the fields of a snapshot and the types they hold (None: may be null)
_FIELDS = {"time": (str,), "run_id": (str, type(None)), "operation": (str,), "did": (dict,),
           "path_fields_sql": (str, type(None)), "settings": (dict,)}


def _not_a_snapshot(d, number: int) -> str | None:
    """What makes ``d`` no snapshot ``number`` (None: it is one)."""
    if not isinstance(d, dict):
        return f"holds a JSON {type(d).__name__.replace('NoneType', 'null').replace('dict', 'object')}, not a snapshot object"
    if d.get("format_version") != FORMAT_VERSION:
        return f"its format_version is {d.get('format_version')!r}, not {FORMAT_VERSION}"
    if d.get("snapshot") != number or type(d.get("snapshot")) is not int:
        return f"it says it is snapshot {d.get('snapshot')!r}, not {number}"
    for name, types in _FIELDS.items():
        if name in d and not isinstance(d[name], types):
            return f"its {name!r} is {d[name]!r}"
    if "time" not in d:
        return "it has no 'time'"
    tables = d.get("tables")
    if not isinstance(tables, dict):
        return "it has no 'tables' object" if tables is None else f"its 'tables' is {type(tables).__name__}, not an object"
    for name, pin in tables.items():
        if not TABLE_NAME.match(name):
            return f"it names a table {name!r}, which is no table name (a table is a folder of the root, named by a word)"
        version = pin.get("version") if isinstance(pin, dict) else None
        if type(version) is not int or version < 0:
            return f"its table {name} has version {version!r}, not a Delta version (a whole number from 0)"
        columns = pin.get("columns", [])
        if not isinstance(columns, list) or not all(isinstance(c, str) for c in columns):
            return f"its table {name} has columns {columns!r}, not a list of names"
    return None


class Store:
    """A warehouse root: a local directory, or (``RemoteStore``) a URL on object storage."""

    def __new__(cls, root: str | os.PathLike = "."):
        if cls is Store and isinstance(root, str) and remote.is_url(root):
            return super().__new__(RemoteStore)
        return super().__new__(cls)

    #: the root is on object storage (no flock, no fsync, no os.link: see ``RemoteStore``)
    remote = False

    def __init__(self, root: str | os.PathLike):
        self.root = Path(os.path.abspath(root))

    @property
    def state_dir(self) -> Path:
        return self.root / STATE_DIR

    @property
    def lock_path(self) -> Path:
        return self.state_dir / "lock"

    # --- snapshots ---------------------------------------------------------

    def snapshot_numbers(self) -> list[int]:
        d = self.state_dir / SNAPSHOTS
        try:
            names = os.listdir(d)
        except (FileNotFoundError, NotADirectoryError):  # nothing there: no warehouse (yet)
            return []
        return sorted(int(n[:-5]) for n in names if n.endswith(".json") and n[:-5].isdigit())

    def exists(self) -> bool:
        """A warehouse is here: at least one snapshot was committed."""
        return bool(self.snapshot_numbers())

    def legacy(self) -> bool:
        """A warehouse in the layout before Delta tables (``manifest.json``), waiting for its upgrade."""
        return (self.root / LEGACY_MANIFEST).is_file()

    def read_snapshot(self, number: int | None = None) -> SnapshotRecord:
        """Snapshot ``number`` (default: the latest); an empty record when there is none yet. A damaged one
        raises ``NotASnapshot`` saying what to do."""
        numbers = self.snapshot_numbers()
        latest = number is None
        if number is None:
            if not numbers:
                self._check_root_without_snapshots()
                return SnapshotRecord()
            number = numbers[-1]
        elif number not in numbers:
            have = f"{numbers[0]} to {numbers[-1]}" if numbers else "none"
            raise StorageError(f"{self.root}: no snapshot {number} (snapshots: {have}; `warehouse history` lists them)")
        try:
            return self._read_snapshot(number)
        except NotASnapshot as e:
            raise NotASnapshot(e.path, e.number, e.what, self._damaged_remedy(number, numbers, latest)) from None

    def _damaged_remedy(self, number: int, numbers: list[int], latest: bool) -> str:
        if not latest and number != numbers[-1]:
            return f"`--as-of {number}` cannot read it; the other snapshots are readable"
        earlier = self.last_readable(below=number)
        if earlier is None:
            return "no snapshot before it is readable: ingest the sources into a new --root"
        return (f"the next `warehouse ingest` or `compact` sets it aside (into {STATE_DIR}/{DAMAGED}/) and goes back "
                f"to snapshot {earlier}, which `--as-of {earlier}` reads now")

    def last_readable(self, *, below: int) -> int | None:
        """The latest snapshot before ``below`` that is readable, if any."""
        for n in reversed([n for n in self.snapshot_numbers() if n < below]):
            try:
                self._read_snapshot(n)
                return n
            except NotASnapshot:
                continue
        return None

    def set_aside(self, number: int) -> str:
        """Move damaged snapshot ``number`` out of the snapshots, into ``.warehouse/damaged/`` (kept for a look,
        never read); where it went. Call with the lock held."""
        src = self.state_dir / SNAPSHOTS / f"{number}.json"
        for n in range(1, 10**6):
            dst = self.state_dir / DAMAGED / (f"{number}.json" if n == 1 else f"{number}-{n}.json")
            if not os.path.lexists(dst):
                break
        dst.parent.mkdir(parents=True, exist_ok=True)
        os.rename(src, dst)
        fsync(dst.parent)
        fsync(src.parent)
        return str(dst)

    def _read_snapshot(self, number: int) -> SnapshotRecord:
        where = self.state_dir / SNAPSHOTS / f"{number}.json"
        try:
            parsed = orjson.loads(self._snapshot_bytes(where, number))
        except orjson.JSONDecodeError as e:
            raise NotASnapshot(str(where), number, f"not JSON ({e})") from None
        return SnapshotRecord.from_json(parsed, str(where), number)

    def _check_root_without_snapshots(self) -> None:
        if self.root.exists() and not self.root.is_dir():
            raise StorageError(f"{self.root}: not a directory")

    def _snapshot_bytes(self, where, number: int) -> bytes:
        return where.read_bytes()

    def snapshots(self, damaged: list[NotASnapshot] | None = None) -> list[SnapshotRecord]:
        """Every snapshot, oldest first. With ``damaged`` (a list), a damaged one is left out and its error
        added to the list; without, it raises."""
        out = []
        for n in self.snapshot_numbers():
            try:
                out.append(self.read_snapshot(n))
            except NotASnapshot as e:
                if damaged is None:
                    raise
                damaged.append(e)
        return out

    def write_snapshot(self, record: SnapshotRecord) -> None:
        """Commit ``record`` as snapshot ``record.number``: the warehouse's commit point."""
        not_a_link(self.state_dir)
        try:
            create_if_absent(self.state_dir / SNAPSHOTS / f"{record.number}.json",
                             orjson.dumps(record.to_json(), option=orjson.OPT_INDENT_2))
        except FileExistsError:
            raise _committed_meanwhile(self, record.number) from None

    # --- tables ------------------------------------------------------------

    def table_uri(self, table: str) -> str:
        return str(self.root / table)

    def abspath(self, rel: str) -> str:
        return str(self.root / rel)

    def rel(self, abspath: str) -> str:
        return os.path.relpath(abspath, self.root)

    def data_path(self, table: str, name: str) -> str:
        """Absolute path for a new data file of ``table`` (its folder is created)."""
        d = self.root / table
        d.mkdir(parents=True, exist_ok=True)
        return str(d / name)

    def table_dirs(self, names: set[str] | None = None) -> list[Path]:
        """The folders under the root that hold a Delta table or files of a run (of the tables ``names``)."""
        out = []
        if not self.root.is_dir():
            return out
        for d in sorted(self.root.iterdir()):
            if d.name.startswith(".") or not d.is_dir() or (names is not None and d.name not in names):
                continue
            if (d / "_delta_log").is_dir() or any(RUN_ID.match(n) for n in os.listdir(d)):
                out.append(d)
        return out

    # --- writing -----------------------------------------------------------

    @contextmanager
    def lock(self, *, wait: bool = True, announce=None):
        """Exclusive writer lock. A second ingest waits (or raises LockedError when wait=False).

        A run that leaves no trace in a new root deletes the lock file it holds
        (``forget``), so a lock is kept only if, once acquired, the file it was taken on
        is still the one at ``.lock``; otherwise it is taken again.
        """
        path = self.lock_path
        while True:
            self.root.mkdir(parents=True, exist_ok=True)  # (an error here names the root, not its state folder)
            try:
                path.parent.mkdir(exist_ok=True)
                not_a_link(path.parent)
                fd = _open_regular(path, os.O_RDWR | os.O_CREAT)
            except FileNotFoundError:  # the root was removed (forget) since mkdir: make it again
                continue
            try:
                self._flock(fd, path, wait, announce)
                now = os.stat(path)
            except FileNotFoundError:
                os.close(fd)
                continue
            except BaseException:
                os.close(fd)
                raise
            held = os.fstat(fd)
            if (now.st_dev, now.st_ino) == (held.st_dev, held.st_ino):
                break
            os.close(fd)
        self._held = (held.st_dev, held.st_ino)
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"pid {os.getpid()} since {time.strftime('%Y-%m-%d %H:%M:%S')}".encode(), 0)
            yield
        finally:
            self._held = None
            try:
                os.ftruncate(fd, 0)
            except OSError:
                pass
            os.close(fd)  # closing releases the flock

    #: (st_dev, st_ino) of the lock file this process holds, while it holds it
    _held: tuple[int, int] | None = None

    def _lock_is_ours(self) -> bool:
        try:
            now = os.stat(self.lock_path, follow_symlinks=False)
        except FileNotFoundError:
            return False
        return (now.st_dev, now.st_ino) == self._held

    def check_lock(self) -> None:
        """Before each commit step: raise LeaseLost if this run no longer holds the lock. The flock is
        held until the process ends, but on the file: one deleted or replaced at ``.warehouse/lock`` (by
        hand) lets a second writer take a new one meanwhile, so the run stops before its next commit
        step rather than commit over it. A remote root's lease can be lost too (``Lease``)."""
        if self._held is not None and not self._lock_is_ours():
            raise LeaseLost(
                f"{self.root}: the lock file {self.lock_path} was deleted or replaced while this run held it, so "
                "another writer may have started meanwhile: this run stopped before its next commit step, and "
                "nothing of it was committed (the next run repairs the tables); run again, and never delete "
                "the lock file while a writer runs"
            )

    def _flock(self, fd: int, path: Path, wait: bool, announce) -> None:
        import fcntl  # POSIX only: imported here so reading a warehouse works where there is no fcntl (Windows)

        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise
            holder = os.pread(fd, 200, 0).decode(errors="replace").strip() or "another process"
            if not wait:
                raise LockedError(
                    f"{self.root} is being written by {holder}; run again once it has finished, "
                    "or without --no-wait to wait for it"
                ) from None
            if announce:
                announce(f"waiting for the ingest holding {path} ({holder}) to finish...")
            fcntl.flock(fd, fcntl.LOCK_EX)

    def discard_run(self, run_id: str) -> None:
        """Delete every data file a run wrote (its names start with its id), and folders left empty.

        Call with the lock held, once nothing writes for the run any more, and only for a
        run that did not commit: what an unfinished run wrote is gone at once.
        """
        for d in self.table_dirs():
            for f in d.glob(f"{run_id}*"):
                f.unlink(missing_ok=True)
        for d in self.root.iterdir() if self.root.is_dir() else ():
            if not d.name.startswith(".") and d.is_dir():
                _rmdir_if_empty(d)  # a table folder the run made and left empty
        for stale in (self.state_dir / SNAPSHOTS).glob(".*.tmp"):
            stale.unlink(missing_ok=True)

    def forget(self, *, created: str | None) -> None:
        """After a run that committed nothing into a root with no warehouse: remove the lock
        file (still held: a waiting run notices and takes a new one), the state folder, and the
        folders this run created, from the root up to ``created``, as long as nothing else is in them."""
        if self.exists() or self.legacy():
            return
        if self._held is None or self._lock_is_ours():  # never the lock file of a writer that came in meanwhile
            self.lock_path.unlink(missing_ok=True)
        _rmdir_if_empty(self.state_dir / SNAPSHOTS)
        _rmdir_if_empty(self.state_dir)
        if created is None:
            return
        d = str(self.root)
        while len(d) >= len(created) and d.startswith(created):
            _rmdir_if_empty(Path(d))
            d = os.path.dirname(d)


def create_if_absent(path: Path, data: bytes) -> None:
    """Write ``data`` at ``path`` in one step, unless ``path`` exists (then FileExistsError).

    The one conditional write of the warehouse: a snapshot is created whole or not at all,
    and never replaces another (on object storage this is a conditional put).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    not_a_link(path.parent)
    tmp = path.parent / f".{path.name}.{os.getpid()}.tmp"
    tmp.unlink(missing_ok=True)  # a stale one of a dead run with this pid, or a link planted there (never followed)
    with open(_open_regular(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL), "wb") as f:
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


def _open_regular(path: Path, flags: int) -> int:
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


def _committed_meanwhile(store: "Store", number: int) -> "LeaseLost":
    """Snapshot ``number`` exists already: another writer committed it while this run held the lock (which
    only a lock file deleted by hand, or a lease taken over, allows). The tables are that writer's now: no repair."""
    return LeaseLost(
        f"{store.root}: snapshot {number} was committed by another writer while this run held the lock (was "
        f"{store.lock_path} deleted?); this run's snapshot was not written and nothing of it is in the warehouse "
        "(the next run repairs the tables): run again"
    )


def _rmdir_if_empty(path: Path) -> None:
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



# --- a root on object storage ------------------------------------------------------------------

#: how long a writer's lease on a remote root lasts without renewal; renewed every third of it
LEASE_SECONDS = 60.0
#: how often a waiting writer looks at the lease again
LEASE_POLL_SECONDS = 1.0


def _now() -> float:
    """The clock leases are judged by (one name, so tests can drive time without sleeping)."""
    return time.time()


class Lease:
    """A writer's lease on a remote root: the object ``.warehouse/lock``.

    It holds ``{"holder", "token", "expires"}`` (or ``"released": true``). Every change is a
    conditional put on what was read, so two writers can never both believe they hold it:

    * taking it: create the object if there is none (``If-None-Match: *``), else replace a
      released or expired lease only if it is still the version read (``If-Match: <ETag>``);
      of two takers of one stale lease exactly one succeeds. Expired: past its expiry, or seen
      unchanged for longer than ``LEASE_SECONDS`` by the taker's clock (``_unrenewed``: an
      expiry decades ahead, from a writer with a wrong clock, must not hold the root for ever);
    * renewing (a thread, every third of ``LEASE_SECONDS``, and before each commit step:
      ``check``): replace it only if it is still the version this run last wrote;
    * releasing: replace it with a released lease, on the same condition. The object stays:
      object_store (obstore) has no conditional delete, and an unconditional one could delete
      the lease of a writer that took over meanwhile. Only a run that leaves no warehouse deletes
      it (``forget``), right after renewing it: nobody can take it over for ``LEASE_SECONDS`` then.

    A renewal that finds another version means the lease was taken over: ``lost`` says by
    whom, and ``check`` raises LeaseLost.
    """

    def __init__(self, url: str, root: str):
        import socket
        import threading

        self.url, self.root = url, root
        self.me = {"holder": f"pid {os.getpid()} on {socket.gethostname()}", "token": secrets.token_hex(8)}
        self.e_tag: str | None = None
        self.lost: str | None = None  # who holds it now, once a renewal found it taken over
        self._mutex = threading.Lock()  # the renewing thread and check() take turns
        #: another writer's lease as this one last read it (bytes and ETag), and since when it has not changed
        self._watched: tuple[tuple[bytes, str | None], float] | None = None

    def _body(self, **extra) -> bytes:
        return orjson.dumps({**self.me, "expires": _now() + LEASE_SECONDS, **extra})

    def try_take(self) -> dict | None:
        """Take the lease if it is free, released or expired (None); else the holder's lease as read."""
        try:
            self.e_tag = remote.create_object(self.url, self._body())
            return None
        except FileExistsError:
            pass
        found = remote.read_versioned(self.url)
        if found is None:
            return self.try_take()  # deleted since we tried to create it (by hand, or an older version): again
        if self._adopt(found):
            return None
        other = _parse_lease(found[0])
        if other.get("released") or other.get("expires", 0) < _now() or self._unrenewed(found):
            # A released lease, or one its writer stopped renewing (it died). Take it over.
            if self.take(found[1]):
                return None
            found = remote.read_versioned(self.url)  # another taker won: say who holds it now
            other = _parse_lease(found[0]) if found else {}
        return other

    def _unrenewed(self, found: tuple[bytes, str | None]) -> bool:
        """The lease as read has not changed for longer than a lease lasts, by this writer's own clock.

        A lease's expiry is the holder's clock's: a writer whose clock is decades fast writes a lease
        that never expires by ours, and would block every writer for ever. A live holder renews every
        third of ``LEASE_SECONDS``, whatever its clock, so a lease unchanged for longer is nobody's."""
        now = _now()
        if self._watched is None or self._watched[0] != found:
            self._watched = (found, now)
        return now - self._watched[1] > LEASE_SECONDS

    def take(self, e_tag: str | None) -> bool:
        """Replace the lease read as version ``e_tag`` with ours; False when it changed since."""
        try:
            self.e_tag = remote.replace_object(self.url, self._body(), e_tag)
            return True
        except remote.Superseded:
            return False

    def _adopt(self, found: tuple[bytes, str | None] | None) -> bool:
        """Whether the lease as read (``read_versioned``) is this run's live lease; if so its ETag is
        the one later puts are conditional on. A put of ours can land while its reply is lost (a
        timeout; or the client retried it and the retry was refused because the first attempt had
        landed): the object is then ours under an ETag we never saw."""
        if found is None:
            return False
        lease = _parse_lease(found[0])
        if lease.get("token") != self.me["token"] or lease.get("released"):
            return False
        self.e_tag = found[1]
        return True

    def _replace(self, body: bytes) -> str | None:
        """Replace our lease with ``body`` if it is still ours: None, else who holds it now."""
        while True:
            tried = self.e_tag
            try:
                self.e_tag = remote.replace_object(self.url, body, tried)
                return None
            except remote.Superseded:
                found = remote.read_versioned(self.url)
                if found is not None and found[1] != tried and self._adopt(found):
                    continue  # ours under an ETag we never saw: the put again, on that one
                return _parse_lease(found[0]).get("holder", "another writer") if found else "nobody (it was deleted)"

    def renew(self) -> None:
        """Push the expiry ``LEASE_SECONDS`` ahead, if the lease is still ours."""
        with self._mutex:
            if self.lost is None:
                self.lost = self._replace(self._body())

    def check(self) -> None:
        """Before a commit step: renew now; LeaseLost when the lease is another writer's."""
        self.renew()
        if self.lost is not None:
            raise LeaseLost(
                f"{self.root}: this run's lease ({self.url}) was taken over by {self.lost}: the run was not heard "
                f"from for over {LEASE_SECONDS:g} s (paused, or cut off from the store), so the root was given to "
                "another writer; nothing of this run was committed (the new holder repairs the tables): run again"
            )

    def forget(self) -> None:
        """Delete the lease, if it is still ours: renewed first, so for ``LEASE_SECONDS`` nobody can have
        taken it over, and the unconditional delete is of this run's lease. Nothing is renewed or
        released after it (a writer waiting creates its own)."""
        with self._mutex:
            if self.lost is None:
                self.lost = self._replace(self._body())
            if self.lost is None:
                remote.delete_object(self.url)
                self.lost = "nobody (this run deleted it, leaving no warehouse)"

    def release(self) -> None:
        """Mark the lease released, if it is still ours (taken over at the very end, it is the new holder's)."""
        with self._mutex:
            if self.lost is None:
                self._replace(self._body(released=True, expires=0))


def _holder(lease: dict) -> str:
    """Who holds a lease and until when, as a message says it; an expiry further ahead than a lease
    lasts is said to be wrong (the holder's clock, or a lease written by hand)."""
    holder, expires = lease.get("holder", "another writer"), lease.get("expires", 0)
    try:
        when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(expires))
    except (OverflowError, OSError, ValueError):
        when = f"at {expires!r}"
    ahead = expires - _now()
    if ahead <= LEASE_SECONDS + LEASE_POLL_SECONDS:
        return f"{holder}, lease expires {when}"
    return (f"{holder}, lease expires {when}: {_span(ahead)} ahead, more than a lease lasts ({LEASE_SECONDS:g} s), so "
            "the holder's clock is wrong or the lease was written by hand; it is taken over once it has not "
            "changed for that long")


def _span(seconds: float) -> str:
    if seconds >= 1000 * 365 * 86400:
        return "over 1,000 years"
    for unit, size in (("years", 365 * 86400), ("days", 86400), ("hours", 3600), ("minutes", 60)):
        if seconds >= 2 * size:
            return f"{seconds / size:.0f} {unit}"
    return f"{seconds:.0f} s"


def _parse_lease(data: bytes) -> dict:
    """The lease as read; one that is not a lease (not JSON, no numeric expiry: written by hand or by
    something else) counts as expired, so a writer takes it over instead of failing on it."""
    try:
        lease = orjson.loads(data)
    except orjson.JSONDecodeError:
        lease = None
    if not isinstance(lease, dict):
        return {"holder": "an unreadable lease", "expires": 0}
    expires = lease.get("expires")
    if isinstance(expires, bool) or not isinstance(expires, (int, float)):
        lease["expires"] = 0
    return lease


class RootURL(str):
    """A remote root as the rest of the code holds a root: text that joins with ``/``."""

    def __truediv__(self, name: str) -> "RootURL":
        return RootURL(f"{self}/{name}")

    @property
    def name(self) -> str:
        return self.rsplit("/", 1)[-1]

    def exists(self) -> bool:
        """An object, or a prefix holding objects, is at this URL (one request)."""
        return remote.kind(self) is not None

    def is_dir(self) -> bool:
        """A prefix holding objects (or the bucket itself) is at this URL: not a single object."""
        return remote.kind(self) == "dir"


class RemoteStore(Store):
    """A warehouse under a URL (``s3://bucket/prefix``): the same layout, written through ``remote``.

    * the snapshot commit point is a conditional put (``remote.create_object``: S3 ``If-None-Match``);
    * the writer lock is a *lease*: the object ``.warehouse/lock`` created by the same conditional
      put, holding the holder, its run and an expiry, renewed while the run lasts and released at
      its end; a lease past its expiry (a writer that died) is taken over (docs/storage.md);
    * nothing is fsync'ed (a put is durable once it returns).
    """

    remote = True
    _lease: "Lease | None" = None

    def __init__(self, root: str):
        self.root = RootURL(remote.normpath(root))

    # --- snapshots ---------------------------------------------------------

    def snapshot_numbers(self) -> list[int]:
        names = [n for n, _ in remote.list_objects(self.state_dir / SNAPSHOTS)]
        return sorted(int(n[:-5]) for n in names if n.endswith(".json") and n[:-5].isdigit())

    def legacy(self) -> bool:
        return False  # a warehouse of the layout before Delta tables was never on object storage

    def _check_root_without_snapshots(self) -> None:
        pass  # a prefix is never a file

    def _snapshot_bytes(self, where, number: int) -> bytes:
        data = remote.read_object(where)
        if data is None:
            raise StorageError(f"{where}: snapshot {number} is gone")
        return data

    def set_aside(self, number: int) -> str:
        src = self.state_dir / SNAPSHOTS / f"{number}.json"
        data = remote.read_object(src)
        dst = self.state_dir / DAMAGED / f"{number}-{new_run_id()}.json"
        if data is not None:
            remote.create_object(dst, data)
            remote.delete_object(src)
        return str(dst)

    def write_snapshot(self, record: SnapshotRecord) -> None:
        try:
            remote.create_object(self.state_dir / SNAPSHOTS / f"{record.number}.json",
                                 orjson.dumps(record.to_json(), option=orjson.OPT_INDENT_2))
        except FileExistsError:
            raise _committed_meanwhile(self, record.number) from None

    # --- tables ------------------------------------------------------------

    def table_uri(self, table: str) -> str:
        return str(self.root / table)

    def abspath(self, rel: str) -> str:
        return f"{self.root}/{rel}"

    def rel(self, abspath: str) -> str:
        return abspath[len(self.root) + 1:]

    def data_path(self, table: str, name: str) -> str:
        return f"{self.root}/{table}/{name}"  # no folders on a bucket: the put makes the key

    def table_dirs(self, names: set[str] | None = None) -> list[RootURL]:
        out = []
        for name in sorted(remote.list_folders(self.root)):
            if name.startswith(".") or (names is not None and name not in names):
                continue
            d = self.root / name
            folders, objects = remote.list_entries(d)  # one listing answers both questions
            if "_delta_log" in folders or any(RUN_ID.match(n) for n in objects):
                out.append(d)
        return out

    def run_files(self, table_dir: str) -> list[str]:
        """The data files directly in a table folder (names)."""
        return [n for n, _ in remote.list_objects(table_dir)]

    def remove_tree(self, url: str) -> None:
        for name, _ in remote.list_objects(url, recursive=True):
            remote.delete_object(f"{url}/{name}")

    # --- writing -----------------------------------------------------------

    @contextmanager
    def lock(self, *, wait: bool = True, announce=None):
        """The writer's lease on the root (``Lease``); renewed by a thread while the block runs."""
        import threading

        lease = Lease(self.lock_path, str(self.root))
        announced = False
        while (other := lease.try_take()) is not None:
            holder = _holder(other)
            if not wait:
                raise LockedError(
                    f"{self.root} is being written by {holder}; run again once it has finished, or without "
                    f"--no-wait to wait for it (a lease nobody renews is taken over after {LEASE_SECONDS:g} s; if "
                    f"no writer runs, `aws s3 rm {self.lock_path}` clears it)"
                )
            if announce and not announced:
                announce(f"waiting for the ingest holding {self.lock_path} ({holder}) to finish...")
                announced = True
            time.sleep(LEASE_POLL_SECONDS)
        stop = threading.Event()

        def renew() -> None:
            while not stop.wait(LEASE_SECONDS / 3):
                try:
                    lease.renew()
                except Exception:  # noqa: BLE001 - the store unreachable for a moment: the next renewal tries again
                    pass

        renewer = threading.Thread(target=renew, name="warehouse-lease", daemon=True)
        self._lease = lease
        try:
            renewer.start()
            yield
        finally:
            self._lease = None
            stop.set()
            if renewer.ident is not None:
                renewer.join()
            try:
                lease.release()
            except ObjectStoreError as e:
                # The run's outcome stands (its commit, or its own error): a lease left unreleased only
                # makes the next writer wait until it lapses.
                print(f"warning: {e}; the lease was not released: the next writer waits until it lapses, "
                      f"within {LEASE_SECONDS:g} s", file=sys.stderr, flush=True)

    def check_lock(self) -> None:
        if self._lease is not None:
            self._lease.check()

    def discard_run(self, run_id: str) -> None:
        for d in self.table_dirs():
            for name in self.run_files(d):
                if name.startswith(run_id):
                    remote.delete_object(f"{d}/{name}")

    def forget(self, *, created: str | None) -> None:
        """After a run that committed nothing into a root with no warehouse: its lease deleted, as a local
        root's lock file is (the run's files are gone already, ``discard_run``; a prefix is no folder)."""
        if self._lease is not None and not self.exists():
            self._lease.forget()
