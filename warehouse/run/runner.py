"""One ingest run: walk, plan, run the batches, commit atomically.

The run holds the warehouse lock from start to end, so two ingests into one
root never interleave. Files whose size and mtime match the catalog are not
opened; files whose bytes match it are not parsed. Everything a run writes
becomes visible in one step (``commit``); a strict-mode stop, an exception or a
kill before that leaves the warehouse as it was.

This module is the order of things; each job has its own module:

* ``catalog``: the catalog read once: what is unchanged, what depends on what, what is gone;
* ``pieces``: large JSONL files cut at line ends while hashed, and their catalog rows merged;
* ``pool``: the engine that runs the batches (``worker``: one batch; ``sink``: its records);
* ``commit``: the run's files and catalog made live at once;
* ``summary`` and ``progress.IngestProgress``: what the user reads.
"""

from __future__ import annotations

import errno
import importlib
import os
import re
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, closing, contextmanager
from dataclasses import dataclass, field

from warehouse import remote
from warehouse.checks import option
from warehouse.errors import (
    Interrupted,
    NotASnapshot,
    ObjectStoreError,
    StorageError,
    StrictModeError,
    UsageError,
    WarehouseError,
    WorkerLost,
)
from warehouse.formatkit.ingestor import JSON_SUFFIXES
from warehouse.formatkit.registry import Registry
from warehouse.progress import IngestProgress
from warehouse.remote import inside
from warehouse.run import damage
from warehouse.run.catalog import Catalog
from warehouse.run.commit import COMMITTED, Changes, CommitAhead, commit, repair
from warehouse.run.discover import Compressed, LoopSkipped, Unreachable, walk
from warehouse.run.encodings import skipped_note
from warehouse.run.path_fields import PathFieldsAhead
from warehouse.run.pieces import FileScan, merge_pieces, split_large_files
from warehouse.run.pool import Engine, Inline, ProcessPool, start_forkserver
from warehouse.run.summary import IngestSummary
from warehouse.run.worker import BatchIngest, BatchResult, BatchSpec, WorkItem
from warehouse.store import delta
from warehouse.store.delta import Damage
from warehouse.store.readable import read_existing_snapshot
from warehouse.store.storage import SnapshotRecord, Store, new_run_id

#: runs smaller than this are ingested in-process (a pool costs more than it saves)
INLINE_MAX_BYTES = 16 * 1024 * 1024
INLINE_MAX_FILES = 400
#: batch size bounds: each batch writes one Parquet file per table
MIN_BATCH_BYTES = 8 * 1024 * 1024
MAX_BATCH_BYTES = 256 * 1024 * 1024
MIN_BATCH_FILES = 2000


def say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def ingest(
    paths: Sequence[str],
    root: str,
    *,
    registry: Registry | None = None,
    format: str | None = None,
    strict: bool = False,
    jobs: int | None = None,
    prune: bool = False,
    wait: bool = True,
    max_record_bytes: int = 64 * 1024 * 1024,
    progress: bool = True,
    options: dict | None = None,
    fast_paths: bool = True,
    trees: dict[str, str] | None = None,
    engine: str = "local",
    spark_master: str | None = None,
    storage_options: dict | None = None,
) -> IngestSummary:
    """Ingest files and directories into the warehouse at ``root``. See ``warehouse ingest --help``.

    A run that does not commit (an error, ``--strict`` meeting a bad record, Ctrl-C)
    leaves no file of its own behind, and in a root that held no warehouse, nothing
    at all. ``trees`` (for ``tokenize``): the tree of each file named in ``paths``,
    instead of its directory. ``registry``: the formats (default: the installed ones).
    ``engine``: ``local`` (this process or a process pool) or ``spark`` (Spark tasks, on
    ``spark_master`` or the session this process has: ``warehouse.spark.engine``).
    ``storage_options``: how to reach sources given as URLs (``remote.py``; never stored).
    """
    t0 = time.monotonic()
    registry = registry or Registry.installed()
    if format is not None:
        registry.load(format)  # an unknown name is answered with the installed ones
    ingestors = registry.ingestors()
    if not paths:
        raise UsageError("no paths to ingest")
    remote.configure(storage_options, new_run=True)
    existing = [p for p in paths if remote.exists(p)]  # once: on object storage each is a request
    for p in paths:
        if p not in existing and not prune:
            what = "no object at or under it" if remote.is_url(p) else "no such file or directory"
            raise UsageError(f"{remote.redact(p)}: {what} (if it was ingested and is gone, --prune removes its rows)")
    store = Store(root)
    if "%" in str(store.root):
        raise UsageError(f"--root {root}: a path with '%' in it, which deltalake reads as an escape; choose another --root")
    run_id = new_run_id()
    summary = IngestSummary(run_id, root=root)
    if store.root.exists() and not store.root.is_dir():
        raise UsageError(f"--root {root}: exists and is not a directory")
    created = None if store.remote else _first_missing(store.root)
    trees = trees or {}
    with _said_in_one_line(store, run_id), store.lock(wait=wait, announce=say), \
            _nothing_kept_unless_committed(store, run_id, created), ExitStack() as run_scoped:
        record, damaged = open_for_writing(store, say)
        catalog = Catalog() if "sources" in damaged else Catalog.load(store, record)
        settings = _settings(record.settings, options or {}, ingestors)
        mending = damage.plan(store, record, damaged, catalog.rows, prune=prune) if damaged else damage.Mending()
        for line in mending.said():
            say(f"repairing: {line}")
        # Every JSON-looking file is looked at, claimed or not, so none is passed over silently.
        suffixes = tuple(sorted(set(JSON_SUFFIXES) | {s for i in ingestors for s in i.suffixes}))
        if format is not None:
            suffixes = next(i for i in ingestors if i.name == format).suffixes
        for p in paths:
            if p not in existing and not catalog.covers(p):
                raise UsageError(f"{p}: no such file or directory, and no catalogued file was under it")
        # Once the walk has found work enough for a pool, its forkserver starts importing alongside.
        warm = (lambda: start_forkserver(registry)) if engine == "local" and _jobs(jobs) > 1 else None
        work = _what_to_read(paths, existing, store, catalog, summary, suffixes, format, settings, trees, warm,
                             mending.reread)
        gone = work.gone
        if prune:
            gone |= mending.dropped
            summary.files_removed = len(gone)
        else:
            summary.files_gone = len(gone)
            gone = set()

        spec_args = dict(
            run_id=run_id,
            root=str(store.root),
            registry=registry,
            forced_format=format,
            strict=strict,
            max_record_bytes=max_record_bytes,
            options=settings,
            fast_paths=fast_paths,
            # resolved here: a worker process may not have this process's environment (a forkserver started earlier)
            storage_options=remote.resolve(storage_options) if store.remote or any(map(remote.is_url, paths)) else {},
        )
        results: list[BatchResult] = []
        if work.unreachable:
            parent = BatchIngest(BatchSpec(batch_no=0, items=[], **spec_args))
            try:
                for u in work.unreachable:
                    parent.unreachable(u.path, u.message)
            finally:
                results.append(parent.run())
        # path_fields of every path the commit may catalogue, evaluated while the batches run
        ahead = _path_fields_ahead(store, catalog, work)
        if ahead is not None:
            run_scoped.callback(ahead.close)  # however the run ends: --strict, Ctrl-C, an error, its commit
        items, sizes, scans = split_large_files(work.items, work.sizes, ingestors)
        bar = IngestProgress(len(items) + len(scans), sum(sizes) + sum(s.item_size for s in scans), enabled=progress)
        commit_ahead = CommitAhead(store)  # the batches' files fsynced as they come, not all at the commit
        run_scoped.callback(commit_ahead.close)  # however the run ends, as path_fields ahead
        try:
            if not any(r.strict_failure for r in results):
                results += _run_batches(items, sizes, spec_args, jobs, bar, scans, engine, spark_master, commit_ahead.add)
                if scans:
                    results.append(merge_pieces(results, scans, str(store.root)))
        finally:
            bar.done()
        failure = next((r.strict_failure for r in results if r.strict_failure), None)
        if failure is not None:
            raise StrictModeError(failure.path, failure.locator, failure.stage, failure.message)

        for r in results:
            summary.add(r)
        changes = Changes.of(run_id, results, gone, settings)
        changes.path_fields, changes.ahead, changes.mending = ahead, commit_ahead, mending
        summary.committed = commit(store, record, catalog, changes)
    if not (summary.files_seen or summary.files_removed or summary.files_gone):
        summary.notes.append(_nothing_found(paths, suffixes, root, made=not record.number))
    summary.seconds = time.monotonic() - t0
    return summary


def _nothing_found(paths: Sequence[str], suffixes: Sequence[str], root: str, made: bool) -> str:
    """What a run that found no file to look at did: a wrong PATH (or files of another kind) is seen at once.
    The warehouse is made all the same: only ingest makes one, and a later run may fill it."""
    kinds = " or ".join(", ".join(suffixes).rsplit(", ", 1))
    found = f"no {kinds} file under {', '.join(paths)}"
    if made:
        return f"{found}: the warehouse at {root} was made, and is empty"
    return f"{found}: nothing to add; the warehouse at {root} is unchanged"


@dataclass
class _Work:
    """What the walk and the catalog leave to read."""

    items: list[WorkItem] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)
    unreachable: list[Unreachable] = field(default_factory=list)
    gone: set[str] = field(default_factory=set)  # catalogued under the paths, no longer on disk


def _what_to_read(paths: Sequence[str], existing: list[str], store: Store, catalog: Catalog, summary: IngestSummary,
                  suffixes: tuple[str, ...], format: str | None, settings: dict, trees: dict[str, str],
                  warm: Callable[[], None] | None = None, reread: set[str] = frozenset()) -> _Work:
    """Walk ``existing``, skip what the catalog says is unchanged, and add what depends on a change and
    ``reread`` (sources read again whatever the catalog says: ``damage.plan``). ``warm`` is called once,
    as soon as what is to be read would run on a pool (``_pooled``)."""
    work = _Work()
    nbytes = 0
    seen: set[str] = set()
    unchanged: set[str] = set()
    # the root is never walked as a source, however it is reached: a local one by its inode, a remote one by its prefix
    if store.remote:
        exclude: tuple[int, int] | str = str(store.root)
    else:
        root_dir = os.stat(store.root)
        exclude = (root_dir.st_dev, root_dir.st_ino)
    compressed: list[str] = []
    for found in walk(existing, suffixes=suffixes, exclude=exclude):
        if isinstance(found, LoopSkipped):
            summary.notes.append(f"skipped {found.path}: directory already walked (symlink loop or alias of {found.target})")
            continue
        if isinstance(found, Compressed):
            compressed.append(found.path)
            continue
        summary.files_seen += 1
        if isinstance(found, Unreachable):
            seen.add(found.path)
            work.unreachable.append(found)
            continue
        path, entry = catalog.find(found.path, found.identity)
        tree = trees.get(found.path, found.tree)
        if path != found.path:  # the catalogued source, met through another path: its tree is the catalogued one
            tree = entry.get("source_tree") or os.path.dirname(path)
        seen.add(path)
        unchanged_now, previous = catalog.compare(entry, found.size, found.mtime_ns, format, settings, tree)
        if path in reread:  # its rows are lost in a damaged table: read, even if its bytes are the same
            unchanged_now, previous = False, None
        if unchanged_now:
            summary.files_unchanged += 1
            unchanged.add(path)
            continue
        work.items.append(WorkItem(path, previous, explicit=found.explicit, tree=tree))
        work.sizes.append(found.size)
        nbytes += found.size
        if warm is not None and _pooled(len(work.items), nbytes):
            warm()
            warm = None
    if compressed:
        summary.notes.append(skipped_note(compressed))
    work.gone = catalog.gone(paths, seen)
    # Files built from a file that changed (or went) are ingested again too, walked or not.
    scheduled = {i.path for i in work.items}
    walked_dirs = [remote.normpath(p) for p in existing if remote.isdir(p)]
    for path in sorted((catalog.dependents(scheduled | work.gone) | reread) - scheduled - work.gone):
        if remote.isfile(path):
            if path in unchanged:  # counted once: as ingested again, not as unchanged too
                summary.files_unchanged -= 1
            tree = (next((d for d in walked_dirs if inside(path, d)), None)
                    or (catalog.get(path) or {}).get("source_tree"))
            work.items.append(WorkItem(path, None, tree=tree))
            work.sizes.append(remote.getsize(path))
    return work


def _path_fields_ahead(store: Store, catalog: Catalog, work: _Work) -> PathFieldsAhead | None:
    """Start evaluating path_fields for the catalogued and walked paths when the run brings a new
    path (else the commit keeps the path_fields it has); local roots (a remote one copies it)."""
    walked = {i.path for i in work.items} | {u.path for u in work.unreachable}
    if store.remote or all(p in catalog for p in walked):
        return None
    return PathFieldsAhead(set(catalog.rows) | walked)


def _run_batches(items: list[WorkItem], sizes: list[int], spec_args: dict, jobs: int | None, bar: IngestProgress,
                 scans: Sequence[FileScan] = (), engine_name: str = "local",
                 spark_master: str | None = None,
                 arrived: Callable[[BatchResult], None] = lambda result: None) -> list[BatchResult]:
    """Plan the batches, run them on an engine, and stop it at --strict's first bad record.
    ``arrived`` is called with each result as its batch ends."""
    if not items and not scans:
        return []
    engine = _engine(engine_name, spark_master, jobs, sum(sizes) + sum(s.item_size for s in scans), len(items))
    batches = plan_batches(items, sizes, engine.workers) if items else []

    def specs() -> Iterator[BatchSpec]:
        n = 0
        for b in batches:
            n += 1
            yield BatchSpec(batch_no=n, items=b, **spec_args)
        for scan in scans:
            for piece in scan.chunks():  # the pieces as the pass over the file finds them
                n += 1
                yield BatchSpec(batch_no=n, items=[piece], **spec_args)

    results: list[BatchResult] = []
    with closing(engine.run(specs(), bar.add)) as running:
        for result in running:
            results.append(result)
            arrived(result)
            if result.strict_failure:
                break  # --strict met a bad record: the run is over, the batches still running with it
    results.sort(key=lambda r: r.batch_no)
    return results


def _jobs(jobs: int | None) -> int:
    return max(1, jobs or os.cpu_count() or 1)


def _pooled(files: int, nbytes: int) -> bool:
    """Whether this much to read is worth a pool of workers (given more than one job)."""
    return nbytes > INLINE_MAX_BYTES or files > INLINE_MAX_FILES


#: engines that live beside the run, not in it, by their ``--engine`` name: imported when asked for (pyspark
#: is an extra) and by name, as formats are, so the run's room does not depend on the rooms above it
PLUGGED_ENGINES = {"spark": "warehouse.spark.engine:SparkEngine"}


def _engine(name: str, spark_master: str | None, jobs: int | None, total_bytes: int, files: int) -> Engine:
    """``spark``: Spark tasks, whatever the size (the user asked for the cluster). ``local``: this
    process for a small run or ``--jobs 1`` (a pool costs more than it saves), else a process pool."""
    if name in PLUGGED_ENGINES:
        module, _, cls = PLUGGED_ENGINES[name].partition(":")
        return getattr(importlib.import_module(module), cls)(spark_master)
    jobs = _jobs(jobs)
    return ProcessPool(jobs) if jobs > 1 and _pooled(files, total_bytes) else Inline()


def plan_batches(items: list[WorkItem], sizes: list[int], jobs: int) -> list[list[WorkItem]]:
    """Contiguous groups of files (sorted by path) of about equal bytes.

    Several batches per worker balance the load; each batch writes one Parquet
    file per table, so batches are kept large enough not to litter small files.
    """
    if jobs <= 1:
        return [items]
    total = sum(sizes)
    target = min(max(total // (jobs * 4), MIN_BATCH_BYTES), MAX_BATCH_BYTES)
    max_files = max(MIN_BATCH_FILES, len(items) // (jobs * 4) + 1)
    batches, current, acc = [], [], 0
    for item, size in zip(items, sizes):
        current.append(item)
        acc += size
        if acc >= target or len(current) >= max_files:
            batches.append(current)
            current, acc = [], 0
    if current:
        batches.append(current)
    return batches


# --- a run that fails: one line, nothing kept -------------------------------------


@contextmanager
def _nothing_kept_unless_committed(store: Store, run_id: str, created: str | None):
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
def _said_in_one_line(store: Store, run_id: str, doing: str = "ingest into"):
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
    if remote.is_url(e.filename):  # an object the run's own checks could not stat
        raise ObjectStoreError(f"{e.strerror} ({_state(store)})") from None
    # A write into the remote root refused (a worker's Parquet put, the catalog's): the library names
    # no local file. A local file's fault (a full temporary disk) keeps the local message below.
    if store.remote and not e.filename:
        refused = remote.run_error(str(store.root), e, writing=True)
        raise ObjectStoreError(f"{refused} ({_state(store)})", bucket=refused.bucket, key=refused.key) from None
    raise StorageError(_storage_message(store, e, doing)) from None


def _settings(remembered: dict, given: dict, ingestors: Sequence) -> dict:
    """The run's options: the ones given now override the ones remembered from earlier runs, and
    one given as False is forgotten. Each is one every format can use (``Ingestor.option_problem``):
    a tool that cannot load is a usage error now, before anything is read or changed, never a
    quarantined record; a remembered one says how to change or forget it."""
    given = {k: v for k, v in given.items() if v is not None}
    settings = {k: v for k, v in {**remembered, **given}.items() if v is not False}
    for name, value in settings.items():
        for ingestor in ingestors:
            problem = ingestor.option_problem(name, value)
            if problem is None:
                continue
            flag = option(name)
            if name in given:
                raise UsageError(f"{flag} {value}: {problem}")
            raise UsageError(f"{flag} {value}, remembered from an earlier run: {problem}; give {flag} again with "
                             f"another, or --no-{flag[2:]} to forget it")
    return settings


def open_for_writing(store: Store, say) -> tuple[SnapshotRecord, dict[str, Damage]]:
    """With the lock held, before a run writes: a root in the old layout converted (once), a damaged latest
    snapshot set aside, the tables checked (``damage.check``: what can be mended at once is) and repaired
    to the last snapshot (a run that died mid-commit undone, its files deleted); that snapshot, and what
    is still damaged in it (the run's ``damage.plan`` mends it, or says why it cannot)."""
    if store.legacy():
        from warehouse.run.upgrade import upgrade

        if not store.exists():  # (else what a conversion that died after its snapshot left: cleaned up)
            say(f"converting {store.root} to Delta Lake tables (once; docs/reading.md)...")
        upgrade(store)
    record = latest_readable(store, say)
    damaged, opened = damage.check(store, record, say)
    for line in repair(store, record, skip=set(damaged), warn=say, opened=opened):
        say(f"repaired: {line}")
    return record, damaged


def latest_readable(store: Store, say) -> SnapshotRecord:
    """With the lock held: the latest snapshot, after setting aside the damaged ones above the last readable
    one (``Store.set_aside``). A snapshot is a run's commit point: the one before it is a whole state, which
    ``repair`` then restores the tables to. With no readable snapshot left, the damaged one's error stands."""
    while True:
        try:
            return store.read_snapshot()
        except NotASnapshot as e:
            numbers = store.snapshot_numbers()
            if not numbers or e.number != numbers[-1] or store.last_readable(below=e.number) is None:
                raise
            where = store.set_aside(e.number)
            say(f"repaired: snapshot {e.number} was damaged ({e.what}): set aside as {where}; the warehouse goes "
                "back to the snapshot before it")


def _committed(store: Store, run_id: str) -> bool:
    try:
        return store.read_snapshot().run_id == run_id
    except Exception:
        return False


def _state(store: Store) -> str:
    return "the warehouse is as it was before this run" if store.exists() else f"there is no warehouse at {store.root}"


def _first_missing(path) -> str | None:
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


def tokenize(root: str, tokenizer: str, **options) -> IngestSummary:
    """Add token ranges to an existing warehouse: re-ingest the sources built without this tokenizer.

    Only sources that asked for the ``tokenizer`` option (annotation files) are read
    again; the tokenizer is remembered for later runs.
    """
    remote.configure(options.get("storage_options"), new_run=True)  # before the root is read: it may be a URL
    store = Store(root)
    if not store.legacy():  # none there: the StorageError every reading command gives (exit 1)
        read_existing_snapshot(store, root)
    if store.legacy():  # the catalog is read before the ingest that would convert the root
        with store.lock(wait=options.get("wait", True), announce=say):
            open_for_writing(store, say)
    catalog = damage.load_catalog(store, store.read_snapshot())
    paths = [p for p in catalog.asking_for("tokenizer") if remote.isfile(p)]
    opts = dict(options.pop("options", None) or {}, tokenizer=tokenizer)  # a folder made absolute by the API
    if not paths:
        summary = IngestSummary(run_id="")
        summary.notes.append("no catalogued source uses a tokenizer (no annotation files): nothing to do")
        return summary
    # Each file is read again within the tree it was ingested from, not just its folder.
    trees = {p: catalog[p]["source_tree"] for p in paths if catalog[p].get("source_tree")}
    return ingest(paths, root, options=opts, trees=trees, **options)
