"""Which snapshots can still be read, and the files each pins: a reader opens only a snapshot whose files
are all there (`warehouse compact` deletes the files only older snapshots read), and is told which ones
it can read when it cannot.
"""

from __future__ import annotations

import os

from warehouse.errors import StorageError
from warehouse.filesystems import FileSystems
from warehouse.formatkit.declared_views import PATH_FIELDS
from warehouse.formatkit.read_schema import read_schema
from warehouse.store import delta
from warehouse.store.snapshots import SnapshotRecord
from warehouse.store.storage import Store


def declared(record: SnapshotRecord) -> list[str]:
    """The tables of ``record`` that the warehouse declares (its own, path_fields and the installed formats'):
    the only ones a command reads or writes. A snapshot's name for anything else (a format uninstalled
    since) keeps its pin, untouched."""
    known = set(read_schema().table_names())
    return [name for name in record.tables if name in known or name == PATH_FIELDS]


def pinned_files(store: Store, record: SnapshotRecord, schemas: dict | None = None,
                 damaged: dict | None = None, opened: dict | None = None,
                 sizes: dict[str, int] | None = None) -> dict[str, list[str]]:
    """table -> the files of the Delta version ``record`` pins; ``schemas`` (when given) gets each table's
    Arrow schema at that version, ``opened`` its DeltaTable opened there. A table whose log cannot be read:
    with ``damaged`` (a dict), its ``delta_damage.Damage`` goes there and the table is left out; without, a
    StorageError saying so. ``sizes`` (when given) gets the size the log recorded of each local file read
    from the log here (``delta.local_files``)."""
    out = {}
    for name in declared(record):
        version = record.tables[name]["version"]
        if schemas is None and opened is None and not store.remote:
            # its log read here when it is the plain case (deltalake for anything else, and to say what is damaged);
            # read whole, each commit the version needs is there and not empty (``delta_damage.log_gap`` looks for that)
            found_files = delta.local_files(store.table_uri(name), version, sizes)
            if found_files is not None:
                out[name] = found_files
                continue
        from warehouse.store import delta_damage  # (here: a cold query on a sound local root does without it)

        try:
            table = delta.open_table(store.table_uri(name), version)
            out[name], schema = delta.files_and_schema(table)
        except Exception as e:  # noqa: BLE001 - deltalake's errors for a log damaged, cleaned up or gone
            found = delta_damage.diagnose(store.root, name, version, e)
            if damaged is None:
                raise StorageError(
                    f"{store.root}: snapshot {record.number} cannot be read any more: table {name} version "
                    f"{version}: {found.what}. {readable_hint(store)}"
                ) from None
            damaged[name] = found
            continue
        if damaged is not None and not store.remote:  # a commit emptied by a crash reads as no change at all
            gap = delta_damage.log_gap(store.root, name, version)
            if gap is not None and gap.kind == delta_damage.LOST_LOG:
                damaged[name] = gap
                del out[name]
                continue
        if schemas is not None:
            schemas[name] = schema
        if opened is not None:
            opened[name] = table
    for name in list(out):
        stray = _outside(store.table_uri(name), out[name])
        if stray is None:
            continue
        from warehouse.store import delta_damage

        found = delta_damage.Damage(name, delta_damage.DATA, f"its log lists a data file outside the table's folder "
                                    f"({stray}), which is never read", name, (stray,))
        if damaged is None:
            raise StorageError(f"{store.root}: snapshot {record.number} cannot be read: table {name}: {found.what}. "
                               f"{readable_hint(store)}")
        damaged[name] = found
        del out[name]
    return out


def _outside(table_uri: str, files: list[str]) -> str | None:
    """The first of ``files`` (a table's, as its log lists them) that lies outside the table's folder, by name."""
    folder = table_uri.rstrip("/") + "/"
    return next((f for f in files if not f.startswith(folder) or delta.leaves_table(f[len(folder):])), None)


def readable_snapshots(store: Store, records: list[SnapshotRecord] | None = None) -> set[int]:
    """The numbers of the snapshots (of ``records``, default all the readable ones) whose files are all still
    there: `warehouse compact` deletes the files only older snapshots read. Each table's log is read
    forward once, and each file looked for once, however many snapshots pin it. A snapshot pinning a
    version of a table made again after it (its log lost: ``delta_damage.made_after``) is not readable either."""
    from warehouse.store import delta_damage

    records = store.snapshots([]) if records is None else records
    pinned: dict[str, set[int]] = {}
    for record in records:
        for name in declared(record):
            pinned.setdefault(name, set()).add(record.tables[name]["version"])
    there: dict[str, bool] = {}

    def all_there(files: list[str] | None) -> bool:
        if files is None:
            return False
        for f in files:
            if f not in there:
                there[f] = store.filesystems.exists(f)
            if not there[f]:
                return False
        return True

    ok = {(name, v): all_there(files) for name, versions in pinned.items()
          for v, files in delta.live_files_by_version(store.table_uri(name), versions).items()}
    made_by: dict[tuple[str, int], int | None] = {}  # the snapshot that committed each version, read once

    def pinned_ok(record: SnapshotRecord, name: str) -> bool:
        v = record.tables[name]["version"]
        if not ok[name, v]:
            return False
        if (name, v) not in made_by:
            made_by[name, v] = delta_damage.made_after(store.table_uri(name), v, -1)
        return made_by[name, v] is None or made_by[name, v] <= record.number

    return {r.number for r in records if all(pinned_ok(r, name) for name in declared(r))}


def readable_hint(store: Store) -> str:
    """Which snapshots can still be read (their files all there), for messages about one that cannot."""
    records = store.snapshots([])
    good = readable_snapshots(store, records)
    readable = []
    for record in reversed(records):
        if record.number not in good:
            break
        readable.append(record.number)
    if not readable:
        return "No snapshot is fully readable: run `warehouse ingest` again."
    return (f"Snapshots {readable[-1]} to {readable[0]} are readable (`warehouse history` lists them); "
            "open the warehouse again, or pick one of those with as_of / --as-of.")


def read_existing_snapshot(store: Store, root: str | os.PathLike, as_of: int | None = None) -> SnapshotRecord:
    """Snapshot ``as_of`` (default: the latest) of the warehouse at ``root``; a clear error when there is none.

    Reading never creates a warehouse (``ingest`` does): a typo in the root must not
    look like an empty warehouse.
    """
    if not store.root.exists():
        raise StorageError(f"{root}: no such directory, so no warehouse here; create one with `warehouse ingest PATH --root {root}`")
    if not store.root.is_dir():
        raise StorageError(f"{root}: is a file, not a warehouse directory; pass the directory given to `warehouse ingest --root`")
    if not store.exists():
        if store.legacy():
            raise StorageError(f"{root}: a warehouse in the layout before Delta tables (manifest.json); the next "
                               f"`warehouse ingest ... --root {root}` (or `warehouse compact --root {root}`) converts it")
        raise StorageError(f"{root}: {NO_WAREHOUSE}; create one with `warehouse ingest PATH --root {root}`")
    return store.read_snapshot(as_of)


#: what a root without a snapshot is said to be
NO_WAREHOUSE = "no warehouse here (no snapshot in .warehouse/snapshots)"


def snapshot_files(root: str | os.PathLike, *, as_of: int | None = None,
                   filesystems: FileSystems | None = None) -> dict[str, list[str]]:
    """The data files of each table in snapshot ``as_of`` (default: the latest): table -> absolute paths.

    The one way an engine other than the project's own readers (Spark: ``warehouse.spark.register``)
    learns which files hold a table's rows: each table at the Delta version the snapshot pins.
    ``filesystems``: how the root is reached (default: with the environment's storage options).
    """
    store = Store(root, filesystems)
    record = store.read_snapshot(as_of)
    return {t: delta.live_files(store.table_uri(t), record.tables[t]["version"]) for t in declared(record)}
