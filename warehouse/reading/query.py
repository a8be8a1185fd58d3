"""``warehouse sql`` and ``warehouse stats`` as functions: ``warehouse.sql`` and ``warehouse.stats``."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Sequence
from typing import IO, Any

import duckdb

from warehouse import checks, interrupt
from warehouse.access import StorageOptions
from warehouse.checks import SQL_FORMATS, STATS_FORMATS
from warehouse.errors import QueryError
from warehouse.formatkit.read_schema import read_schema
from warehouse.moved import renamed_keyword
from warehouse.reading.damaged import damage_error
from warehouse.reading.output import TABLE_ROWS, write_report, write_result
from warehouse.reading.views import connect


def open_existing(root: str | os.PathLike, as_of: int | None = None, storage_options: StorageOptions = None) -> duckdb.DuckDBPyConnection:
    root = checks.root(root)
    con = connect(root, as_of=as_of, storage_options=storage_options)
    interrupt.register(con)  # Ctrl-C stops its queries at once (under the CLI's guard)
    return con


def columns_hint(con: duckdb.DuckDBPyConnection, *views: str) -> str:
    """These views (default: the view of every table) and their columns, for error messages."""
    views = list(views) or read_schema().table_names()
    lines = []
    for v in views:
        cols = [r[0] for r in con.execute(f"DESCRIBE {v}").fetchall()]
        lines.append(f"  {v}: {', '.join(cols)}")
    return "\n".join(lines)


#: the relation a binder error names: `Values list "r" does not have a column named "x"`
NAMED_RELATION = re.compile(r'(?:Values list|Table) "([^"]+)" does not have a column')


def missing_column_hint(con: duckdb.DuckDBPyConnection, sql: str, error: duckdb.Error) -> str:
    """For a binder error about a column: the columns of the relation it names, else of the views the query reads.

    Any other error (syntax, types, a missing table, which DuckDB already answers with
    "Did you mean ...") gets no hint: its message says what is wrong.
    """
    if not isinstance(error, duckdb.BinderException) or "column" not in str(error):
        return ""
    views = set(_views(con))
    named = NAMED_RELATION.search(str(error))
    if named:
        name = named.group(1)
        # a view by its name, or by an alias given in the query (`FROM responses AS r`)
        found = [name] if name in views else [
            v for v in views if re.search(rf"\b{re.escape(v)}\s+(?:AS\s+)?\"?{re.escape(name)}\b", sql, re.IGNORECASE)]
    else:  # `Referenced column "x" not found in FROM clause`: the views in the query
        found = [v for v in views if re.search(rf"\b{re.escape(v)}\b", sql, re.IGNORECASE)]
    columns = {}
    for v in sorted(found):
        try:
            columns[v] = [r[0] for r in con.execute(f"DESCRIBE {v}").fetchall()]
        except duckdb.Error:  # a view that cannot be bound (what the error is about): its columns are not known
            continue
    if not columns:
        return ""
    return "\n\n" + "\n".join(f"columns of {v}: {', '.join(names)}" for v, names in columns.items())


def _views(con: duckdb.DuckDBPyConnection) -> list[str]:
    return [r[0] for r in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()]


@renamed_keyword("format", "output_format")
def sql(
    root: str | os.PathLike,
    query: str,
    params: Sequence[Any] | dict[str, Any] | None = None,
    *,
    output_format: str | None = None,
    max_rows: int | None = TABLE_ROWS,
    max_width: int | None = None,
    out: IO[str] | None = None,
    as_of: int | None = None,
    storage_options: StorageOptions = None,
) -> duckdb.DuckDBPyRelation | None:
    """Run ``query`` (DuckDB SQL, one or more statements) on the views of the warehouse at ``root``.

    Without ``output_format``: the result of the last statement as a DuckDB relation (``.pl()``,
    ``.arrow()``, ``.fetchall()``; None for a statement without one). With ``output_format`` (one of
    ``SQL_FORMATS``): the result written to ``out`` (default stdout) as ``warehouse sql`` prints it,
    the table format showing ``max_rows`` rows (0 or None: all) in lines of at most ``max_width`` characters
    (None: the terminal's width, or ``output.PIPE_WIDTH`` when ``out`` is not a terminal; 0: no limit); returns None. ``params`` fill ``?``
    (a sequence) or ``$name`` (a dict) placeholders. A query DuckDB rejects is a ``QueryError`` with
    its message (for a missing column, with the columns of the relation it names). ``as_of``: read
    warehouse snapshot N (``warehouse.history`` lists them), default the latest. ``root`` may be an
    ``s3://`` URL; ``storage_options`` add to and override the AWS environment (docs/storage.md).
    """
    checks.choice(output_format, "format", SQL_FORMATS)
    checks.count(max_rows, "max_rows", least=0, meaning=" (0: all)")
    checks.count(max_width, "max_width", least=0, meaning=" (0: no limit)")
    con = open_existing(root, checks.as_of(as_of), storage_options)
    if params is not None and not isinstance(params, dict):
        params = list(params)
    try:
        try:
            relation = con.sql(query) if params is None else con.sql(query, params=params)
        except duckdb.Error as e:
            raise damage_error(e, str(root)) or QueryError(f"{e}{missing_column_hint(con, query, e)}") from None
        if output_format is None or relation is None:  # a statement without a result (SET, CREATE VIEW, ...)
            con = None  # not closed: the relation holds it, open, until the relation is gone
            return relation
        try:
            write_result(relation, output_format, out or sys.stdout, con=con, params=params, max_rows=max_rows or None,
                         max_width=max_width)
        except QueryError as e:  # a row that fails: a failed cast, or a damaged table's view, said in its own line
            raise damage_error(e, str(root)) or e from None
        return None
    finally:
        if con is not None:
            con.close()


@renamed_keyword("format", "output_format")
def stats(root: str | os.PathLike, *, files: bool = False, output_format: str | None = None,
          out: IO[str] | None = None, storage_options: StorageOptions = None) -> dict[str, Any] | None:
    """Row counts per table, and records seen / ingested / quarantined per format and per file, and
    notes on what the counts do not show (per-token values whose response is missing).

    For every file, ``records == ingested + quarantined`` (count conservation). ``files`` lists
    every file; by default only those with quarantined records or not ingested. The installed
    formats add sections of their own (``Ingestor.stats_queries``). Without
    ``output_format``: a dict ``{"tables", "notes", "formats", "files", <section>...}``; with ``output_format`` (``table`` or
    ``json``): that written to ``out`` (default stdout) as ``warehouse stats`` prints it; returns None.
    """
    checks.choice(output_format, "format", STATS_FORMATS)
    con = open_existing(root, storage_options=storage_options)
    try:
        st = _stats(con, files)
        sections = _format_sections(con)
    except duckdb.Error as e:  # a damaged table: its one line; anything else is a bug here, with its traceback
        raise damage_error(e, str(root)) or e from None
    finally:
        con.close()
    st.update({name: [dict(zip(names, row)) for row in rows] for name, (names, rows) in sections.items()})
    if output_format is None:
        return st
    per_format = ["format", "status", "files", "records", "ingested", "quarantined", "bytes"]
    per_file = ["source_path", "source_format", "status", "records", "ingested", "quarantined"]
    tables = [(None, ["table", "rows"], [[k, v] for k, v in st["tables"].items()]),
              (None, per_format, [[r[c] for c in per_format] for r in st["formats"]])]
    if st["files"]:
        tables.append((None if files else "files with quarantined records or not ingested:", per_file,
                       [[r[c] for c in per_file] for r in st["files"]]))
    for name, (names, rows) in sections.items():
        if rows:
            tables.append((name.replace("_", " ") + ":", names, rows))
    write_report(st, output_format, out, tables)
    if output_format == "table" and st["notes"]:
        (out or sys.stdout).write("\n" + "\n".join(st["notes"]) + "\n")
    return None


def _format_sections(con: duckdb.DuckDBPyConnection) -> dict[str, tuple[list[str], list[list[Any]]]]:
    """The installed formats' own sections (``Ingestor.stats_queries``): column names and rows of each."""
    from warehouse.formatkit.registry import Registry

    sections = {}
    for ingestor in Registry.installed().ingestors():
        for name, query in ingestor.stats_queries.items():
            try:
                rel = con.execute(query)
            except duckdb.Error as e:  # a format's query that does not fit its views: a bug, said in one line
                raise QueryError(f"the stats section {name} of the format {ingestor.name} failed: {e}") from None
            sections[name] = ([d[0] for d in rel.description], [list(r) for r in rel.fetchall()])
    return sections


def _notes(con: duckdb.DuckDBPyConnection) -> list[str]:
    """What the counts do not show: per-token values whose response is not in the warehouse (their
    rows are kept, with the id their response's file would have: ingesting it links them)."""
    lists, files = con.execute(
        "SELECT count(*), count(DISTINCT source_path) FROM raw.token_values "
        "WHERE response_id IS NULL OR response_id NOT IN (SELECT response_id FROM raw.responses)").fetchone()
    if not lists:
        return []
    return [f"token_values: {lists:,} lists of per-token values from {files:,} file{'s' * (files != 1)} belong to a response the "
            "warehouse does not hold (its file is missing or not ingested yet); see them with: warehouse sql "
            "\"SELECT DISTINCT source_path, response_id FROM token_values WHERE response_id NOT IN "
            "(SELECT response_id FROM responses)\""]


def _stats(con: duckdb.DuckDBPyConnection, every_file: bool) -> dict[str, Any]:
    tables = {name: con.execute(f"SELECT count(*) FROM {name}").fetchone()[0] for name in read_schema().table_names()}
    fmt_rows = con.execute(
        """
        SELECT coalesce(source_format, '(none)') AS format, status,
               count(*) AS files, sum(records) AS records,
               sum(records_ingested) AS ingested, sum(records_quarantined) AS quarantined,
               sum(size_bytes) AS bytes
        FROM sources GROUP BY ALL ORDER BY 1, 2
        """
    ).fetchall()
    files = con.execute(
        f"""
        SELECT source_path, source_format, status, records, records_ingested, records_quarantined
        FROM sources {"" if every_file else "WHERE coalesce(records_quarantined, 0) > 0 OR status IS DISTINCT FROM 'ingested'"}
        ORDER BY source_path
        """
    ).fetchall()
    return {
        "tables": tables,
        "notes": _notes(con),
        "formats": [
            dict(zip(("format", "status", "files", "records", "ingested", "quarantined", "bytes"), r)) for r in fmt_rows
        ],
        "files": [
            dict(zip(("source_path", "source_format", "status", "records", "ingested", "quarantined"), r)) for r in files
        ],
    }
