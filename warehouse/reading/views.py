"""DuckDB connections with every view of the warehouse, over one snapshot.

Two layers:

* ``raw.<table>``: the data files of each declared table's Delta version that
  the warehouse snapshot pins (``raw.py``; which snapshots can be read: ``store/readable.py``).
* the public views (``formatkit/declared_views.py``): the files in ``sql/``, applied in name order,
  one view per file (``path_fields`` and ``generation_params``: the statement of the
  first installed format that defines them, ``Ingestor.defines``, when one does);
  then the installed formats' own views (``Ingestor.views``), which may read any
  of those (``view_statements``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from warehouse.access import StorageOptions
from warehouse.errors import StorageError, first_line
from warehouse.filesystems import FileSystems
from warehouse.formatkit.declared_views import PATH_FIELDS
from warehouse.formatkit.read_schema import ReadSchema, read_schema
from warehouse.reading.damaged import damage_message
from warehouse.reading.raw import ARROW_SCAN, create_raw_views, footers_readable, raw_statement, register_remote_files
from warehouse.reading.statements import create_view, duckdb_errors
from warehouse.reading.statements import quote as _quote
from warehouse.reading.view_cache import make_views
from warehouse.store import delta
from warehouse.store.readable import pinned_files, read_existing_snapshot, readable_hint
from warehouse.store.snapshots import SnapshotRecord
from warehouse.store.storage import Store

if TYPE_CHECKING:  # imported where a connection is made: every ingest imports this module, few need duckdb
    import duckdb

    from warehouse.store.delta_damage import Damage  # (imported where a table is looked at for damage)

def cursor(con: duckdb.DuckDBPyConnection, snapshot: "Snapshot") -> duckdb.DuckDBPyConnection:
    """A cursor of ``con`` (a connection of its own to the same database) that reads its views: Arrow
    datasets registered in ``con`` are not visible from a cursor, so a remote root's are registered again."""
    c = con.cursor()
    for relation, dataset in snapshot.datasets.items():
        c.register(relation, dataset)
    return c


def apply_sql_views(con: duckdb.DuckDBPyConnection, schema: ReadSchema, path_fields_files: list[str] | None = None) -> None:
    """The views of sql/ and of the formats (``schema.views``); ``path_fields_files``: the materialised
    path_fields, when it was made by this very SQL (same rows, no regex over every path)."""
    for name, statement in schema.views:
        if name == PATH_FIELDS and path_fields_files and path_fields_files[0].startswith(ARROW_SCAN):
            con.execute(f"CREATE OR REPLACE VIEW path_fields AS SELECT * FROM {path_fields_files[0][len(ARROW_SCAN):]}")
            continue
        if name == PATH_FIELDS and path_fields_files:
            try:
                con.execute(path_fields_view(path_fields_files))
                continue
            except duckdb_errors():  # its file damaged: the same rows from the catalog, by the SQL that made them
                pass
        create_view(con, statement)


def path_fields_view(files: list[str]) -> str:
    """The statement of the view ``path_fields`` over its materialised ``files``."""
    return f"CREATE OR REPLACE VIEW path_fields AS SELECT * FROM read_parquet([{', '.join(_quote(f) for f in files)}])"


def sound_statements(schema: ReadSchema, files: dict[str, list[str]], record: SnapshotRecord,
                     path_fields_files: list[str] | None, logged: dict[str, int] | None = None) -> list[str]:
    """Every view's statement, in the order they are made, for a local snapshot with nothing damaged
    (``create_raw_views`` and ``apply_sql_views`` make the same when nothing is); ``logged``: each file's size
    as its table's log recorded it (``raw_statement``)."""
    out = [raw_statement(table, files, record, logged) for table in schema.tables]
    for name, statement in schema.views:
        out.append(path_fields_view(path_fields_files) if name == PATH_FIELDS and path_fields_files else statement)
    return out


#: A filter on path-derived fields (experiment, prompt_set, ...) selects source paths in
#: ``path_fields``; DuckDB passes the join's build side to the Parquet scan as an IN list
#: when it has at most this many values (its default: 50). With the list, row groups
#: without those paths are skipped and the text columns are decoded only for matching
#: rows: 50k of 1M responses with their texts in 90 ms instead of 310 ms
#: (bench/queries.py). Lists of tens of thousands of paths cost more than they save.
PATH_FILTER_LIST_MAX = 10_000


@dataclass(frozen=True)
class Snapshot:
    """The state of the warehouse a connection reads: warehouse snapshot ``number`` and its files."""

    root: str
    number: int
    run_id: str | None
    files: tuple[str, ...]  # absolute paths of every Parquet file its views read
    #: a remote root's tables: the Arrow datasets registered in the connection, by name (``cursor``)
    datasets: dict = field(default_factory=dict, compare=False, repr=False)

    #: tables that cannot be read, and why (their views fail with it)
    damaged: dict = field(default_factory=dict, compare=False, repr=False)
    #: how the root is reached (its store's)
    filesystems: FileSystems = field(default_factory=lambda: FileSystems(check=False), compare=False, repr=False)

    def missing(self) -> list[str]:
        """The files of this snapshot that are gone (deleted by `warehouse compact` once past its retention)."""
        return [f for f in self.files if not self.filesystems.exists(f)]


def open_snapshot(root: str | os.PathLike, *, as_of: int | None = None, threads: int | None = None,
                  storage_options: StorageOptions = None) -> tuple[duckdb.DuckDBPyConnection, Snapshot]:
    """``connect(root, as_of=...)`` and the snapshot the connection reads."""
    from warehouse import checks

    as_of = checks.as_of(as_of)
    store = Store(root, FileSystems.for_path(root, storage_options))
    record = read_existing_snapshot(store, root, as_of)
    schema = read_schema()
    # a remote root's tables are read through Arrow datasets, made with each table's schema and DeltaTable
    schemas: dict | None = {} if store.remote else None
    # The latest snapshot's files are never vacuumed: a table of it that cannot be read is damaged, and the
    # others stay readable. An older snapshot's may have been: it is read whole or not at all.
    damaged: dict[str, Damage] | None = {} if as_of is None else None
    opened: dict | None = {} if store.remote else None
    logged: dict[str, int] = {}  # the sizes the logs recorded: a table's files read as one only while they are those
    files = pinned_files(store, record, schemas, damaged, opened, logged)
    if as_of is not None or store.remote:
        from warehouse.store import delta_damage  # (here: a cold query on a sound local root does without it)
    if as_of is not None:
        for name in files:
            made = delta_damage.made_after(store.table_uri(name), record.tables[name]["version"], record.number)
            if made is not None:
                raise StorageError(
                    f"{root}: snapshot {as_of} cannot be read any more: table {name} was made again by snapshot "
                    f"{made}, its Delta log having been lost. {readable_hint(store)}")
        gone = [f for fs in files.values() for f in fs if not store.filesystems.exists(f)]
        if gone:
            raise StorageError(
                f"{root}: snapshot {as_of} cannot be read any more: `warehouse compact` deleted {len(gone)} of its "
                f"files (e.g. {store.rel(gone[0])}). {readable_hint(store)}")
    elif store.remote:  # read through Arrow datasets, which look at a file only when a query reads it
        for name in list(files):
            # a missing object, by one listing; one that is no Parquet file fails the query that reads it, and
            # ``damage_error`` names its table (a file of another size than logged is the writers' to mend)
            found = delta_damage.data_damage(store.root, name, opened[name], by_size=False)
            if found is not None:
                damaged[name] = found
                del files[name]
    messages = {name: damage_message(str(store.root), d) for name, d in (damaged or {}).items()}
    import duckdb

    con = duckdb.connect(":memory:")
    # GLOBAL: cursors of this connection (one per call in ``Warehouse``) get it too. The footers a query
    # reads are kept for the next (a file changed since is read again): each query of a notebook or of
    # the viewer read every footer of the tables it names anew.
    con.execute(f"SET GLOBAL dynamic_or_filter_threshold = {PATH_FILTER_LIST_MAX}; SET GLOBAL parquet_metadata_cache = true")
    if threads:
        con.execute(f"SET threads = {int(threads)}")
    # the files themselves (local paths or URLs), before a remote root's are swapped for Arrow scans
    every = tuple(f for fs in files.values() for f in fs)
    datasets: dict = {}
    if store.remote:
        files, datasets = register_remote_files(con, files, schemas, store.filesystems)
    con.execute("CREATE SCHEMA IF NOT EXISTS raw")
    fresh = record.path_fields_sql == schema.path_fields_sql
    path_fields_files = files.get(PATH_FIELDS) if fresh and PATH_FIELDS not in messages else None
    if not store.remote and not messages and footers_readable(con, list(every)):  # the usual case: nothing damaged
        make_views(con, sound_statements(schema, files, record, path_fields_files, logged))
    else:
        create_raw_views(con, schema, files, record, messages,
                         None if damaged is None else _diagnose_view(store, record, opened))
        apply_sql_views(con, schema, path_fields_files)
    return con, Snapshot(str(store.root), record.number, record.run_id, every, datasets, messages, store.filesystems)


def _diagnose_view(store: Store, record: SnapshotRecord, opened: dict | None):
    """For ``create_raw_views``: the message for a table whose view DuckDB could not make."""

    def diagnose(name: str, error: BaseException) -> str:
        from warehouse.store import delta_damage

        table = (opened or {}).get(name) or delta.open_table(store.table_uri(name), record.tables[name]["version"])
        found = delta_damage.data_damage(store.root, name, table, footers=True)
        if found is None:  # nothing wrong with its files after all: DuckDB's own reason
            found = delta_damage.Damage(name, delta_damage.UNKNOWN, f"its data files cannot be read ({first_line(error)})",
                                 name)
        return damage_message(str(store.root), found)

    return diagnose


def connect(root: str | os.PathLike, *, as_of: int | None = None, threads: int | None = None,
            storage_options: StorageOptions = None) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection with every warehouse view over the warehouse at ``root``.

    The connection reads one warehouse snapshot: ``as_of`` (a number ``warehouse history``
    lists), by default the latest when it was opened; reconnect to see later ingests. A root
    with no warehouse (nothing ingested there) is an error. ``root`` may be an ``s3://`` URL;
    ``storage_options`` (a dict, or ``KEY=VALUE`` strings) add to and override the AWS
    environment, as for ``warehouse.ingest`` (docs/storage.md).
    One DuckDB connection runs one query at a time: give each thread its own
    ``con.cursor()`` (``warehouse.open`` does that for you).

    >>> import warehouse, tempfile
    >>> con = warehouse.connect(tempfile.mkdtemp())
    Traceback (most recent call last):
    ...
    warehouse.errors.StorageError: ...: no warehouse here (no snapshot in .warehouse/snapshots); create one with `warehouse ingest PATH --root ...`
    """
    return open_snapshot(root, as_of=as_of, threads=threads, storage_options=storage_options)[0]
