"""Splitting Hugging Face chat files into rows: JSON Lines, JSON and Parquet, as ``datasets`` reads them.

* ``.jsonl``: one row per line, locator = line number (``12``);
* ``.json``: an array (one row per element, ``[3]``), one object (the whole file, empty locator),
  or JSON Lines, which ``Dataset.to_json`` writes under any name (one row per line, ``12``);
* ``.parquet``: one row per table row (``[3]``), read a batch of rows at a time, row group by
  row group: a file of any size is never held whole. Parquet values become JSON's: binary
  values (an image's bytes) base64 text, dates and times ISO text.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
from collections.abc import Iterator
from typing import Any

from warehouse.formatkit.readers import BOM, RAW_LIMIT, json_document_records, jsonl_records
from warehouse.formatkit.records import Record, RecordError
from warehouse.formatkit.source import SourceFile

from ..heads import is_json_lines

#: rows of a Parquet file converted to Python at a time
PARQUET_BATCH = 256


def row_records(src: SourceFile) -> Iterator[Record]:
    name = src.path.lower()
    if name.endswith(".parquet"):
        yield from parquet_records(src)
    elif name.endswith(".jsonl") or is_json_lines(src.head.removeprefix(BOM)):
        yield from jsonl_records(src)
    else:
        yield from json_document_records(src)


def parquet_records(src: SourceFile) -> Iterator[Record]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        batches = pq.ParquetFile(src.seekable()).iter_batches(batch_size=PARQUET_BATCH)
    except (pa.ArrowException, OSError) as e:
        yield Record("", error=RecordError(f"not a readable Parquet file: {_first_line(e)}", stage="decode"),
                     raw=src.head[:RAW_LIMIT], raw_size=src.size)
        return
    n = 0
    try:
        for batch in batches:
            for row in batch.to_pylist():
                yield Record(f"[{n}]", plain(row), index=n)
                n += 1
    except (pa.ArrowException, OSError) as e:
        message = f"cannot read row {n} of the Parquet file: {_first_line(e)}; the rest of the file was not read"
        yield Record(f"[{n}:]", error=RecordError(message, stage="decode"), raw=b"", raw_size=0)


def plain(value: Any) -> Any:
    """A value read from Parquet as JSON holds it: bytes as base64 text, times as ISO text."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, decimal.Decimal):
        return str(value)
    return value


def _first_line(e: Exception) -> str:
    return str(e).splitlines()[0] if str(e) else type(e).__name__
