"""Where the warehouse keeps its files, and how a run becomes visible at once.

Layout under the root::

    manifest.json             the list of live Parquet files per table (the commit point)
    data/<table>/<file>.parquet
    .lock                     held by the ingest that is writing

A run writes new Parquet files next to the live ones, under names no manifest
mentions yet, then replaces ``manifest.json`` with one atomic rename. Readers
read the manifest once, so they see the old state or the new one, never a mix;
a crash before the rename leaves orphan files that the next run deletes.
Files a commit stops using are *retired*: kept for ``RETIRE_GRACE_S`` so open
connections can finish their queries, then deleted.
"""

from __future__ import annotations

import datetime as dt
import errno
import os
import secrets
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from .errors import LockedError, StorageError, UsageError

MANIFEST = "manifest.json"
FORMAT_VERSION = 1
RETIRE_GRACE_S = 3600.0


def new_run_id() -> str:
    now = dt.datetime.now(dt.timezone.utc)
    return now.strftime("%Y%m%dT%H%M%S") + f"{now.microsecond // 1000:03d}Z-{secrets.token_hex(2)}"


@dataclass
class FileEntry:
    """One live Parquet file: its path relative to the root, rows, the runs whose rows it holds, its columns."""

    path: str
    rows: int
    runs: list[str]
    columns: list[str]

    def to_json(self) -> dict:
        return {"path": self.path, "rows": self.rows, "runs": self.runs, "columns": self.columns}

    @classmethod
    def from_json(cls, d: dict) -> "FileEntry":
        return cls(d["path"], d["rows"], list(d["runs"]), list(d["columns"]))


@dataclass
class Manifest:
    version: int = 0
    last_run: str | None = None
    tables: dict[str, list[FileEntry]] = field(default_factory=dict)
    #: cached path_fields: {"path": ..., "sql_sha256": ...} or None
    path_fields: dict | None = None
    #: files no longer live: [{"path": ..., "retired_at": epoch seconds}]
    retired: list[dict] = field(default_factory=list)
    #: run options remembered between runs (e.g. the tokenizer directory)
    settings: dict = field(default_factory=dict)

    def files(self, table: str) -> list[FileEntry]:
        return self.tables.get(table, [])

    def to_bytes(self) -> bytes:
        return orjson.dumps(
            {
                "format_version": FORMAT_VERSION,
                "version": self.version,
                "last_run": self.last_run,
                "tables": {t: [f.to_json() for f in fs] for t, fs in self.tables.items()},
                "path_fields": self.path_fields,
                "retired": self.retired,
                "settings": self.settings,
            },
            option=orjson.OPT_INDENT_2,
        )

    @classmethod
    def from_bytes(cls, b: bytes, where: str) -> "Manifest":
        try:
            d = orjson.loads(b)
        except orjson.JSONDecodeError as e:
            raise StorageError(f"{where}: corrupt manifest ({e})") from None
        if d.get("format_version") != FORMAT_VERSION:
            raise StorageError(
                f"{where}: warehouse format {d.get('format_version')!r}, this version reads {FORMAT_VERSION}; "
                "re-ingest into a new --root"
            )
        return cls(
            version=d["version"],
            last_run=d.get("last_run"),
            tables={t: [FileEntry.from_json(f) for f in fs] for t, fs in d["tables"].items()},
            path_fields=d.get("path_fields"),
            retired=d.get("retired", []),
            settings=d.get("settings", {}),
        )


class Store:
    """A warehouse root on disk."""

    def __init__(self, root: str | os.PathLike):
        self.root = Path(os.path.abspath(root))

    # --- reading -----------------------------------------------------------

    def exists(self) -> bool:
        return (self.root / MANIFEST).is_file()

    def read_manifest(self) -> Manifest:
        p = self.root / MANIFEST
        try:
            return Manifest.from_bytes(p.read_bytes(), str(p))
        except FileNotFoundError:
            if self.root.is_dir() or not self.root.exists():
                return Manifest()  # a new, empty warehouse
            raise StorageError(f"{self.root}: not a directory") from None

    def abspath(self, rel: str) -> str:
        return str(self.root / rel)

    def live_files(self, manifest: Manifest, table: str) -> list[str]:
        return [self.abspath(f.path) for f in manifest.files(table)]

    # --- writing -----------------------------------------------------------

    def data_path(self, table: str, name: str) -> str:
        """Absolute path for a new file of ``table`` (its directory is created); relative form via ``rel``."""
        d = self.root / "data" / table
        d.mkdir(parents=True, exist_ok=True)
        return str(d / name)

    def rel(self, abspath: str) -> str:
        return os.path.relpath(abspath, self.root)

    def commit(self, manifest: Manifest) -> None:
        """Make ``manifest`` the live state with one atomic rename."""
        self.root.mkdir(parents=True, exist_ok=True)
        tmp = self.root / f".{MANIFEST}.{os.getpid()}.tmp"
        with open(tmp, "wb") as f:
            f.write(manifest.to_bytes())
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.root / MANIFEST)
        _fsync_dir(self.root)

    @contextmanager
    def lock(self, *, wait: bool = True, announce=None):
        """Exclusive writer lock. A second ingest waits (or raises LockedError when wait=False).

        A run that leaves no trace in a new root deletes the lock file it holds
        (``forget``), so a lock is kept only if, once acquired, the file it was taken on
        is still the one at ``.lock``; otherwise it is taken again.
        """
        path = self.root / ".lock"
        while True:
            self.root.mkdir(parents=True, exist_ok=True)
            try:
                fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
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
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"pid {os.getpid()} since {time.strftime('%Y-%m-%d %H:%M:%S')}".encode(), 0)
            yield
        finally:
            try:
                os.ftruncate(fd, 0)
            except OSError:
                pass
            os.close(fd)  # closing releases the flock

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
        """Delete every file a run wrote (its names start with its id), and empty table folders.

        Call with the lock held, once nothing writes for the run any more: what an
        unfinished run wrote is gone at once, not at the next run.
        """
        data = self.root / "data"
        if data.is_dir():
            for table_dir in data.iterdir():
                for f in table_dir.glob(f"{run_id}*") if table_dir.is_dir() else ():
                    f.unlink(missing_ok=True)
                _rmdir_if_empty(table_dir)
            _rmdir_if_empty(data)
        for stale in self.root.glob(f".{MANIFEST}.{os.getpid()}.tmp"):
            stale.unlink(missing_ok=True)

    def forget(self, *, created: str | None) -> None:
        """After a run that committed nothing into a root with no warehouse: remove the lock
        file (still held: a waiting run notices and takes a new one) and the folders this
        run created, from the root up to ``created``, as long as nothing else is in them."""
        if self.exists():
            return
        (self.root / ".lock").unlink(missing_ok=True)
        if created is None:
            return
        d = str(self.root)
        while len(d) >= len(created) and d.startswith(created):
            _rmdir_if_empty(Path(d))
            d = os.path.dirname(d)

    def collect_garbage(self, manifest: Manifest, *, now: float | None = None) -> Manifest:
        """Delete orphans of crashed runs and retired files past their grace period.

        Call with the lock held. Returns the manifest with expired retirements dropped
        (the caller commits it with its next change).
        """
        now = time.time() if now is None else now
        live = {f.path for fs in manifest.tables.values() for f in fs}
        if manifest.path_fields:
            live.add(manifest.path_fields["path"])
        keep_retired, retired_paths = [], set()
        for r in manifest.retired:
            if now - r["retired_at"] < RETIRE_GRACE_S:
                keep_retired.append(r)
                retired_paths.add(r["path"])
        data = self.root / "data"
        if data.is_dir():
            for dirpath, _dirs, names in os.walk(data):
                for name in names:
                    rel = self.rel(os.path.join(dirpath, name))
                    if rel not in live and rel not in retired_paths:
                        try:
                            os.unlink(os.path.join(dirpath, name))
                        except OSError as e:  # pragma: no cover - best effort
                            print(f"warning: could not delete {rel}: {e}", file=sys.stderr)
        for stale in self.root.glob(f".{MANIFEST}.*.tmp"):
            stale.unlink(missing_ok=True)
        manifest.retired = keep_retired
        return manifest


def _rmdir_if_empty(path: Path) -> None:
    try:
        path.rmdir()
    except OSError:  # not empty, or gone: either way nothing of ours to remove
        pass


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def snapshot_files(root: str | os.PathLike, *, as_of: int | None = None) -> dict[str, list[str]]:
    """The data files of each table in a snapshot of the warehouse at ``root``: table -> absolute paths.

    The one way an engine other than the project's own readers (Spark: ``warehouse.spark.register``)
    learns which files hold a table's rows. ``as_of`` names a snapshot by its number; this storage
    keeps only the live one (the manifest's ``version``), so any other number is refused.
    """
    store = Store(root)
    if not store.exists():
        raise StorageError(f"{root}: no warehouse here (no {MANIFEST}); create one with `warehouse ingest PATH --root {root}`")
    manifest = store.read_manifest()
    if as_of is not None and as_of != manifest.version:
        raise UsageError(f"--as-of {as_of}: this warehouse keeps only its live snapshot, {manifest.version}")
    return {table: store.live_files(manifest, table) for table in manifest.tables}
