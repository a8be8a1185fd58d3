"""DuckDB connections with every view of the warehouse.

Two layers:

* ``raw.<table>``: the data files of each declared table's Delta version that
  the warehouse snapshot pins, with every declared column present (NULL where an
  older file lacks it) and JSON columns typed JSON. Empty tables are typed empty relations, so a
  query on any table works on any warehouse.
* the public views, defined by the files in ``sql/``, applied in name order,
  one view per file (``path_fields`` and ``generation_params``: the statement of the
  first installed format that defines them, ``Ingestor.defines``, when one does);
  then the installed formats' own views (``Ingestor.views``), which may read any
  of those (``view_statements``).
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from warehouse import remote
from warehouse.access import StorageOptions
from warehouse.errors import DamagedTable, StorageError, first_line
from warehouse.formatkit.declared import TABLES
from warehouse.store import delta
from warehouse.store.delta import Damage
from warehouse.store.snapshots import SnapshotRecord
from warehouse.store.storage import Store
from warehouse.tables import Table, duckdb_type

if TYPE_CHECKING:  # imported where a connection is made: every ingest imports this module, few need duckdb
    import duckdb

#: the table path-derived fields are materialised in, one row per source path (joined on source_path); also
#: the name of the view that derives them (``sql/10_path_fields.sql``, or a format's: ``Ingestor.defines``)
PATH_FIELDS = "path_fields"


def sql_dir() -> Path:
    here = Path(__file__).resolve().parent.parent  # warehouse/
    for candidate in (here.parent / "sql", here / "_sql"):  # source checkout, then wheel
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError("the sql/ directory of view definitions is missing from this installation")


def view_files() -> list[Path]:
    """The core's view files, one view each, in the order they are made."""
    return sorted(sql_dir().glob("*.sql"))


def view_name(statement: str) -> str:
    """The view a ``CREATE OR REPLACE VIEW`` statement makes."""
    return re.search(r"CREATE OR REPLACE VIEW (\w+)", statement).group(1)


def view_statements() -> list[tuple[str, str]]:
    """(view name, statement) of every view, in the order they are made: the core's (``view_files``), the
    ones a format defines (``Ingestor.defines``) by its statement, then the formats' own (``format_views``)."""
    defined = format_defines()
    core = [(view_name(text), text) for text in (path.read_text() for path in view_files())]
    return [(name, defined.get(name, text)) for name, text in core] + [(view_name(v), v) for v in format_views()]


def format_defines() -> dict[str, str]:
    """The core's views the installed formats define, ``{name: statement}``: the first format's, in detection order."""
    from warehouse.formatkit.registry import Registry

    defined: dict[str, str] = {}
    for ingestor in Registry.installed().ingestors():
        for name, statement in ingestor.defines.items():
            defined.setdefault(name, statement)
    return defined


def path_fields_statement() -> str:
    """The statement of ``path_fields`` in use: the installed format's that defines it, else the core's."""
    return format_defines().get(PATH_FIELDS) or (sql_dir() / "10_path_fields.sql").read_text()


def path_fields_sql_hash() -> str:
    """What a materialised path_fields was made by: the copy is read only while the statement is the same."""
    return hashlib.sha256(path_fields_statement().encode()).hexdigest()


def _quote(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def raw_select(table: Table, files: list[str], present: set[str]) -> str:
    """SELECT for ``raw.<table>`` over ``files`` whose union of columns is ``present``."""
    cols = []
    for c in table.columns:
        t = duckdb_type(c)
        if c.name not in present:
            cols.append(f"CAST(NULL AS {t}) AS {c.name}")
        elif c.json:
            cols.append(f"CAST({c.name} AS JSON) AS {c.name}")
        else:
            cols.append(c.name)
    select = ",\n       ".join(cols)
    if not files:
        return f"SELECT {select} LIMIT 0"
    if len(files) == 1 and files[0].startswith(ARROW_SCAN):  # a remote root's files: an Arrow dataset (below)
        return f"SELECT {select}\nFROM {files[0][len(ARROW_SCAN):]}"
    file_list = "[" + ", ".join(_quote(f) for f in files) + "]"
    return f"SELECT {select}\nFROM read_parquet({file_list}, union_by_name = true)"


def create_raw_views(con: duckdb.DuckDBPyConnection, files: dict[str, list[str]], record: SnapshotRecord,
                     damaged: dict[str, str] | None = None, diagnose=None) -> None:
    """``raw.<table>`` for every declared table. A damaged table's view (``damaged``: table -> the message
    saying what is wrong and what to do; ``diagnose(table, error)`` gives one for a view DuckDB cannot
    make, when it reads the files' footers) fails with that message when a query reads it: a connection
    opens on a warehouse with a damaged table, and everything that does not read that table works."""
    con.execute("CREATE SCHEMA IF NOT EXISTS raw")
    damaged = damaged if damaged is not None else {}
    footers_read = _footers_readable(con, [f for name, fs in files.items() if name not in damaged for f in fs])
    for table in TABLES.values():
        pinned = record.tables.get(table.name) or {}
        present = set(pinned.get("columns", ()))
        create = f"CREATE OR REPLACE VIEW raw.{table.name} AS "
        if table.name not in damaged:
            if footers_read or not files.get(table.name):  # nothing damaged to find by binding it now
                create_view(con, create + raw_select(table, files.get(table.name, []), present))
                continue
            try:  # bound now: DuckDB reads the files' footers, and the one it cannot read is named
                con.execute(create + raw_select(table, files[table.name], present))
                continue
            except duckdb_errors() as e:  # a data file missing, or not Parquet
                if diagnose is None:
                    raise
                damaged[table.name] = diagnose(table.name, e)
        create_view(con, create + failing_select(table, damaged[table.name]))


def _footers_readable(con: duckdb.DuckDBPyConnection, files: list[str]) -> bool:
    """Whether DuckDB reads the footer of every one of the local Parquet ``files``, in one query: what binding
    each table's view would read of them (False: some file is missing or is no Parquet file, and the views
    are bound one by one to say which table; a remote root's tables are Arrow datasets, bound as before)."""
    if any(f.startswith(ARROW_SCAN) for f in files):
        return False
    if not files:
        return True
    try:
        con.execute(f"SELECT count(*) FROM parquet_file_metadata([{', '.join(_quote(f) for f in files)}])").fetchall()
    except duckdb_errors():
        return False
    return True


def failing_select(table: Table, message: str) -> str:
    """A SELECT with ``table``'s columns that fails with ``message`` when a query reads a row of it."""
    cols = ", ".join(f"CAST(NULL AS {duckdb_type(c)}) AS {c.name}" for c in table.columns)
    return f"SELECT {cols} FROM (SELECT error({_quote(message)}) AS damaged) WHERE damaged IS NOT NULL"


#: ``CREATE [OR REPLACE] VIEW name`` at the start of a statement (after comments), before its ``AS``
_CREATE_VIEW = re.compile(r"\A((?:\s|--[^\n]*\n)*CREATE\s+(?:OR\s+REPLACE\s+)?VIEW\s+[\w.]+)(\s+AS\b)", re.IGNORECASE)
#: whether this DuckDB takes ``WITH (DEFER_BINDING)`` (None: not tried yet)
_can_defer: bool | None = None


def create_view(con: duckdb.DuckDBPyConnection, statement: str) -> None:
    """Run ``statement``, a CREATE VIEW, with the view bound when a query first reads it rather than now.

    DuckDB binds a view when it is made (works out its columns, reads the footers of the files under
    it), and again whenever a query reads it; binding every view of the warehouse when a connection
    opened was most of the time a small query took from a cold process, for views the query never
    read. A view whose binding finds damage (``create_raw_views``) is not made this way. A DuckDB that
    does not know DEFER_BINDING binds it now, as before."""
    global _can_defer
    deferred, n = _CREATE_VIEW.subn(r"\1 WITH (DEFER_BINDING)\2", statement, count=1)
    if n and _can_defer is not False:
        import duckdb

        try:
            con.execute(deferred)
            _can_defer = True
            return
        except duckdb.ParserException:
            if _can_defer:  # it took the option before: the statement itself is wrong, as DuckDB says
                raise
            _can_defer = False
    con.execute(statement)


def duckdb_errors():
    import duckdb

    return duckdb.Error


#: how a damaged table's message reads, inside the error DuckDB raises for a query on its view
_DAMAGED_IN_ERROR = re.compile(r"Invalid Input Error: (.*?: table (\w+) is damaged: .*)")
#: the relation of a remote root's table (``register_remote_files``), named in the error of a failed read
_ARROW_IN_ERROR = re.compile(r"_warehouse_arrow_(\w+)'? failed: (.*)")


def damage_error(e: BaseException, root: str) -> DamagedTable | None:
    """For a query's error that is a damaged table's (its view's message, or a remote root's data file that
    could not be read): the one-line error to raise instead; None for any other error."""
    text = str(e)
    m = _DAMAGED_IN_ERROR.search(text)
    if m:
        return DamagedTable(m.group(1).strip(), table=m.group(2))
    m = _ARROW_IN_ERROR.search(text)
    if m:
        name = m.group(1)
        return DamagedTable(f"{root}: table {name} is damaged: a data file of it cannot be read "
                            f"({m.group(2).splitlines()[0]}); {REREAD}", table=name)
    return None


#: marks a "file list" that is an Arrow dataset registered in the connection under the name that follows
ARROW_SCAN = "arrow-scan:"


def register_remote_files(con: duckdb.DuckDBPyConnection, files: dict[str, list[str]],
                          schemas: dict) -> tuple[dict[str, list[str]], dict]:
    """A remote root's tables as DuckDB reads them without httpfs (not installable offline): per table
    a ``pyarrow.dataset`` over the pinned files through ``pyarrow.fs``, registered in ``con``. DuckDB's
    Arrow scan pushes projections and filters into the dataset, so columns and row groups not needed
    are not fetched. ``schemas``: each table's Arrow schema at its pinned Delta version, which every
    file reads as (an older file lacking a later column reads it as null), so opening fetches no
    footer. Returns the table -> "file list" ``raw_select`` reads (``ARROW_SCAN`` + name), and the
    registered name -> dataset (a cursor of ``con`` does not see them: ``cursor`` registers them again)."""
    import pyarrow.dataset as ds

    out, registered = {}, {}
    for name, urls in files.items():
        if not urls:
            out[name] = []
            continue
        fs, _ = remote.fs_path(urls[0])
        paths = [remote.fs_path(u)[1] for u in urls]
        dataset = ds.dataset(paths, filesystem=fs, format="parquet", schema=schemas[name])
        relation = f"_warehouse_arrow_{name}"
        con.register(relation, dataset)
        registered[relation] = dataset
        out[name] = [ARROW_SCAN + relation]
    return out, registered


def cursor(con: duckdb.DuckDBPyConnection, snapshot: "Snapshot") -> duckdb.DuckDBPyConnection:
    """A cursor of ``con`` (a connection of its own to the same database) that reads its views: Arrow
    datasets registered in ``con`` are not visible from a cursor, so a remote root's are registered again."""
    c = con.cursor()
    for relation, dataset in snapshot.datasets.items():
        c.register(relation, dataset)
    return c


def apply_sql_views(con: duckdb.DuckDBPyConnection, path_fields_files: list[str] | None = None) -> None:
    """The views of sql/ and of the formats (``view_statements``); ``path_fields_files``: the materialised
    path_fields, when it was made by this very SQL (same rows, no regex over every path)."""
    for name, statement in view_statements():
        if name == PATH_FIELDS and path_fields_files and path_fields_files[0].startswith(ARROW_SCAN):
            con.execute(f"CREATE OR REPLACE VIEW path_fields AS SELECT * FROM {path_fields_files[0][len(ARROW_SCAN):]}")
            continue
        if name == PATH_FIELDS and path_fields_files:
            try:
                con.execute(
                    "CREATE OR REPLACE VIEW path_fields AS SELECT * FROM read_parquet(["
                    + ", ".join(_quote(f) for f in path_fields_files)
                    + "])"
                )
                continue
            except duckdb_errors():  # its file damaged: the same rows from the catalog, by the SQL that made them
                pass
        create_view(con, statement)


def format_views() -> list[str]:
    """The installed formats' own view statements, in detection order."""
    from warehouse.formatkit.registry import Registry

    return [v for i in Registry.installed().ingestors() for v in i.views]


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

    def missing(self) -> list[str]:
        """The files of this snapshot that are gone (deleted by `warehouse compact` once past its retention)."""
        return [f for f in self.files if not remote.exists(f)]


def open_snapshot(root: str | os.PathLike, *, as_of: int | None = None, threads: int | None = None,
                  storage_options: StorageOptions = None) -> tuple[duckdb.DuckDBPyConnection, Snapshot]:
    """``connect(root, as_of=...)`` and the snapshot the connection reads."""
    from warehouse import checks

    as_of = checks.as_of(as_of)
    remote.configure_for(root, storage_options)
    store = Store(root)
    record = read_existing_snapshot(store, root, as_of)
    # a remote root's tables are read through Arrow datasets, made with each table's schema and DeltaTable
    schemas: dict | None = {} if store.remote else None
    # The latest snapshot's files are never vacuumed: a table of it that cannot be read is damaged, and the
    # others stay readable. An older snapshot's may have been: it is read whole or not at all.
    damaged: dict[str, Damage] | None = {} if as_of is None else None
    opened: dict | None = {} if store.remote else None
    files = pinned_files(store, record, schemas, damaged, opened)
    if as_of is not None:
        for name in files:
            made = delta.made_after(store.table_uri(name), record.tables[name]["version"], record.number)
            if made is not None:
                raise StorageError(
                    f"{root}: snapshot {as_of} cannot be read any more: table {name} was made again by snapshot "
                    f"{made}, its Delta log having been lost. {readable_hint(store)}")
        gone = [f for fs in files.values() for f in fs if not remote.exists(f)]
        if gone:
            raise StorageError(
                f"{root}: snapshot {as_of} cannot be read any more: `warehouse compact` deleted {len(gone)} of its "
                f"files (e.g. {store.rel(gone[0])}). {readable_hint(store)}")
    elif store.remote:  # read through Arrow datasets, which look at a file only when a query reads it
        for name in list(files):
            # a missing object, by one listing; one that is no Parquet file fails the query that reads it, and
            # ``damage_error`` names its table (a file of another size than logged is the writers' to mend)
            found = delta.data_damage(str(store.root), name, opened[name], by_size=False)
            if found is not None:
                damaged[name] = found
                del files[name]
    messages = {name: damage_message(str(store.root), d) for name, d in (damaged or {}).items()}
    import duckdb

    con = duckdb.connect(":memory:")
    # GLOBAL: cursors of this connection (one per call in ``Warehouse``) get it too.
    con.execute(f"SET GLOBAL dynamic_or_filter_threshold = {PATH_FILTER_LIST_MAX}")
    if threads:
        con.execute(f"SET threads = {int(threads)}")
    # the files themselves (local paths or URLs), before a remote root's are swapped for Arrow scans
    every = tuple(f for fs in files.values() for f in fs)
    datasets: dict = {}
    if store.remote:
        files, datasets = register_remote_files(con, files, schemas)
    create_raw_views(con, files, record, messages, None if damaged is None else _diagnose_view(store, record, opened))
    fresh = record.path_fields_sql == path_fields_sql_hash()
    apply_sql_views(con, files.get(PATH_FIELDS) if fresh and PATH_FIELDS not in messages else None)
    return con, Snapshot(str(store.root), record.number, record.run_id, every, datasets, messages)


def _diagnose_view(store: Store, record: SnapshotRecord, opened: dict | None):
    """For ``create_raw_views``: the message for a table whose view DuckDB could not make."""

    def diagnose(name: str, error: BaseException) -> str:
        table = (opened or {}).get(name) or delta.open_table(store.table_uri(name), record.tables[name]["version"])
        found = delta.data_damage(str(store.root), name, table, footers=True)
        if found is None:  # nothing wrong with its files after all: DuckDB's own reason
            found = delta.Damage(name, delta.UNKNOWN, f"its data files cannot be read ({first_line(error)})",
                                 name)
        return damage_message(str(store.root), found)

    return diagnose


#: what to do about a table that lost data files or its log: the next ingest reads its sources again
REREAD = "the next `warehouse ingest` into this root reads again the sources whose rows were in it"


def damage_message(root: str, d: Damage) -> str:
    """The one line for a damaged table: the table, the damage, the file, what to do."""
    if d.table == PATH_FIELDS:
        fix = "the views compute it from the catalog meanwhile, and the next `warehouse ingest` writes it again"
    elif d.kind in (delta.CHECKPOINT, delta.BEYOND):
        fix = f"`warehouse compact --root {root}` (or the next `warehouse ingest`) mends it"
    elif d.kind == delta.UNKNOWN:
        fix = (f"if it stays so, move {root}/{d.table} away: the next `warehouse ingest` then makes the table "
               "again from its sources")
    elif d.table == "sources":
        fix = ("the next `warehouse ingest` into this root rebuilds the catalog by reading again every source "
               "the tables hold rows of")
    elif d.kind == delta.LOST_LOG:
        fix = "the next `warehouse ingest` into this root makes the table again, reading its sources again"
    else:
        fix = REREAD
    where = f" ({d.path})" if d.path and d.path not in d.what else ""
    return f"{root}: table {d.table} is damaged: {d.what}{where}; {fix}"


def declared(record: SnapshotRecord) -> list[str]:
    """The tables of ``record`` that the warehouse declares (its own, path_fields and the installed formats'):
    the only ones a command reads or writes. A snapshot's name for anything else (a format uninstalled
    since) keeps its pin, untouched."""
    return [name for name in record.tables if name in TABLES or name == PATH_FIELDS]


def pinned_files(store: Store, record: SnapshotRecord, schemas: dict | None = None,
                 damaged: dict | None = None, opened: dict | None = None) -> dict[str, list[str]]:
    """table -> the files of the Delta version ``record`` pins; ``schemas`` (when given) gets each table's
    Arrow schema at that version, ``opened`` its DeltaTable opened there. A table whose log cannot be read:
    with ``damaged`` (a dict), its ``delta.Damage`` goes there and the table is left out; without, a
    StorageError saying so."""
    out = {}
    for name in declared(record):
        version = record.tables[name]["version"]
        if schemas is None and opened is None and not store.remote:
            # its log read here when it is the plain case (deltalake for anything else, and to say what is damaged);
            # read whole, each commit the version needs is there and not empty (``delta.log_gap`` looks for that)
            found_files = delta.local_files(store.table_uri(name), version)
            if found_files is not None:
                out[name] = found_files
                continue
        try:
            table = delta.open_table(store.table_uri(name), version)
            out[name], schema = delta.files_and_schema(table)
        except Exception as e:  # noqa: BLE001 - deltalake's errors for a log damaged, cleaned up or gone
            found = delta.diagnose(str(store.root), name, version, e)
            if damaged is None:
                raise StorageError(
                    f"{store.root}: snapshot {record.number} cannot be read any more: table {name} version "
                    f"{version}: {found.what}. {readable_hint(store)}"
                ) from None
            damaged[name] = found
            continue
        if damaged is not None and not store.remote:  # a commit emptied by a crash reads as no change at all
            gap = delta.log_gap(str(store.root), name, version)
            if gap is not None and gap.kind == delta.LOST_LOG:
                damaged[name] = gap
                del out[name]
                continue
        if schemas is not None:
            schemas[name] = schema
        if opened is not None:
            opened[name] = table
    return out


def readable_snapshots(store: Store, records: list[SnapshotRecord] | None = None) -> set[int]:
    """The numbers of the snapshots (of ``records``, default all the readable ones) whose files are all still
    there: `warehouse compact` deletes the files only older snapshots read. Each table's log is read
    forward once, and each file looked for once, however many snapshots pin it. A snapshot pinning a
    version of a table made again after it (its log lost: ``delta.made_after``) is not readable either."""
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
                there[f] = remote.exists(f)
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
            made_by[name, v] = delta.made_after(store.table_uri(name), v, -1)
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


def materialize_path_fields(sources_file: str, out_path: str):
    """Write path_fields for the catalog file ``sources_file`` to ``out_path`` (Parquet); its Arrow schema."""
    import duckdb
    import pyarrow.parquet as pq

    con = duckdb.connect(":memory:")
    try:
        con.execute("CREATE SCHEMA raw")
        con.execute(f"CREATE VIEW raw.sources AS SELECT source_path FROM read_parquet({_quote(sources_file)})")
        con.execute(path_fields_statement())
        os.makedirs(os.path.dirname(out_path), exist_ok=True)
        con.execute(f"COPY (SELECT * FROM path_fields ORDER BY source_path) TO {_quote(out_path)} (FORMAT parquet, COMPRESSION zstd)")
    finally:
        con.close()
    return pq.read_schema(out_path)


class PathFieldsAhead:
    """``path_fields`` of the source paths a run knows before its batches end (the catalog's and the
    walk's), evaluated in a thread while the batches run (DuckDB releases the GIL): the commit then
    only keeps the rows of the paths it catalogues (``write``) instead of running the regular
    expressions after the batches (~0.3 s of a 20,000-file run's wall time, on its critical path)."""

    def __init__(self, paths: set[str]):
        import threading

        import duckdb

        self._con = duckdb.connect(":memory:")  # its own: the thread is the only one using it until write/close
        self._error: BaseException | None = None
        self._closing = threading.Event()
        # the statement resolved here: the formats are loaded by this thread, not beside the batches
        self._thread = threading.Thread(target=self._evaluate, args=(sorted(paths), path_fields_statement()),
                                        daemon=True, name="path-fields")
        self._thread.start()

    def _evaluate(self, paths: list[str], statement: str) -> None:
        import pyarrow as pa

        try:
            con = self._con
            con.execute("SET threads = 1")  # beside the batches: one core at most
            con.execute("CREATE SCHEMA raw")
            con.register("known_paths", pa.table({"source_path": pa.array(paths, pa.string())}))
            con.execute("CREATE VIEW raw.sources AS SELECT source_path FROM known_paths")
            con.execute(statement)
            if self._closing.is_set():
                raise InterruptedError("closed before the evaluation")
            # kept as Arrow: a DuckDB table would be written with NOT NULL columns, unlike the direct COPY
            self._rows = con.sql("SELECT * FROM path_fields").to_arrow_table()
        except BaseException as e:  # the commit then materialises path_fields itself
            self._error = e

    def write(self, sources_file: str, out_path: str):
        """Write what ``materialize_path_fields(sources_file, out_path)`` would; its Arrow schema, or None
        (nothing written) when a catalogued path was not known ahead or the evaluation failed."""
        import pyarrow.parquet as pq

        self._thread.join()
        if self._error is not None:
            return None
        con = self._con
        con.register("ahead", self._rows)
        con.execute(f"CREATE OR REPLACE VIEW wanted AS SELECT source_path FROM read_parquet({_quote(sources_file)})")
        if con.execute("SELECT count(*) FROM wanted ANTI JOIN ahead USING (source_path)").fetchone()[0]:
            return None
        os.makedirs(os.path.dirname(out_path), exist_ok=True)
        # source_path from the catalog file, as the direct COPY has it (declared NOT NULL there)
        con.execute(f"COPY (SELECT wanted.source_path, ahead.* EXCLUDE (source_path) FROM wanted "
                    f"JOIN ahead ON wanted.source_path = ahead.source_path ORDER BY wanted.source_path) "
                    f"TO {_quote(out_path)} (FORMAT parquet, COMPRESSION zstd)")
        return pq.read_schema(out_path)

    def close(self) -> None:
        """Stop the evaluation if it still runs and close its connection. The runner calls it however the
        run ends: a run stopped by Ctrl-C, --strict or an error does not wait for rows nobody will read."""
        self._closing.set()
        while self._thread.is_alive():
            self._con.interrupt()  # DuckDB's way to stop a query from another thread; again until it has
            self._thread.join(0.05)  # (an interrupt before the query starts is forgotten when it starts)
        self._con.close()


def snapshot_files(root: str | os.PathLike, *, as_of: int | None = None) -> dict[str, list[str]]:
    """The data files of each table in snapshot ``as_of`` (default: the latest): table -> absolute paths.

    The one way an engine other than the project's own readers (Spark: ``warehouse.spark.register``)
    learns which files hold a table's rows: each table at the Delta version the snapshot pins.
    """
    from warehouse.reading.views import declared
    from warehouse.store import delta

    store = Store(root)
    record = store.read_snapshot(as_of)
    return {t: delta.live_files(store.table_uri(t), record.tables[t]["version"]) for t in declared(record)}
