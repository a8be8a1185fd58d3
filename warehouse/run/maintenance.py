"""``warehouse history`` and ``warehouse compact`` as functions: ``warehouse.history`` and ``warehouse.compact``.

``history`` lists the warehouse snapshots, oldest first: what each run did. ``compact``
merges each table's small files (Delta ``optimize``: one version per table, the rows
unchanged) and deletes the files no snapshot younger than the retention needs (Delta
``vacuum``), then commits a snapshot pinning the merged versions.
"""

from __future__ import annotations

import datetime as dt
import os
import sys
from dataclasses import dataclass, field
from typing import IO, Any

from warehouse import checks
from warehouse.access import StorageOptions
from warehouse.moved import renamed_keyword

#: files replaced longer ago than this are deleted by ``compact`` (Delta's own default: 7 days);
#: snapshots older than that may no longer be readable
RETENTION_HOURS = 168


@renamed_keyword("format", "output_format")
def history(root: str | os.PathLike, *, output_format: str | None = None, out: IO[str] | None = None,
            storage_options: StorageOptions = None) -> list[dict] | None:
    """The warehouse snapshots of ``root``, oldest first: one dict each, with its integer ``snapshot`` (what
    ``as_of`` / ``--as-of`` take), ``time``, ``run_id``, ``operation`` (ingest, compact, upgrade), the files
    ingested, replaced and pruned, rows added and removed per table, each table's Delta ``versions``, and
    ``readable``: false once `warehouse compact` deleted files the snapshot reads (``as_of`` cannot read it).
    With ``output_format`` (``table`` or ``json``): written to ``out`` (default stdout); returns None. ``root`` may be
    an ``s3://`` URL; ``storage_options`` add to and override the AWS environment (docs/storage.md)."""
    from warehouse.errors import NotASnapshot
    from warehouse.filesystems import FileSystems
    from warehouse.store.readable import read_existing_snapshot, readable_snapshots
    from warehouse.store.storage import Store

    checks.choice(output_format, "format", checks.HISTORY_FORMATS)
    root = checks.root(root)
    store = Store(root, FileSystems.for_path(root, storage_options))
    try:
        read_existing_snapshot(store, root)  # the errors of a root that is no warehouse
    except NotASnapshot:
        pass  # said below, with any other damaged one
    damaged: list = []
    records = store.snapshots(damaged)
    for e in damaged:  # the others are listed: a damaged snapshot does not hide the history
        print(f"warning: {e}", file=sys.stderr, flush=True)
    readable = readable_snapshots(store, records)
    rows = [{**_entry(r), "readable": r.number in readable} for r in records]
    if output_format is None:
        return rows
    from warehouse.reading.output import write_report

    cols = ["snapshot", "time", "operation", "files_ingested", "files_replaced", "files_pruned", "rows_added",
            "rows_removed", "readable"]
    write_report(rows, output_format, out, [(None, ["snapshot", "time", "operation", "ingested", "replaced", "pruned",
                                             "rows in", "rows out", "readable"],
                                      [[_cell(r[c]) for c in cols] for r in rows])])
    return None


def _entry(r) -> dict:
    did = r.did
    return {
        "snapshot": r.number, "time": r.time, "run_id": r.run_id, "operation": r.operation,
        "files_ingested": did.get("files_ingested", 0), "files_replaced": did.get("files_replaced", 0),
        "files_pruned": did.get("files_pruned", 0), "rows_added": did.get("rows_added", {}),
        "rows_removed": did.get("rows_removed", {}), "files_compacted": did.get("files_compacted", {}),
        "versions": {t: v["version"] for t, v in r.tables.items()},
    }


def _cell(v: Any) -> Any:
    """A per-table count as its total over the data tables (the catalog's rows are files, not data)."""
    if isinstance(v, dict):
        return sum(n for t, n in v.items() if t != "sources")
    if isinstance(v, bool):
        return "yes" if v else "no"
    return v


@dataclass
class CompactSummary:
    snapshot: int | None  # None: nothing to merge or delete, so no snapshot was committed
    files_before: dict[str, int] = field(default_factory=dict)
    files_after: dict[str, int] = field(default_factory=dict)
    files_deleted: int = 0
    retention_hours: int = RETENTION_HOURS
    #: symbolic links (or other non-files) in the table folders, relative to the root: never followed nor deleted
    left_alone: list[str] = field(default_factory=list)

    @property
    def committed(self) -> bool:
        return self.snapshot is not None

    def text(self) -> str:
        before, after = sum(self.files_before.values()), sum(self.files_after.values())
        if not self.committed:
            text = (f"nothing to compact: {before} data files, none to merge and none replaced more than "
                    f"{self.retention_hours:g} h ago; no snapshot committed")
        else:
            text = (f"compacted into snapshot {self.snapshot}: {before} data files -> {after}; "
                    f"{self.files_deleted} files older than {self.retention_hours:g} h deleted")
        if self.left_alone:
            shown = ", ".join(self.left_alone[:5]) + (", ..." if len(self.left_alone) > 5 else "")
            n = len(self.left_alone)
            text += (f"; {n} symbolic link{'s' if n != 1 else ''} in table folders left alone ({shown}): compact "
                     "never follows or deletes one; remove them, nothing of the warehouse is there")
        return text


def compact(root: str | os.PathLike, *, retention_hours: int = RETENTION_HOURS, wait: bool = True,
            progress: bool = True, storage_options: StorageOptions = None) -> CompactSummary:
    """Merge the small files of every table and delete files replaced more than ``retention_hours``
    ago (never those of the latest snapshot, nor of the one before this compact); commits a
    new snapshot, unless there was nothing to merge or delete (``summary.committed`` False). Holds the writer lock, as ``ingest`` does (``wait=False``: LockedError when held); on an
    ``s3://`` root that is its lease, and deltalake gets the resolved ``storage_options`` (docs/storage.md)."""
    from warehouse.errors import LeaseLost
    from warehouse.filesystems import FileSystems
    from warehouse.run.commit import _sigint_deferred, repair
    from warehouse.run.damage import refuse
    from warehouse.run.failure import said_in_one_line
    from warehouse.run.opening import open_for_writing
    from warehouse.run.runner import say
    from warehouse.store import delta
    from warehouse.store.readable import declared
    from warehouse.store.snapshots import SnapshotRecord, new_run_id, pin
    from warehouse.store.storage import Store

    root = checks.root(root)
    checks.count(retention_hours, "retention_hours", least=0)
    store = Store(root, FileSystems.for_path(root, storage_options))
    if not store.exists() and not store.legacy():
        from warehouse.store.readable import read_existing_snapshot

        read_existing_snapshot(store, root)  # says why there is nothing to compact
    run_id = new_run_id()
    # a fault (a read-only or full disk, the lock's path a folder, a store refusing) as one line, as an ingest's
    with said_in_one_line(store, run_id, "compact"), store.lock(wait=wait, announce=say if progress else None):
        record, damaged = open_for_writing(store, say if progress else (lambda _m: None))
        refuse(store, damaged)  # a table that lost files or its log is mended by an ingest, which reads sources
        new = SnapshotRecord(
            number=record.number + 1, time=dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds"),
            run_id=run_id, operation="compact", path_fields_sql=record.path_fields_sql, settings=record.settings,
        )
        summary = CompactSummary(new.number, retention_hours=retention_hours)
        meta = delta.properties({"warehouse_run_id": run_id, "warehouse_snapshot": new.number,
                                 "warehouse_operation": "compact"})
        compacted = {}
        with _sigint_deferred() as committed:
            try:
                for name in declared(record):  # a snapshot's other names keep their pins, untouched
                    pinned = record.tables[name]
                    uri = store.table_uri(name)
                    with store.filesystems.writing_root(uri):  # a store's refusal as one line naming the object
                        table = delta.open_table(uri)
                        summary.files_before[name] = len(table.file_uris())
                        store.check_lock()  # each commit step, as an ingest's: a run whose lease was taken over stops
                        done = table.optimize.compact(writer_properties=delta.writer_properties(),
                                                      commit_properties=meta)
                        if done.get("numFilesRemoved"):
                            compacted[name] = {"removed": done["numFilesRemoved"], "added": done["numFilesAdded"]}
                        # the files of the snapshot before this compact are kept: a run that dies before the
                        # new snapshot is repaired to it, and connections opened on it keep working
                        store.check_lock()
                        deleted, links = delta.vacuum(table, uri, retention_hours=retention_hours,
                                                      keep_version=pinned["version"], commit_properties=meta)
                        summary.files_deleted += len(deleted)
                        summary.left_alone += sorted(name if link == "." else f"{name}/{link}" for link in links)
                        table = delta.open_table(uri)
                    summary.files_after[name] = len(table.file_uris())
                    new.tables[name] = {**pinned, "version": table.version()}
                    if done.get("numFilesRemoved"):  # delta-rs wrote the merged files: the schema they share, anew
                        new.tables[name] = pin(table.version(), pinned.get("columns", []), delta.files_schema(
                            delta.live_files(uri, table.version()), store.filesystems))
                for name, pinned in record.tables.items():
                    new.tables.setdefault(name, pinned)
                new.did = {"files_compacted": compacted, "files_deleted": summary.files_deleted,
                           "retention_hours": retention_hours}
                if not summary.files_deleted and all(new.tables[name]["version"] == pinned["version"]
                                                     for name, pinned in record.tables.items()):
                    summary.snapshot = None  # nothing merged or deleted: the latest snapshot still says it all
                    return summary
                store.check_lock()
                store.write_snapshot(new)
                committed(f"interrupted after the compaction was committed: the warehouse holds snapshot {new.number}")
            except LeaseLost:
                raise  # the root is another run's now: it repairs the tables, not this one
            except BaseException:
                repair(store, record, delete_orphans=False)
                raise
    return summary

