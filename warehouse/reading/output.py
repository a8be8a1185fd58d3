"""Writing query results to a stream: table, csv, json, jsonl.

DuckDB itself turns every value into text, so every DuckDB type comes out valid
in every format, as DuckDB writes it:

* json, jsonl: each row one object keyed by its column names (whatever they are;
  repeated ones suffixed: a, a_1), each value as ``to_json`` writes it. Nested values stay nested, JSON columns
  are JSON (not strings holding JSON), HUGEINT and DECIMAL are exact numbers;
  intervals, blobs, times, UUIDs and the like are DuckDB's text. NaN and
  infinities, which JSON has no words for, become null.
* csv: numbers and booleans as they are, everything else as DuckDB's text
  (``CAST AS VARCHAR``; nested values as JSON), written by pyarrow's CSV writer:
  text is quoted, NULL is an empty field, an empty string ``""``.
* table: the same text, for the first ``max_rows`` rows, fitted to the terminal's
  width (``texttable``: long values cut, columns that do not fit left out and named);
  the rows after them are counted, not kept, and a footer says how many there were.

Results stream in Arrow batches: no format holds the whole result in memory.
"""

from __future__ import annotations

import io
import re
import shutil
import sys
from collections.abc import Iterator
from typing import IO, TYPE_CHECKING, Any

import duckdb

from warehouse.checks import SQL_FORMATS as FORMATS
from warehouse.errors import QueryError
from warehouse.reading import texttable
from warehouse.reading.texttable import CELL_WIDTH

if TYPE_CHECKING:
    import pyarrow as pa

BATCH_ROWS = 8192
#: rows the table format shows unless told otherwise
TABLE_ROWS = 40
#: a table's width when stdout is no terminal (a file, a pipe); ``--max-width`` sets another
PIPE_WIDTH = 120

#: DuckDB type ids written as JSON text in csv and table cells
NESTED = {"list", "array", "struct", "map", "union", "variant"}
#: DuckDB type ids csv writes as they are (Arrow holds them exactly; pyarrow writes them unquoted)
PLAIN = {"boolean", "tinyint", "smallint", "integer", "bigint", "utinyint", "usmallint", "uinteger", "ubigint",
         "float", "double"}
#: a JSON string (skipped whole) or a bare NaN / Infinity token (DuckDB's to_json writes them)
NON_FINITE = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|(-?Infinity|NaN)')


def finite_json(text: str) -> str:
    """``text`` (JSON) with its bare NaN and ±Infinity tokens (not valid JSON) replaced by null."""
    if "NaN" not in text and "Infinity" not in text:
        return text
    return NON_FINITE.sub(lambda m: "null" if m.group(1) else m.group(0), text)


def _json_text(types: list) -> list[bool]:
    """Which columns' csv and table text is JSON (nested values, and JSON columns): NaN in them becomes null."""
    return [t.id in NESTED or str(t) == "JSON" for t in types]


def statement_text(sql: str) -> str:
    """``sql``, one statement, without the semicolons and comments that may end it (``...; -- done``), which
    would end the statement early once it is written inside another: read with DuckDB's own tokenizer."""
    tokens = duckdb.tokenize(sql)
    end = len(sql)
    for offset, kind in reversed(tokens):
        if kind == duckdb.token_type.comment or (kind == duckdb.token_type.operator and not sql[offset:end].strip(" \t\r\n;")):
            end = offset
            continue
        break
    return sql[:end]


def _over(text: str, n: int) -> str:
    """``FROM`` the statement ``text`` with its ``n`` columns renamed positionally (c0, c1, ...), so any names,
    duplicates included, work. The statement's own lines follow a line of their own, so a comment ending its last
    line ends nothing of the statement around it."""
    return f"FROM (\n{text}\n) AS r({', '.join(f'c{i}' for i in range(n))})"


def _text_sql(text: str, types: list, width: int | None = None, keep=frozenset()) -> str:
    """One VARCHAR column per column of the statement ``text`` (whose column types are ``types``): DuckDB's
    text of each value, nested values as JSON.

    ``width`` keeps of a longer text its first ``width`` characters plus one (to tell it was cut) and its last
    ``width`` (a path is cut in its middle: ``texttable``), so a table holds a bounded text per cell whatever
    the data; columns whose type id is in ``keep`` stay as they are.
    """
    exprs = []
    for i, t in enumerate(types):
        c = f"c{i}"
        if t.id in keep:
            exprs.append(c)
        elif t.id in NESTED:
            exprs.append(f"to_json({c})::VARCHAR")
        else:
            exprs.append(f"CAST({c} AS VARCHAR)")
    sql = f"SELECT {', '.join(exprs)} {_over(text, len(types))}"
    if width:
        long = 2 * width + 1
        aliases = [f"c{i}" for i in range(len(types))]
        cut = [f"CASE WHEN length({a}) > {long} THEN left({a}, {width + 1}) || '…' || right({a}, {width}) ELSE {a} END"
               for a in aliases]
        sql = f"SELECT {', '.join(cut)} FROM ({sql}) AS t({', '.join(aliases)})"
    return sql


def _json_sql(text: str, names: list[str]) -> str:
    """One VARCHAR column: each row of the statement ``text`` (whose columns are ``names``) as a JSON object keyed
    by column name, its values as ``to_json`` writes them. The keys are written as string literals: a user's column
    may be called anything (``r``, the row alias ``to_json(r)`` read before, or ``c0``)."""
    pairs = [f"{_sql_string(key)}, c{i}" for i, key in enumerate(json_keys(names))]
    return f"SELECT json_object({', '.join(pairs)})::VARCHAR {_over(text, len(names))}"


def json_keys(names: list[str]) -> list[str]:
    """Column names as keys of one JSON object: a repeated name is suffixed as DuckDB suffixes one
    (a, a -> a, a_1), past any name already taken."""
    taken: set[str] = set()
    keys = []
    for name in names:
        key, n = name, 0
        while key in taken:
            n += 1
            key = f"{name}_{n}"
        taken.add(key)
        keys.append(key)
    return keys


def _sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def table_width(out: IO[str], max_width: int | None = None) -> int | None:
    """Columns a table's lines may take on ``out``: ``max_width`` (0: no limit), else the terminal's
    width when ``out`` is one (as DuckDB's CLI does), else ``PIPE_WIDTH``."""
    if max_width is not None:
        return max_width or None
    isatty = getattr(out, "isatty", None)
    if isatty is not None and isatty():
        return shutil.get_terminal_size().columns
    return PIPE_WIDTH


def write_result(result: duckdb.DuckDBPyRelation, fmt: str, out: IO[str], *, con: duckdb.DuckDBPyConnection,
                 params=None, max_rows: int | None = TABLE_ROWS, max_width: int | None = None) -> int:
    """Write the rows of a query to ``out``; returns the number of rows.

    ``result``: the query's relation on ``con``, made with ``params`` (its placeholders' values).
    ``max_rows`` bounds the rows the table format shows (None: all); the others write every row.
    ``max_width`` the table's line (``table_width``: default the terminal's width; 0 no limit).
    A row DuckDB fails to compute (a failed cast) is a QueryError with DuckDB's message.
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown output format {fmt!r}; choose one of: {', '.join(FORMATS)}")
    names, types = list(result.columns), result.types
    # The query's statement inside one that makes its text, run on the connection: a relation made over it
    # would bind it again, three times, for nothing a cold query needs (bench/README.md).
    text = statement_text(result.sql_query())
    if fmt in ("json", "jsonl"):
        sql = _json_sql(text, names)
    elif fmt == "csv":
        sql = _text_sql(text, types, keep=PLAIN)
    else:
        sql = _text_sql(text, types, CELL_WIDTH)
    try:  # the rows are computed while they are written
        if fmt in ("json", "jsonl"):
            return _write_json(_batches(con, sql, params), fmt, out)
        if fmt == "csv":
            return _write_csv(con.sql(sql, params=params), names, _json_text(types), out)
        return _write_table(_batches(con, sql, params), names, _json_text(types), out, max_rows,
                            table_width(out, max_width))
    except duckdb.InterruptException:
        raise
    except duckdb.Error as e:  # met while computing the rows: a failed cast, an out-of-range value
        raise QueryError(lines_of(str(e), sql, text)) from None


#: where DuckDB's error context names the line of the statement it points into
ERROR_LINE = re.compile(r"LINE (\d+):")


def lines_of(message: str, ran: str, own: str) -> str:
    """DuckDB's error ``message`` about ``ran``, a statement around the query ``own``, with its ``LINE n:``
    counted in ``own`` as it was written (a one-line query's error is on LINE 1), the caret below
    moved with it. A message about a line of ``ran`` outside ``own`` is left as it is."""
    at = ran.find(own) if own else -1
    if at < 0:
        return message
    before = ran.count("\n", 0, at)
    lines = message.split("\n")
    for i, line in enumerate(lines):
        m = ERROR_LINE.match(line)
        if m is None or int(m.group(1)) <= before:
            continue
        label = f"LINE {int(m.group(1)) - before}:"
        lines[i] = label + line[m.end():]
        if i + 1 < len(lines) and lines[i + 1].startswith(" "):  # the caret line, indented past the label
            lines[i + 1] = lines[i + 1][len(m.group(0)) - len(label):] if len(label) < len(m.group(0)) \
                else " " * (len(label) - len(m.group(0))) + lines[i + 1]
    return "\n".join(lines)


def _batches(con: duckdb.DuckDBPyConnection, sql: str, params) -> Iterator[list[tuple]]:
    """The rows of ``sql`` run on ``con`` with ``params``, BATCH_ROWS at a time, as DuckDB streams them: one run,
    one batch in memory at a time. As Python tuples rather than Arrow batches, so a query printed as a table or
    as JSON does without pyarrow, which a small query from a cold process would spend most of its time
    importing (bench/README.md)."""
    cur = con.execute(sql, params)
    while batch := cur.fetchmany(BATCH_ROWS):
        yield batch


def _write_json(batches: Iterator[list[tuple]], fmt: str, out: IO[str]) -> int:
    n = 0
    for batch in batches:
        text = finite_json(("\n" if fmt == "jsonl" else ",\n").join(row[0] for row in batch))
        if fmt == "jsonl":
            out.write(text + "\n")
        else:  # "[" only once the first rows are in: a query failing at its start leaves nothing
            out.write(("[\n" if n == 0 else ",\n") + text)
        n += len(batch)
    if fmt == "json":
        out.write("\n]\n" if n else "[]\n")
    return n


def _finite_cells(batch: pa.RecordBatch, json_text: list[bool]) -> list[pa.Array]:
    """The columns of ``batch``, its JSON text (``json_text``) with NaN and infinities as null (``finite_json``)."""
    import pyarrow as pa

    columns = []
    for column, is_json in zip(batch.columns, json_text):
        if is_json:
            column = pa.array([None if v is None else finite_json(v) for v in column.to_pylist()], pa.string())
        columns.append(column)
    return columns


def _write_csv(query: duckdb.DuckDBPyRelation, names: list[str], json_text: list[bool], out: IO[str]) -> int:
    import pyarrow as pa  # here: the other formats, a cold query's usual ones, do without Arrow
    import pyarrow.csv as pcsv

    n, header = 0, True
    reader = query.to_arrow_reader(BATCH_ROWS)
    for batch in reader:
        if batch.num_rows or header:
            buf = io.BytesIO()
            table = pa.Table.from_arrays(_finite_cells(batch, json_text), names=names)
            pcsv.write_csv(table, buf, pcsv.WriteOptions(include_header=header))
            out.write(buf.getvalue().decode("utf-8"))
            header = False
            n += batch.num_rows
    if header:  # no batch at all: the header still says the columns
        empty = pa.Table.from_arrays([pa.array([], f.type) for f in reader.schema], names=names)
        buf = io.BytesIO()
        pcsv.write_csv(empty, buf)
        out.write(buf.getvalue().decode("utf-8"))
    return n


def _write_table(batches: Iterator[list[tuple]], names: list[str], json_text: list[bool], out: IO[str],
                 max_rows: int | None, width: int | None) -> int:
    shown: list[list[str | None]] = []
    n = 0
    for batch in batches:
        room = len(batch) if max_rows is None else max(0, min(len(batch), max_rows - len(shown)))
        shown += [[finite_json(v) if is_json and v is not None else v for v, is_json in zip(row, json_text)]
                  for row in batch[:room]]
        n += len(batch)  # the rest are counted only
    out.write(texttable.render(names, shown, total=n, width=width,
                               more_rows="use --format csv|json|jsonl for all, or --max-rows N",
                               more_columns="SELECT the ones you want, or --max-width 0 for all"))
    return n


def write_report(report: Any, format: str, out: IO[str] | None,
                 tables: list[tuple[str | None, list[str], list[list[Any]]]]) -> None:
    """A command's report (``warehouse stats``, ``warehouse history``) written to ``out`` (default stdout):
    ``json``: ``report`` as indented JSON; ``table``: each ``(heading, column names, rows)`` of ``tables``
    as a text table, a blank line between two, a heading on the line above its table."""
    out = out or sys.stdout
    if format == "json":
        import orjson

        out.write(orjson.dumps(report, option=orjson.OPT_INDENT_2).decode() + "\n")
        return
    width = table_width(out)
    for i, (heading, names, rows) in enumerate(tables):
        out.write(("\n" if i else "") + (f"{heading}\n" if heading else ""))
        out.write(texttable.render(names, rows, width=width, more_columns="--format json for all"))
