"""Converting a root of the layout before Delta tables (``manifest.json`` + ``data/<table>/``), once.

The next writer of such a root (``ingest``, ``compact``), holding the lock, makes the
manifest's live files the first version of each table's Delta table and commits snapshot 1;
only then are ``manifest.json``, ``data/`` and the old lock file removed. The files are
hard-linked (copied where links are refused) under names of the converting run, so until
snapshot 1 exists the old layout is whole: a conversion that dies is started over.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil

import orjson

from warehouse.errors import StorageError, first_line
from warehouse.formatkit.declared import TABLES
from warehouse.formatkit.declared_views import PATH_FIELDS, path_fields_sql_hash
from warehouse.run.path_fields import materialize_path_fields
from warehouse.store import delta
from warehouse.store.delta import Part
from warehouse.store.snapshots import SnapshotRecord, new_run_id, pin
from warehouse.store.storage import LEGACY_MANIFEST, Store

LEGACY_FORMAT = 1


def upgrade(store: Store) -> SnapshotRecord:
    """Convert the legacy root at ``store`` (lock held); its first snapshot."""
    path = store.root / LEGACY_MANIFEST
    if not store.exists():
        try:
            manifest = orjson.loads(path.read_bytes())
        except orjson.JSONDecodeError as e:
            raise StorageError(f"{path}: corrupt manifest ({e}); {REINGEST}") from None
        if isinstance(manifest, dict) and manifest.get("format_version") != LEGACY_FORMAT:
            raise StorageError(f"{path}: warehouse format {manifest.get('format_version')!r}, this version converts "
                               f"{LEGACY_FORMAT}; {REINGEST}")
        wrong = _not_a_manifest(store, manifest)
        if wrong:
            raise StorageError(f"{path}: damaged manifest: {wrong}; {REINGEST}")
        for d in store.table_dirs({*TABLES, PATH_FIELDS}):  # what a conversion that died left: started over
            shutil.rmtree(d)
        _convert(store, manifest)
    record = store.read_snapshot()
    path.unlink(missing_ok=True)
    shutil.rmtree(store.root / "data", ignore_errors=True)
    (store.root / ".lock").unlink(missing_ok=True)  # the old layout's lock file
    return record


#: what to do with a root of the old layout that cannot be converted
REINGEST = "it cannot be converted: ingest the sources into a new --root"


def _not_a_manifest(store: Store, manifest) -> str | None:
    """What makes ``manifest`` no manifest of the old layout this can convert (None: it is one). Every file
    it lists must be a file under the root's ``data/<table>/``: a manifest is data, and the conversion
    links the files it names into the tables."""
    if not isinstance(manifest, dict):
        return f"it holds a JSON {type(manifest).__name__.replace('NoneType', 'null')}, not an object"
    tables = manifest.get("tables")
    if not isinstance(tables, dict):
        return "it has no 'tables' object"
    if not isinstance(manifest.get("settings", {}), dict):
        return "its 'settings' is not an object"
    for name in TABLES:
        entries = tables.get(name, [])
        if not isinstance(entries, list):
            return f"its table {name} is not a list of files"
        for entry in entries:
            rel = entry.get("path") if isinstance(entry, dict) else None
            columns = entry.get("columns") if isinstance(entry, dict) else None
            if not isinstance(rel, str) or not isinstance(columns, list) or not all(isinstance(c, str) for c in columns):
                return f"its table {name} lists {entry!r}, not a file entry (path, columns)"
            parts = rel.split("/")
            if len(parts) != 3 or parts[:2] != ["data", name] or parts[2] in ("", ".", ".."):
                return f"its table {name} lists {rel!r}, which is not a file of data/{name}/"
            if not os.path.isfile(store.abspath(rel)) or os.path.islink(store.abspath(rel)):
                return f"its table {name} lists {rel}, which is not a file there"
    return None


def _convert(store: Store, manifest: dict) -> None:
    run_id = new_run_id()
    root = str(store.root)
    record = SnapshotRecord(
        number=1, time=dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds"), run_id=run_id,
        operation="upgrade", settings=manifest.get("settings", {}), path_fields_sql=path_fields_sql_hash(),
    )
    meta = {"warehouse_run_id": run_id, "warehouse_snapshot": 1, "warehouse_operation": "upgrade"}
    n = 0
    rows = {}
    for name, table in TABLES.items():
        parts, columns = [], set()
        for entry in manifest["tables"].get(name, []):
            n += 1
            target = store.data_path(name, f"{run_id}-u{n:05d}.parquet")
            _link(store.abspath(entry["path"]), target)
            try:
                parts.append(Part.of(root, target))
            except (OSError, ValueError) as e:  # pyarrow's ArrowInvalid is a ValueError
                raise StorageError(f"{store.root / LEGACY_MANIFEST}: damaged manifest: it lists {entry['path']}, "
                                   f"which is not a readable Parquet file ({first_line(e)}); {REINGEST}") from None
            columns |= set(entry["columns"])
        version = delta.commit_table(store.table_uri(name), None, table.arrow_schema, parts, [], meta)
        record.tables[name] = pin(version, [c for c in table.column_names if c in columns]
                                  + sorted(columns - set(table.column_names)), delta.shared_schema("", parts))
        if parts:
            rows[name] = sum(p.rows for p in parts)
    sources = record.tables["sources"]
    pf_path = store.data_path(PATH_FIELDS, f"{run_id}.parquet")
    source_files = delta.live_files(store.table_uri("sources"), sources["version"])
    if source_files:
        schema = materialize_path_fields(source_files[0], pf_path)
    else:  # (every commit of the old layout wrote a catalog file, if an empty one)
        empty = _empty_sources(store, run_id)
        schema = materialize_path_fields(empty, pf_path)
        os.unlink(empty)
    pf = [Part.of(root, pf_path)]
    record.tables[PATH_FIELDS] = pin(delta.commit_table(store.table_uri(PATH_FIELDS), None, schema, pf, [], meta),
                                     schema.names, delta.shared_schema("", pf))
    record.did = {"converted_from": f"{LEGACY_MANIFEST} version {manifest.get('version')}", "rows_added": rows,
                  "files_ingested": 0, "files_replaced": 0, "files_pruned": 0, "rows_removed": {}}
    store.write_snapshot(record)


def _empty_sources(store: Store, run_id: str) -> str:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from warehouse.tables import SOURCES

    path = store.data_path("sources", f"{run_id}-empty.parquet")
    pq.write_table(pa.Table.from_pylist([], schema=SOURCES.arrow_schema), path)
    return path


def _link(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:  # a file system without hard links: a copy
        shutil.copyfile(src, dst)
