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

import errno
import os
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import orjson

from warehouse import urlpaths
from warehouse.errors import LeaseLost, LockedError, NotASnapshot, ObjectStoreError, StorageError
from warehouse.filesystems import FileSystems
from warehouse.store import lease as leases
from warehouse.store import remote_root
from warehouse.store.files import create_if_absent, fsync, not_a_link, open_regular, rmdir_if_empty
from warehouse.store.lease import Lease, holder_of
from warehouse.store.remote_root import RootURL
from warehouse.store.snapshots import RUN_ID, SnapshotRecord, committed_meanwhile, new_run_id

STATE_DIR = ".warehouse"
SNAPSHOTS = "snapshots"
#: where a damaged snapshot is set aside (``Store.set_aside``), under the state folder
DAMAGED = "damaged"
LEGACY_MANIFEST = "manifest.json"


class Store:
    """A warehouse root: a local directory, or (``RemoteStore``) a URL on object storage."""

    def __new__(cls, root: str | os.PathLike = ".", filesystems: FileSystems | None = None):
        if cls is Store and isinstance(root, str) and urlpaths.is_url(root):
            return super().__new__(RemoteStore)
        return super().__new__(cls)

    #: the root is on object storage (no flock, no fsync, no os.link: see ``RemoteStore``)
    remote = False

    def __init__(self, root: str | os.PathLike, filesystems: FileSystems | None = None):
        self.filesystems = filesystems or FileSystems.for_path(root)  # the run's; else the environment's options
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
        try:
            self._create(self.state_dir / SNAPSHOTS / f"{record.number}.json",
                         orjson.dumps(record.to_json(), option=orjson.OPT_INDENT_2))
        except FileExistsError:
            raise committed_meanwhile(self, record.number) from None

    def _create(self, path, data: bytes) -> None:
        """Write ``data`` at ``path`` unless something is there (FileExistsError): the commit point."""
        not_a_link(self.state_dir)
        create_if_absent(path, data)

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
                fd = open_regular(path, os.O_RDWR | os.O_CREAT)
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
                rmdir_if_empty(d)  # a table folder the run made and left empty
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
        rmdir_if_empty(self.state_dir / SNAPSHOTS)
        rmdir_if_empty(self.state_dir)
        if created is None:
            return
        d = str(self.root)
        while len(d) >= len(created) and d.startswith(created):
            rmdir_if_empty(Path(d))
            d = os.path.dirname(d)




# --- a root on object storage ------------------------------------------------------------------




class RemoteStore(Store):
    """A warehouse under a URL (``s3://bucket/prefix``): the same layout, written through ``remote_root``.

    * the snapshot commit point is a conditional put (``remote_root.create_object``: S3 ``If-None-Match``);
    * the writer lock is a *lease*: the object ``.warehouse/lock`` created by the same conditional
      put, holding the holder, its run and an expiry, renewed while the run lasts and released at
      its end; a lease past its expiry (a writer that died) is taken over (docs/storage.md);
    * nothing is fsync'ed (a put is durable once it returns).
    """

    remote = True
    _lease: "Lease | None" = None

    def __init__(self, root: str, filesystems: FileSystems | None = None):
        self.filesystems = filesystems or FileSystems.for_path(root)
        self.root = RootURL(urlpaths.normpath(root), self.filesystems)

    # --- snapshots ---------------------------------------------------------

    def snapshot_numbers(self) -> list[int]:
        names = [n for n, _ in remote_root.list_objects(self.filesystems, self.state_dir / SNAPSHOTS)]
        return sorted(int(n[:-5]) for n in names if n.endswith(".json") and n[:-5].isdigit())

    def legacy(self) -> bool:
        return False  # a warehouse of the layout before Delta tables was never on object storage

    def _check_root_without_snapshots(self) -> None:
        pass  # a prefix is never a file

    def _snapshot_bytes(self, where, number: int) -> bytes:
        data = self.filesystems.read(where)
        if data is None:
            raise StorageError(f"{where}: snapshot {number} is gone")
        return data

    def set_aside(self, number: int) -> str:
        src = self.state_dir / SNAPSHOTS / f"{number}.json"
        data = self.filesystems.read(src)
        dst = self.state_dir / DAMAGED / f"{number}-{new_run_id()}.json"
        if data is not None:
            remote_root.create_object(self.filesystems, dst, data)
            remote_root.delete_object(self.filesystems, src)
        return str(dst)

    def _create(self, path, data: bytes) -> None:
        remote_root.create_object(self.filesystems, path, data)  # a conditional put (S3 If-None-Match)

    # --- tables ------------------------------------------------------------

    def table_uri(self, table: str) -> str:
        return self.root / table  # a RootURL: whatever it is handed to reaches the root with its options

    def abspath(self, rel: str) -> str:
        return self.root / rel

    def rel(self, abspath: str) -> str:
        return abspath[len(self.root) + 1:]

    def data_path(self, table: str, name: str) -> str:
        return self.root / table / name  # no folders on a bucket: the put makes the key

    def table_dirs(self, names: set[str] | None = None) -> list[RootURL]:
        out = []
        for name in sorted(remote_root.list_folders(self.filesystems, self.root)):
            if name.startswith(".") or (names is not None and name not in names):
                continue
            d = self.root / name
            folders, objects = remote_root.list_entries(self.filesystems, d)  # one listing answers both questions
            if "_delta_log" in folders or any(RUN_ID.match(n) for n in objects):
                out.append(d)
        return out

    def run_files(self, table_dir: str) -> list[str]:
        """The data files directly in a table folder (names)."""
        return [n for n, _ in remote_root.list_objects(self.filesystems, table_dir)]

    def remove_tree(self, url: str) -> None:
        for name, _ in remote_root.list_objects(self.filesystems, url, recursive=True):
            remote_root.delete_object(self.filesystems, f"{url}/{name}")

    # --- writing -----------------------------------------------------------

    @contextmanager
    def lock(self, *, wait: bool = True, announce=None):
        """The writer's lease on the root (``Lease``); renewed by a thread while the block runs."""
        import threading

        lease = Lease(self.filesystems, self.lock_path, str(self.root))
        announced = False
        while (other := lease.try_take()) is not None:
            holder = holder_of(other)
            if not wait:
                raise LockedError(
                    f"{self.root} is being written by {holder}; run again once it has finished, or without "
                    f"--no-wait to wait for it (a lease nobody renews is taken over after {leases.LEASE_SECONDS:g} s; if "
                    f"no writer runs, `aws s3 rm {self.lock_path}` clears it)"
                )
            if announce and not announced:
                announce(f"waiting for the ingest holding {self.lock_path} ({holder}) to finish...")
                announced = True
            time.sleep(leases.LEASE_POLL_SECONDS)
        stop = threading.Event()

        def renew() -> None:
            while not stop.wait(leases.LEASE_SECONDS / 3):
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
                      f"within {leases.LEASE_SECONDS:g} s", file=sys.stderr, flush=True)

    def check_lock(self) -> None:
        if self._lease is not None:
            self._lease.check()

    def discard_run(self, run_id: str) -> None:
        for d in self.table_dirs():
            for name in self.run_files(d):
                if name.startswith(run_id):
                    remote_root.delete_object(self.filesystems, f"{d}/{name}")

    def forget(self, *, created: str | None) -> None:
        """After a run that committed nothing into a root with no warehouse: its lease deleted, as a local
        root's lock file is (the run's files are gone already, ``discard_run``; a prefix is no folder)."""
        if self._lease is not None and not self.exists():
            self._lease.forget()
