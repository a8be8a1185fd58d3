"""Making a run's work live: one Delta version per table (one more where a newly declared column joins
the schema), then one warehouse snapshot.

What a run hands over (``Changes``) says what it did, not how it is stored: the new
catalog rows, the sources whose bytes were the same, the sources pruned, and the
Parquet files its batches wrote (``delta.Part``). ``commit`` works in two phases:

1. *prepare* (may be interrupted: nothing is live yet): the files holding rows of
   replaced or pruned sources are rewritten without them, the catalog (``sources``) is written
   whole, and ``path_fields`` too when the set of source paths changed, each a file of the run;
2. *commit* (Ctrl-C waits until it is over): per table one Delta version (removes and
   adds together), then the warehouse snapshot that pins every table's new version
   (``Store.write_snapshot``). That file is the commit point of the run.

A failure in phase 2 restores every table to the version the last snapshot pins
(``repair``), so the warehouse is as it was; a run killed in it (SIGKILL) is repaired
the same way by the next run, which also deletes the files of runs that never got a
snapshot.
"""

from __future__ import annotations

import datetime as dt
import importlib
import os
import shutil
import signal
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.parquet as pq

from warehouse.errors import DamagedTable, LeaseLost, first_line
from warehouse.formatkit.declared import TABLES
from warehouse.formatkit.declared_views import PATH_FIELDS, path_fields_sql_hash
from warehouse.interrupt import work_done
from warehouse.run.catalog import Catalog
from warehouse.run.damage import Mending, drop_new_log, set_aside_log
from warehouse.run.path_fields import PathFieldsAhead, materialize_path_fields
from warehouse.run.worker import BatchResult
from warehouse.store import delta, remote_root
from warehouse.store.delta import Part
from warehouse.store.files import fsync
from warehouse.store.snapshots import FILE_SCHEMA, RUN_ID, SnapshotRecord, pin
from warehouse.store.storage import Store
from warehouse.store.writer import PARQUET_OPTIONS, column_encodings, open_parquet_writer
from warehouse.tables import SOURCES


@dataclass
class Changes:
    """What one run did, for the commit."""

    run_id: str
    #: catalog rows of the sources read, by path (new ones, and replacements of catalogued ones)
    sources: dict[str, dict] = field(default_factory=dict)
    #: (path, mtime_ns) of catalogued sources whose bytes were the same: only the mtime moves
    touched: list[tuple[str, int]] = field(default_factory=list)
    #: catalogued sources pruned (gone from disk, with --prune)
    removed: set[str] = field(default_factory=set)
    #: table -> the Parquet files the run wrote, in batch order
    parts: dict[str, list[Part]] = field(default_factory=dict)
    #: the run options to remember
    settings: dict = field(default_factory=dict)
    #: path_fields evaluated while the batches ran, if the runner started it
    path_fields: PathFieldsAhead | None = None
    #: the batches' files fsynced while the batches ran, if the runner started it
    ahead: "CommitAhead | None" = None
    #: what the run mends of damaged tables (``damage.plan``)
    mending: Mending = field(default_factory=Mending)

    @classmethod
    def of(cls, run_id: str, results: Iterable[BatchResult], removed: set[str], settings: dict) -> "Changes":
        """Gather the batches' results (in batch order)."""
        changes = cls(run_id, removed=set(removed), settings=settings)
        for r in results:
            for row in r.sources:
                changes.sources[row["source_path"]] = row
            changes.touched += r.unchanged
            for table, part in r.parts.items():
                changes.parts.setdefault(table, []).append(part)
        return changes


class CommitAhead:
    """What the commit can do while the batches run, in a thread of this process (idle then): fsync the
    batches' files of a local root as they are handed in (``add``), and load deltalake. The commit then
    waits for the last few files only (``durable``): one fsync after another at the commit was half of
    it (~45 files at 3-8 ms each for a 300 MB JSONL file), and deltalake's first import 20-90 ms more."""

    def __init__(self, store: Store):
        self.store = store
        self._pending: dict[str, Future] = {}
        self._loading: Future | None = None
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="commit-ahead")

    def add(self, result: BatchResult) -> None:
        if self._loading is None:  # (after the first batch: this process maps that one itself)
            self._loading = self._thread.submit(importlib.import_module, "deltalake")
        if not self.store.remote:  # a put is durable once it returns
            for part in result.parts.values():
                self._pending[part.path] = self._thread.submit(fsync, self.store.abspath(part.path))

    def durable(self, rel: str) -> None:
        """``rel`` (a path relative to the root) made durable: synced already, or now."""
        pending = self._pending.pop(rel, None)
        if pending is not None:
            pending.result()
        else:
            fsync(self.store.abspath(rel))

    def close(self) -> None:
        """Nothing more to do; what was not waited for (a run that failed, a file ``merge_pieces``
        deleted) is left to end on its own (a file deleted meanwhile fails its fsync, and nobody asks)."""
        self._thread.shutdown(wait=False, cancel_futures=True)


@dataclass
class _TableChange:
    name: str
    schema: pa.Schema
    version: int | None  # the snapshot's; None: the table does not exist yet
    adds: list[Part] = field(default_factory=list)
    removes: list[str] = field(default_factory=list)  # paths relative to the table folder
    rows_added: int = 0
    rows_removed: int = 0
    columns: set[str] = field(default_factory=set)
    #: the ``file_schema`` of the files it keeps of ``version`` ("" for none, None when not known)
    kept_schema: str | None = ""


def commit(store: Store, record: SnapshotRecord, catalog: Catalog, changes: Changes) -> bool:
    """Commit the run's changes on top of snapshot ``record``: a new snapshot. False when nothing changed.

    ``catalog`` (the one ``record`` pins) is updated in place to the new one.
    """
    run_id, new_sources, touched, removed = changes.run_id, changes.sources, changes.touched, changes.removed
    mending = changes.mending
    # A first run commits even with nothing to add: ingest is what creates a warehouse (readers need a snapshot).
    # A run that mends a damaged table commits what it mended.
    if (not new_sources and not touched and not removed and changes.settings == record.settings and store.exists()
            and not mending):
        return False
    rows_of = catalog.rows
    # the rows of a source read again to mend a table go, whatever the catalog says (it may be what was lost)
    replaced = (({p for p in new_sources if p in rows_of} | removed) & set(rows_of)) | mending.forced
    # path_fields depends on the source paths alone: the same paths under the same SQL keep its version
    same_paths = (not (removed & set(rows_of)) and all(p in rows_of for p in new_sources)
                  and record.version(PATH_FIELDS) is not None and record.path_fields_sql == path_fields_sql_hash()
                  and PATH_FIELDS not in mending.damaged and not mending.catalog_lost)
    for p, mtime in touched:
        rows_of[p]["mtime_ns"] = mtime
    for p in removed:
        rows_of.pop(p, None)
    rows_of.update(new_sources)

    # --- phase 1: every file of the new state written (still the run's own, not live) ---
    rewrite_no = iter(range(1, 10**9))
    plan: list[_TableChange] = []
    for name, table in TABLES.items():
        if not table.per_source:
            continue
        change = _TableChange(name, table.arrow_schema, None if name in mending.remake else record.version(name))
        if change.version is not None:
            change.columns = set(record.tables[name].get("columns", table.column_names))
            change.kept_schema = record.tables[name].get(FILE_SCHEMA)
            lost = mending.lost.get(name, set())
            if replaced or lost:
                _drop_rows_of(store, change, replaced, lambda: f"{run_id}-rw{next(rewrite_no):05d}.parquet", lost)
        for part in changes.parts.get(name, ()):
            change.adds.append(part)
            change.rows_added += part.rows
            change.columns |= set(table.column_names)
        plan.append(change)

    sources_path = store.data_path("sources", f"{run_id}.parquet")
    rows = [rows_of[p] for p in sorted(rows_of)]
    fs, where = store.filesystems.path(sources_path)
    pq.write_table(pa.Table.from_pylist(rows, schema=SOURCES.arrow_schema), where, filesystem=fs, **PARQUET_OPTIONS)
    plan.append(_whole(store, record, "sources", SOURCES.arrow_schema, Part.of(store.root, sources_path),
                       mending.remake))
    if not same_paths:
        pf_path = store.data_path(PATH_FIELDS, f"{run_id}.parquet")
        pf_schema = _path_fields(store, rows, sources_path, pf_path, changes.path_fields)
        plan.append(_whole(store, record, PATH_FIELDS, pf_schema, Part.of(store.root, pf_path), mending.remake))
    if not store.remote:  # a put is durable once it returns; local files are synced before the commit
        ahead = changes.ahead or CommitAhead(store)
        for change in plan:
            for part in change.adds:
                ahead.durable(part.path)

    new = SnapshotRecord(
        number=record.number + 1,  # under the lock, the latest is the one this run started from
        time=dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds"),
        run_id=run_id,
        operation="ingest",
        did={
            "files_ingested": len(new_sources),
            "files_replaced": len({p for p in new_sources if p in replaced}),
            "files_pruned": len(removed),
            "rows_added": {c.name: c.rows_added for c in plan if c.rows_added and c.name != PATH_FIELDS},
            "rows_removed": {c.name: c.rows_removed for c in plan if c.rows_removed and c.name != PATH_FIELDS},
        },
        path_fields_sql=path_fields_sql_hash(),
        settings=changes.settings,
    )
    # --- phase 2: the tables' versions, then the snapshot that pins them ---
    for name in sorted(mending.remake):  # a lost table is made again where it was: its damaged log goes first
        set_aside_log(store, name, run_id)
    commit_plan(store, record, new, plan)
    return True


def _path_fields(store: Store, rows: list[dict], sources_path: str, pf_path: str,
                 ahead: PathFieldsAhead | None = None) -> pa.Schema:
    """Materialise path_fields at ``pf_path`` (from ``ahead`` when it knew every path); on a remote root
    DuckDB works on a local copy (no httpfs here)."""
    if not store.remote:
        schema = ahead.write(sources_path, pf_path) if ahead is not None else None
        return schema if schema is not None else materialize_path_fields(sources_path, pf_path)
    import tempfile

    with tempfile.TemporaryDirectory(prefix="warehouse-pf-") as tmp:
        local_sources, local_pf = os.path.join(tmp, "sources.parquet"), os.path.join(tmp, "path_fields.parquet")
        pq.write_table(pa.Table.from_pylist(rows, schema=SOURCES.arrow_schema), local_sources, **PARQUET_OPTIONS)
        schema = materialize_path_fields(local_sources, local_pf)
        fs, where = store.filesystems.path(pf_path)
        with open(local_pf, "rb") as src, fs.open_output_stream(where) as dst:
            shutil.copyfileobj(src, dst, 8 << 20)
    return schema


def commit_plan(store: Store, record: SnapshotRecord, new: SnapshotRecord, plan: list[_TableChange]) -> None:
    """Commit every table's change and write snapshot ``new``; on any failure, the tables as ``record`` pins them."""
    with _sigint_deferred() as committed:
        try:
            meta = {"warehouse_run_id": new.run_id, "warehouse_snapshot": new.number, "warehouse_operation": new.operation}
            for c in plan:
                version = c.version
                if version is None or c.adds or c.removes:
                    store.check_lock()  # a run whose lease on a remote root was taken over stops here
                    version = delta.commit_table(store.table_uri(c.name), c.version, c.schema, c.adds, c.removes, meta)
                new.tables[c.name] = pin(version, sorted(c.columns, key=_order(c.schema)),
                                         delta.shared_schema(c.kept_schema, c.adds))
            for name, pinned in record.tables.items():  # tables no longer declared keep their pin
                new.tables.setdefault(name, pinned)
            store.check_lock()
            store.write_snapshot(new)
            committed(COMMITTED)
        except LeaseLost:
            raise  # the root is another run's now: it repairs the tables (its open_for_writing), not this one
        except BaseException:
            remade = {c.name for c in plan if c.version is None and record.version(c.name) is not None}
            for name in remade:  # a lost table made again: as the run found it (lost), for the next run
                drop_new_log(store, name)
            repair(store, record, delete_orphans=False, skip=remade)
            raise


def _order(schema: pa.Schema):
    names = {n: i for i, n in enumerate(schema.names)}
    return lambda c: (names.get(c, len(names)), c)


def _whole(store: Store, record: SnapshotRecord, name: str, schema: pa.Schema, part: Part,
           remake: set[str] = frozenset()) -> _TableChange:
    """A table rewritten whole each run (``sources``, ``path_fields``): its files removed, one added (``remake``:
    tables whose log is lost, made again)."""
    version = None if name in remake else record.version(name)
    change = _TableChange(name, schema, version, adds=[part], rows_added=part.rows, columns=set(schema.names),
                          kept_schema="")  # (every file of the version before goes)
    if version is not None:
        actions = delta.add_actions(store.table_uri(name), version)
        change.removes = actions.column("path").to_pylist()
        change.rows_removed = sum(n or 0 for n in actions.column("num_records").to_pylist())
    return change


def _drop_rows_of(store: Store, change: _TableChange, paths: set[str], new_name, lost: set[str] = frozenset()) -> None:
    """Plan the rewrite of the files of ``change.name`` holding rows of ``paths``, without those rows; the
    files in ``lost`` (damaged: ``damage.plan`` has their sources read again) are removed unread.

    The Delta statistics (min / max ``source_path`` of each file) leave out most files
    unopened; the others are checked on their ``source_path`` column alone.
    """
    from urllib.parse import unquote

    import pyarrow.compute as pc  # here, not at load: an unchanged run replaces nothing (26 ms)

    uri = store.table_uri(change.name)
    actions = delta.add_actions(uri, change.version)
    if actions.num_rows == 0:
        return
    wanted = sorted(paths)
    value_set = pa.array(wanted, type=pa.string())
    cols = actions.column_names
    lo = actions.column("min.source_path").to_pylist() if "min.source_path" in cols else [None] * actions.num_rows
    hi = actions.column("max.source_path").to_pylist() if "max.source_path" in cols else [None] * actions.num_rows
    records = actions.column("num_records").to_pylist()
    columns = set()
    for rel, low, high, n in zip(actions.column("path").to_pylist(), lo, hi, records):
        path = f"{uri}/{rel}"
        if unquote(rel) in lost:
            change.removes.append(rel)
            change.rows_removed += n or 0
            continue
        if low is not None and high is not None and not _any_between(wanted, low, high):
            continue
        fs, where = store.filesystems.path(path)
        try:
            src = pq.ParquetFile(fs.open_input_file(where))
        except (OSError, ValueError) as e:  # the same size as logged, yet not Parquet: check's listing cannot tell
            raise DamagedTable(
                f"{store.root}: table {change.name} is damaged: its data file {change.name}/{rel} cannot be read "
                f"({first_line(e)}); move it out of the table's folder and run again: the next `warehouse "
                "ingest` then reads again the sources whose rows were in it (nothing was changed)",
                table=change.name, path=f"{change.name}/{rel}") from None
        hits = pc.sum(pc.is_in(src.read(columns=["source_path"])["source_path"], value_set=value_set)).as_py() or 0
        if not hits:
            continue
        change.removes.append(rel)
        change.rows_removed += hits
        rewritten = _rewrite_without(src, value_set, store.data_path(change.name, new_name()),
                                     column_encodings(TABLES[change.name]) if change.name in TABLES else {})
        if rewritten is not None:
            change.adds.append(Part.of(store.root, rewritten))
    if change.removes:  # the columns of the files still live: read from their footers
        removed = set(change.removes)
        for rel in actions.column("path").to_pylist():
            if rel not in removed and unquote(rel) not in lost:
                columns |= set(_schema(store, f"{uri}/{rel}").names)
        change.columns = columns | {c for p in change.adds for c in _schema(store, store.abspath(p.path)).names}


def _schema(store: Store, path: str) -> pa.Schema:
    fs, where = store.filesystems.path(path)
    return pq.read_schema(where, filesystem=fs)


def _any_between(sorted_values: list[str], low: str, high: str) -> bool:
    import bisect

    i = bisect.bisect_left(sorted_values, low)
    return i < len(sorted_values) and sorted_values[i] <= high


def _rewrite_without(src: pq.ParquetFile, value_set: pa.Array, out_path: str,
                     encodings: dict[str, str]) -> str | None:
    """A copy of ``src`` at ``out_path`` without the rows whose ``source_path`` is in ``value_set``;
    None when no row is left. The name is the run's own, never derived from the old name,
    so it does not grow however often a file is rewritten."""
    import pyarrow.compute as pc

    writer = None
    try:
        for i in range(src.num_row_groups):
            group = src.read_row_group(i)
            keep = group.filter(pc.invert(pc.is_in(group["source_path"], value_set=value_set)))
            if keep.num_rows == 0:
                continue
            if writer is None:
                writer = open_parquet_writer(out_path, group.schema, encodings=encodings)
            writer.write_table(keep, row_group_size=keep.num_rows)
    finally:
        if writer is not None:
            writer.close()
    return None if writer is None else out_path


# --- repair: the tables as the last snapshot pins them --------------------------------------


def repair(store: Store, record: SnapshotRecord, *, delete_orphans: bool = True, skip: set[str] = frozenset(),
           warn=None, opened: dict | None = None) -> list[str]:
    """Bring every table back to the version snapshot ``record`` pins, and (``delete_orphans``) delete
    the data files of runs that never got a snapshot. Call with the lock held. Returns what it did.

    A table beyond its pinned version (a run died between its table commits and its snapshot)
    is restored to it with a new Delta version; a table no snapshot pins (created by such a
    run) is removed. Tables in ``skip`` (damaged: ``damage.check``) are not touched; ``opened``: tables
    opened at their latest version already. While a snapshot is damaged, no file is taken for one of a
    run that did not finish (``warn`` is told so).
    """
    done = []
    ours = {*TABLES, PATH_FIELDS, *record.tables}  # a folder of the user's beside them is theirs
    for d in store.table_dirs(ours):
        if d.name in skip or not delta.is_table(d):
            continue
        pinned = record.version(d.name)
        if pinned is None:
            store.remove_tree(str(d)) if store.remote else shutil.rmtree(d)
            done.append(f"removed {d.name}/, a table created by a run that did not finish")
            continue
        with store.filesystems.writing_root(str(d)):
            table = (opened or {}).get(d.name) or delta.open_table(d)
            if table.version() > pinned:
                table.restore(pinned, commit_properties=delta.properties(
                    {"warehouse_operation": "repair", "warehouse_snapshot": record.number}))
                done.append(f"restored {d.name} to version {pinned} (snapshot {record.number})")
    damaged: list = []
    known = {s.run_id for s in store.snapshots(damaged)} if delete_orphans else set()
    if damaged:  # a damaged snapshot's run is unknown: its files may well be live
        if warn is not None:
            warn(f"warning: {damaged[0]}; while it is there, files of runs that did not finish are kept")
    elif delete_orphans:
        n = 0
        for d in store.table_dirs(ours):
            if store.remote:  # listed by prefix: the objects right under the table's folder
                for name in store.run_files(str(d)):
                    m = RUN_ID.match(name)
                    if m and m.group() not in known:
                        remote_root.delete_object(store.filesystems, f"{d}/{name}")
                        n += 1
                continue
            for f in d.iterdir():
                m = RUN_ID.match(f.name)
                if m and m.group() not in known and f.is_file():
                    f.unlink()
                    n += 1
        if n:
            done.append(f"deleted {n} files of runs that did not finish")
    return done


# --- Ctrl-C waits for the commit --------------------------------------------------------------


#: what a Ctrl-C after an ingest's commit leaves (``runner``, and the command line's ``LateInterrupts``)
COMMITTED = "interrupted after the run was committed: the warehouse holds its rows"


@contextmanager
def _sigint_deferred() -> Iterator[Callable[[str], None]]:
    """A Ctrl-C during the block takes effect when it ends (the commit done, or undone). The block calls
    the function it is given once its snapshot is written, with the line a Ctrl-C from then on leaves:
    on the command line the Ctrl-C is then recorded, not raised (``interrupt.LateInterrupts``: nothing
    is left to stop, and the command ends saying so); in Python it is raised as the block ends."""
    if threading.current_thread() is not threading.main_thread():
        yield lambda line: None
        return
    caught: list[bool] = []
    committed: list[str] = []
    previous = signal.signal(signal.SIGINT, lambda *_: caught.append(True))
    try:
        yield committed.append
    except BaseException:
        signal.signal(signal.SIGINT, previous)
        raise
    if committed and work_done(committed[0], caught=bool(caught)):
        return  # (the command line's recorder replaced this block's handler, with no moment between)
    signal.signal(signal.SIGINT, previous)
    if caught:
        raise KeyboardInterrupt
