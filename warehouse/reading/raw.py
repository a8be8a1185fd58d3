"""``raw.<table>``: the data files of each declared table's Delta version that the warehouse snapshot
pins, with every declared column present (NULL where an older file lacks it) and JSON columns typed JSON.
Empty tables are typed empty relations, so a query on any table works on any warehouse; a damaged table's
view fails with the message that says what is wrong, when a query reads it. A remote root's files are
Arrow datasets registered in the connection (``register_remote_files``).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from warehouse.filesystems import FileSystems
from warehouse.formatkit.read_schema import ReadSchema, ReadTable
from warehouse.reading.statements import create_view, duckdb_errors
from warehouse.reading.statements import quote as _quote
from warehouse.store.snapshots import FILE_SCHEMA, SnapshotRecord

if TYPE_CHECKING:
    import duckdb

def raw_select(table: ReadTable, files: list[str], present: set[str], one_schema: bool = False) -> str:
    """SELECT for ``raw.<table>`` over ``files`` whose union of columns is ``present``; ``one_schema``: every
    file has the same columns of the same types (the pin's ``FILE_SCHEMA``), so DuckDB need not match them
    by name, which reads every file's footer and unifies their schemas each time a query binds the view."""
    cols = []
    for name, t, json in table.columns:
        if name not in present:
            cols.append(f"CAST(NULL AS {t}) AS {name}")
        elif json:
            cols.append(f"CAST({name} AS JSON) AS {name}")
        else:
            cols.append(name)
    select = ",\n       ".join(cols)
    if not files:
        return f"SELECT {select} LIMIT 0"
    if len(files) == 1 and files[0].startswith(ARROW_SCAN):  # a remote root's files: an Arrow dataset (below)
        return f"SELECT {select}\nFROM {files[0][len(ARROW_SCAN):]}"
    file_list = "[" + ", ".join(_quote(f) for f in files) + "]"
    if one_schema:
        return f"SELECT {select}\nFROM read_parquet({file_list})"
    return f"SELECT {select}\nFROM read_parquet({file_list}, union_by_name = true)"


def create_raw_views(con: duckdb.DuckDBPyConnection, schema: ReadSchema, files: dict[str, list[str]],
                     record: SnapshotRecord, damaged: dict[str, str] | None = None, diagnose=None) -> None:
    """``raw.<table>`` for every table of ``schema``. A damaged table's view (``damaged``: table -> the message
    saying what is wrong and what to do; ``diagnose(table, error)`` gives one for a view DuckDB cannot
    make, when it reads the files' footers) fails with that message when a query reads it: a connection
    opens on a warehouse with a damaged table, and everything that does not read that table works."""
    damaged = damaged if damaged is not None else {}
    footers_read = footers_readable(con, [f for name, fs in files.items() if name not in damaged for f in fs])
    for table in schema.tables:
        create = f"CREATE OR REPLACE VIEW raw.{table.name} AS "
        if table.name not in damaged:
            if footers_read or not files.get(table.name):  # nothing damaged to find by binding it now
                create_view(con, raw_statement(table, files, record))
                continue
            try:  # bound now: DuckDB reads the files' footers, and the one it cannot read is named
                con.execute(raw_statement(table, files, record))
                continue
            except duckdb_errors() as e:  # a data file missing, or not Parquet
                if diagnose is None:
                    raise
                damaged[table.name] = diagnose(table.name, e)
        create_view(con, create + failing_select(table, damaged[table.name]))


def raw_statement(table: ReadTable, files: dict[str, list[str]], record: SnapshotRecord,
                  logged: dict[str, int] | None = None) -> str:
    """The statement that makes ``raw.<table>`` over its pinned ``files`` (table -> files), with the columns
    ``record`` says its files have; read as one relation when ``record`` pins the schema they share and each
    file is the size ``logged`` says its table's log recorded (a file replaced since is read by name)."""
    pinned = record.tables.get(table.name) or {}
    listed = files.get(table.name, [])
    one = largest_first(listed, logged) if pinned.get(FILE_SCHEMA) and logged is not None else None
    return f"CREATE OR REPLACE VIEW raw.{table.name} AS " + raw_select(
        table, listed if one is None else one, set(pinned.get("columns", ())), one is not None)


def largest_first(files: list[str], logged: dict[str, int]) -> list[str] | None:
    """``files`` with the largest first; None when one is not the size its log recorded (replaced: it may
    have other columns) or is gone. Without ``union_by_name`` DuckDB estimates a read of several files as
    the first one's rows times their number, and a join holds the side it estimates smaller in memory:
    estimated from a small first file, ``responses`` was taken for the smaller side of a join with a filtered
    ``path_fields`` and read whole, where the paths that matched would have skipped all but one row group.
    (Rows come in file order where a query sets none: this order, of no meaning, as the commits' was.)"""
    if any(f.startswith(ARROW_SCAN) for f in files):
        return None
    try:
        sizes = {f: os.stat(f).st_size for f in files}
    except OSError:
        return None
    if any(logged.get(f) != size for f, size in sizes.items()):
        return None
    if len(files) < 2:
        return files
    first = max(files, key=sizes.__getitem__)
    return [first, *(f for f in files if f != first)]


def footers_readable(con: duckdb.DuckDBPyConnection, files: list[str]) -> bool:
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


def failing_select(table: ReadTable, message: str) -> str:
    """A SELECT with ``table``'s columns that fails with ``message`` when a query reads a row of it."""
    cols = ", ".join(f"CAST(NULL AS {t}) AS {name}" for name, t, _ in table.columns)
    return f"SELECT {cols} FROM (SELECT error({_quote(message)}) AS damaged) WHERE damaged IS NOT NULL"


#: marks a "file list" that is an Arrow dataset registered in the connection under the name that follows
ARROW_SCAN = "arrow-scan:"


def register_remote_files(con: duckdb.DuckDBPyConnection, files: dict[str, list[str]],
                          schemas: dict, filesystems: FileSystems) -> tuple[dict[str, list[str]], dict]:
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
        fs, _ = filesystems.path(urls[0])
        paths = [filesystems.path(u)[1] for u in urls]
        dataset = ds.dataset(paths, filesystem=fs, format="parquet", schema=schemas[name])
        relation = f"_warehouse_arrow_{name}"
        con.register(relation, dataset)
        registered[relation] = dataset
        out[name] = [ARROW_SCAN + relation]
    return out, registered
