"""Validated rows into Parquet files, in bounded memory.

Rows are checked against the table declaration one record at a time (so a bad
record is quarantined whole before any of its rows is kept), gathered in
column lists, turned into Arrow every ``CHUNK_ROWS`` rows, and written as a row
group once ``ROW_GROUP_ROWS`` rows or ``ROW_GROUP_BYTES`` bytes are waiting.

Every batch, however it was built, passes Arrow's full validation before it is
kept (``check_batch``): Arrow's JSON reader, which fast paths use, copies string
bytes without checking that they are UTF-8, and one invalid string in a Parquet
file makes every query on the table fail. A refused batch leaves the file as it was.
Strings are validated once: a fast path whose block passed validation whole (or is
ASCII) says so (``FastResult.validated``), and the sink does not check its tables again.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from typing import Any, Callable

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from warehouse.decimals import DECIMAL, DIGITS, PLACES, decimal_lists, fits
from warehouse.errors import InvalidBatch, RecordError, ValueMismatch
from warehouse.tables import Column, Table

CHUNK_ROWS = 2048
ROW_GROUP_ROWS = 64 * 1024
ROW_GROUP_BYTES = 64 * 1024 * 1024
#: zstd level 1: writes 40% faster than level 3 for about 10% more bytes (bench/README.md); decimals
#: of 9 digits or fewer as 32-bit integers (Parquet's INT32 DECIMAL), not 16-byte ones
PARQUET_OPTIONS = dict(compression="zstd", compression_level=1, write_statistics=True, store_decimal_as_integer=True)
#: Arrow dictionary-encodes every column it is not told otherwise of: it hashes each value into a
#: dictionary until that holds 1 MB, then falls back to plain. Values that do not repeat make the
#: hashing a loss (and the file larger): a locator names one place per row, and a text column whose
#: values average more bytes than this is long prose (prompts, answers, feedback). Written plain; so
#: is a column with no value in the rows the choice is made from (most of a table's columns in any one
#: format: a dictionary encoder per column, and an empty dictionary page, for nothing).
DICTIONARY_MAX_AVG_BYTES = 64

_I64 = (-(2**63), 2**63 - 1)
_I32 = (-(2**31), 2**31 - 1)


def _preview(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def _str(v):
    if type(v) is str:
        return v
    raise ValueMismatch("a string")


def _int_in(lo: int, hi: int) -> Callable:
    def conv(v):
        if type(v) is int and lo <= v <= hi:
            return v
        raise ValueMismatch(f"an integer in [{lo}, {hi}]" if type(v) is int else "an integer")

    return conv


def _float(v):
    t = type(v)
    if t is float:
        return v
    if t is int:
        return float(v)
    raise ValueMismatch("a number")


def _bool(v):
    if type(v) is bool:
        return v
    raise ValueMismatch("true or false")


def _strs(v):
    if type(v) is list and all(type(x) is str or x is None for x in v):
        return v
    raise ValueMismatch("a list of strings")


def _ints(v):
    if type(v) is list and all(type(x) is int and _I64[0] <= x <= _I64[1] for x in v):
        return v
    raise ValueMismatch("a list of integers")


def _floats(v):
    if type(v) is list and all(type(x) in (int, float) for x in v):
        return [float(x) for x in v]
    if isinstance(v, np.ndarray) and v.ndim == 1 and v.dtype == np.float64:  # a mapping's numbers, read as such
        return v
    raise ValueMismatch("a list of numbers")


def _decimals(v):
    values = _floats(v)
    if fits(values if isinstance(values, np.ndarray) else np.array(values, np.float64)):
        return values
    raise ValueMismatch(f"a list of numbers of at most {PLACES} decimals under 10^{DIGITS - PLACES}")


def _json(v):
    try:
        return orjson.dumps(v).decode()
    except orjson.JSONEncodeError as e:
        error = e
    if "Recursion" in str(error):
        # orjson reads 1024 levels deep but writes only 254; the stdlib writes deeper
        try:
            return json.dumps(v, ensure_ascii=False, allow_nan=False)
        except (RecursionError, ValueError, TypeError):
            pass
    raise ValueMismatch(f"a JSON value ({error})") from None


def _ts(v):
    if isinstance(v, dt.datetime):
        return v
    raise ValueMismatch("a datetime")


def _converter(column) -> Callable:
    if column.json:
        return _json
    t = column.type
    if t == pa.string():
        return _str
    if t == pa.int64():
        return _int_in(*_I64)
    if t == pa.int32():
        return _int_in(*_I32)
    if t == pa.float64():
        return _float
    if t == pa.bool_():
        return _bool
    if t == pa.list_(pa.string()):
        return _strs
    if t == pa.list_(pa.int64()):
        return _ints
    if t == pa.list_(pa.float64()):
        return _floats
    if t == pa.list_(DECIMAL):
        return _decimals
    if pa.types.is_timestamp(t):
        return _ts
    raise TypeError(f"no converter for {column.name}: {t}")  # pragma: no cover


class RowValidator:
    """Checks one row against a table declaration and returns its values in column order."""

    def __init__(self, table: Table):
        self.table = table
        self._slots = {c.name: (i, _converter(c)) for i, c in enumerate(table.columns)}
        self._width = len(table.columns)

    def values(self, row: dict[str, Any]) -> list[Any]:
        out = [None] * self._width
        for key, v in row.items():
            slot = self._slots.get(key)
            if slot is None:
                raise RecordError(f"{self.table.name} has no column {key!r}", stage="validate")
            if v is None:
                continue
            i, conv = slot
            try:
                out[i] = conv(v)
            except ValueMismatch as bad:
                raise RecordError(
                    f"{self.table.name}.{key}: expected {bad}, got {type(v).__name__} {_preview(v)}",
                    stage="validate",
                ) from None
        return out


def check_batch(table: Table, data: pa.RecordBatch | pa.Table) -> None:
    """Raise InvalidBatch unless every column of ``data`` passes Arrow's full validation
    (for strings, at any depth of lists and structs: valid UTF-8)."""
    for name, column in zip(data.schema.names, data.columns):
        try:
            column.validate(full=True)
        except pa.ArrowInvalid as e:
            raise InvalidBatch(f"{table.name}.{name}: {e}") from None


#: what Arrow raises when a value does not fit its column (the batch is then checked record by record)
CONVERSION_ERRORS = (pa.ArrowException, TypeError, ValueError, OverflowError, UnicodeError, ValueMismatch)


def to_arrow(values: list, column: Column) -> pa.Array:
    """One column's values as Arrow: ``pa.array``, but lists of decimals from numbers (Arrow takes
    Decimal objects only), all at once (``decimals.decimal_lists``)."""
    if column.type == pa.list_(DECIMAL):
        return decimal_lists(values)
    return pa.array(values, type=column.type)


def rows_to_batch(table: Table, rows: list[dict[str, Any]]) -> pa.RecordBatch:
    """Rows (dicts) to one Arrow batch of ``table``'s schema; raises on any value that does not fit.

    Arrow rejects wrong types, overflows and unencodable strings itself; the one
    conversion it would let through silently (a float truncated into an integer
    column) is checked here. JSON columns are serialised first.
    """
    arrays = []
    for c in table.columns:
        name = c.name
        values = [r.get(name) for r in rows]
        if c.json:
            values = [None if v is None else _json(v) for v in values]
        elif pa.types.is_integer(c.type) and any(type(v) is float for v in values):
            raise ValueMismatch(f"{name}: an integer, not a float")
        arrays.append(to_arrow(values, c))
    return pa.RecordBatch.from_arrays(arrays, schema=table.arrow_schema)


def open_parquet_writer(path: str, schema: pa.Schema, first: pa.Table | None = None,
                        encodings: dict[str, str] | None = None) -> pq.ParquetWriter:
    """A ParquetWriter at a local path (its folder made) or at a URL (a remote root: through pyarrow.fs).
    ``first``: the rows about to be written, to choose the columns worth a dictionary from;
    ``encodings``: Parquet column paths written in an encoding of their own (``column_encodings``)."""
    from warehouse import urlpaths
    from warehouse.filesystems import reach

    fs, where = reach(path).path(path)  # a remote root's RootURL carries the store's storage options
    if not urlpaths.is_url(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
    options = dict(PARQUET_OPTIONS)
    encodings = {leaf: e for leaf, e in (encodings or {}).items() if leaf.split(".")[0] in schema.names}
    if first is not None:
        options["use_dictionary"] = [c for c in dictionary_columns(first) if c not in encodings]
    elif encodings:  # Arrow's default dictionary-encodes every column, which an encoding of its own excludes
        options["use_dictionary"] = [leaf for f in schema for leaf in _leaves(f.name, f.type) if leaf not in encodings]
    if encodings:
        options["column_encoding"] = encodings
    return pq.ParquetWriter(where, schema, filesystem=fs, **options)


def column_encodings(table: Table) -> dict[str, str]:
    """The Parquet column paths of ``table`` whose declaration names an encoding (``Column.encoding``)."""
    return {leaf: c.encoding for c in table.columns if c.encoding for leaf in _leaves(c.name, c.type)}


def dictionary_columns(data: pa.Table) -> list[str]:
    """The columns of ``data`` worth dictionary encoding: all but the ones whose values do not
    repeat (``DICTIONARY_MAX_AVG_BYTES``) and the ones with no value at all."""
    import pyarrow.compute as pc  # here, not at load: an unchanged run writes nothing (26 ms)

    out = []
    for name, column in zip(data.column_names, data.columns):
        if name == "source_locator" or column.null_count == len(column):
            continue
        if pa.types.is_string(column.type) and len(column) > column.null_count:
            average = (pc.sum(pc.binary_length(column)).as_py() or 0) / (len(column) - column.null_count)
            if average > DICTIONARY_MAX_AVG_BYTES:
                continue
        out += _leaves(name, column.type)
    return out


def _leaves(path: str, t: pa.DataType) -> list[str]:
    """The Parquet column paths under an Arrow column (what per-column writer options name):
    a list's values are ``path.list.element``, a struct's fields ``path.field``."""
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _leaves(f"{path}.list.element", t.value_type)
    if pa.types.is_struct(t):
        return [leaf for f in t for leaf in _leaves(f"{path}.{f.name}", f.type)]
    return [path]


def values_to_batch(table: Table, rows: list[list[Any]]) -> pa.RecordBatch:
    """Validated value lists (RowValidator.values) to one Arrow batch."""
    columns = list(zip(*rows)) if rows else [[] for _ in table.columns]
    arrays = [to_arrow(list(col), c) for col, c in zip(columns, table.columns)]
    return pa.RecordBatch.from_arrays(arrays, schema=table.arrow_schema)


class TableWriter:
    """Buffers validated rows of one table and writes them to one Parquet file."""

    def __init__(self, table: Table, path: str):
        self.table = table
        self.path = path
        self.schema = table.arrow_schema
        self._cols: list[list] = [[] for _ in table.columns]
        self._pending = 0  # rows in _cols
        self._batches: list[pa.RecordBatch] = []
        self._batch_rows = 0
        self._batch_bytes = 0
        self._writer: pq.ParquetWriter | None = None
        self.rows = 0

    def add(self, values: list[Any]) -> None:
        for col, v in zip(self._cols, values):
            col.append(v)
        self._pending += 1
        if self._pending >= CHUNK_ROWS:
            self._to_arrow()

    def add_batch(self, batch: pa.RecordBatch, checked: bool = False) -> None:
        """``checked``: the caller ran ``check_batch`` on it already (a full validation
        reads every string again: ~0.4 s of CPU per GB of conversation JSONL, not worth twice)."""
        self._to_arrow()  # rows added one by one before this batch keep their place
        self._append(batch, checked)

    def _to_arrow(self) -> None:
        if not self._pending:
            return
        arrays = [to_arrow(col, c) for col, c in zip(self._cols, self.table.columns)]
        batch = pa.RecordBatch.from_arrays(arrays, schema=self.schema)
        self._cols = [[] for _ in self._cols]
        self._pending = 0
        self._append(batch)

    def _append(self, batch: pa.RecordBatch, checked: bool = False) -> None:
        if not checked:
            check_batch(self.table, batch)  # before anything is kept: a refused batch leaves the file as it was
        self._batches.append(batch)
        self._batch_rows += batch.num_rows
        self._batch_bytes += batch.nbytes
        if self._batch_rows >= ROW_GROUP_ROWS or self._batch_bytes >= ROW_GROUP_BYTES:
            self._write_row_group()

    def _write_row_group(self) -> None:
        if not self._batches:
            return
        table = pa.Table.from_batches(self._batches, schema=self.schema)
        if self._writer is None:
            self._writer = open_parquet_writer(self.path, self.schema, table, column_encodings(self.table))
        self._writer.write_table(table, row_group_size=len(table))
        self.rows += len(table)
        self._batches, self._batch_rows, self._batch_bytes = [], 0, 0

    def close(self) -> str | None:
        """Flush and close; the path written, or None when the table got no rows."""
        self._to_arrow()
        self._write_row_group()
        if self._writer is None:
            return None
        self._writer.close()
        self._writer = None
        return self.path
