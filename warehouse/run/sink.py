"""Where a batch's records go: mapped, given provenance, validated, written to Parquet, or quarantined.

The worker (``worker.py``) decides what to do with each file; what it reads it hands
here: a ``Record`` at a time (``RecordSink.record``), or a fast path's Arrow tables
(``RecordSink.tables``), and the file's catalog row (``RecordSink.source``). Rows wait
until ``FLUSH_ROWS`` are pending, then become Arrow a table at a time; a record whose
rows Arrow refuses is quarantined whole with the exact message, and the others kept.
Each table gets one Parquet file per batch, named by the run and the batch.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import orjson
import pyarrow as pa

from warehouse import urlpaths
from warehouse.errors import InvalidBatch, RecordError, StrictFailure, StrictStop, UsageError
from warehouse.formatkit.declared import TABLES
from warehouse.formatkit.ingestor import Ingestor
from warehouse.formatkit.readers import RAW_LIMIT
from warehouse.formatkit.records import LOCATOR_LIMIT, Record, RecordContext, short_locator, short_message, stable_id
from warehouse.store import remote_root
from warehouse.store.delta import Part
from warehouse.store.storage import Store
from warehouse.store.writer import CONVERSION_ERRORS as _CONVERSION_ERRORS
from warehouse.store.writer import RowValidator, TableWriter, check_batch, rows_to_batch, values_to_batch

#: mapped rows gathered before they are turned into Arrow together (the parsed records stay
#: alive until then: 1024 inference records with 400 tokens each are ~60 MB of Python objects)
FLUSH_ROWS = 1024


@dataclass(slots=True)
class Counts:
    """A file's records: seen = ingested + quarantined (final once its records are flushed)."""

    seen: int = 0
    ingested: int = 0
    quarantined: int = 0


@dataclass(slots=True)
class _Pending:
    """A mapped record whose rows wait for the next flush."""

    path: str
    fmt: str
    record: Record
    counts: Counts
    rows: list[tuple[str, dict]]


class _Provenance:
    """Per-table defaults the sink adds to every mapped row."""

    def __init__(self, table):
        self.path = table.has("source_path")
        self.locator = table.has("source_locator")
        self.has_source_format = table.has("source_format")
        self.index = table.has("record_index")
        self.record_id = table.has("record_id")
        self.id_column = {"responses": "response_id", "annotations": "annotation_id"}.get(table.name)
        self.columns = frozenset(table.column_names)


class RecordSink:
    """The records of one batch, on their way into the batch's Parquet files.

    ``sources`` (catalog rows) and the record totals are final after ``flush``; ``close``
    gives the files written, ``discard`` deletes them.
    """

    def __init__(self, store: Store, run_id: str, batch_no: int, strict: bool = False):
        self.store, self.run_id, self.batch_no, self.strict = store, run_id, batch_no, strict
        self.validators = {name: RowValidator(t) for name, t in TABLES.items()}
        self.provenance = {name: _Provenance(t) for name, t in TABLES.items()}
        self.writers: dict[str, TableWriter] = {}
        self._pending: list[_Pending] = []
        self._pending_rows = 0
        self._deferred_sources: list[tuple[dict, Counts]] = []
        #: catalog rows with their final counts, in the order their files were met
        self.sources: list[dict] = []
        self.records_ingested = 0
        self.records_quarantined = 0
        #: the tree each file of the batch was found under (``note_tree``), and whether it lies outside it
        self._trees: dict[str, str] = {}
        self._outside: dict[str, str | None] = {}

    def note_tree(self, path: str, tree: str) -> None:
        """``path`` was found under ``tree`` (the PATH given to ingest): what ``quarantine`` keeps of it depends on it."""
        self._trees[path] = tree

    def _outside_tree(self, path: str) -> str | None:
        """The tree a file lies outside of, reached through a symbolic link leaving it; else None.

        Such a file's bytes are never kept in ``quarantine.raw``: a link planted in a tree the user
        ingests (``items/config.json -> ~/.aws/credentials``) must not copy a file of theirs into the
        warehouse, on a shared root for everyone to read. Its records a format reads are the user's data
        (scratch storage linked in) and land in the tables as any file's. Worked out only for a file
        that is quarantined with its text (``realpath`` costs a system call per path segment)."""
        if path not in self._outside:
            tree = self._trees.get(path)
            if tree is None or urlpaths.is_url(path):
                self._outside[path] = None
            else:
                top, real = os.path.realpath(tree), os.path.realpath(path)
                self._outside[path] = None if real.startswith(os.path.join(top, "")) else tree
        return self._outside[path]

    # --- what comes in ------------------------------------------------------------

    def record(self, path: str, ingestor: Ingestor, record: Record, counts: Counts) -> None:
        """Map one record and queue its rows; a record that cannot be mapped is quarantined whole."""
        if record.error is not None:
            self.quarantine(path, ingestor.name, record, record.error, counts)
            return
        ctx = RecordContext(path, record.locator, record.index, ingestor.name)
        try:
            mapped = ingestor.map(record, ctx)
            rows = self._with_provenance(mapped, ctx)
        except RecordError as e:
            self.quarantine(path, ingestor.name, record, e, counts)
            return
        except UsageError:  # a tool the run was given failed (ingestor.Ingestor.map): the run stops
            raise
        except Exception as e:  # a mapping bug must not stop the run or lose the record
            err = RecordError(f"internal error in the {ingestor.name} mapping ({type(e).__name__}: {e}); please report it", stage="map")
            self.quarantine(path, ingestor.name, record, err, counts)
            return
        # Counted as ingested now; a flush that finds a bad value moves it to quarantine.
        counts.seen += 1
        counts.ingested += 1
        self._pending.append(_Pending(path, ingestor.name, record, counts, rows))
        self._pending_rows += len(rows)
        if self._pending_rows >= FLUSH_ROWS:
            self.flush()

    def tables(self, tables: dict[str, pa.Table], records: int, counts: Counts, validated: bool = False) -> bool:
        """Keep a fast path's tables (``records`` records, all ingested); False, keeping nothing,
        when one of them fails the declarations. ``validated``: their strings passed Arrow's full
        validation already (``FastResult.validated``)."""
        tables = {name: conform(TABLES[name], table) for name, table in tables.items()}
        try:
            for name, table in tables.items():
                if not validated:
                    check_batch(TABLES[name], table)
        except InvalidBatch:
            # A fast path let through what Arrow refuses (text that is not UTF-8, ...): none of
            # its rows are kept and the record path reads the block, quarantining exactly.
            return False
        self.flush()  # rows mapped before keep their place
        for name, table in tables.items():
            for batch in table.to_batches():
                self._writer(name).add_batch(batch, checked=True)
        counts.seen += records
        counts.ingested += records
        return True

    def source(self, row: dict, counts: Counts) -> None:
        """A file's catalog row; its record counts are filled in once its pending records are flushed."""
        self._deferred_sources.append((row, counts))

    def quarantine(self, path: str, fmt: str | None, record: Record, err: RecordError, counts: Counts) -> None:
        """Write the record whole to ``quarantine`` with where and why; under ``--strict``, raise StrictStop."""
        # bounded: a message may quote a source key or value, a locator name a key (records.py)
        locator = short_locator(record.locator + err.sub_locator)
        message = short_message(err.message)
        counts.seen += 1
        counts.quarantined += 1
        if self.strict:
            raise StrictStop(StrictFailure(path, locator, err.stage, message))
        raw, raw_size = _raw_text(record)
        outside = self._outside_tree(path) if raw is not None else None
        if outside is not None:
            raw = None
            message = short_message(f"{err.message}; its text is not kept: the file lies outside {outside}, the "
                                    "tree given to ingest (reached through a symbolic link)")
        row = {
            "source_path": path,
            "source_format": fmt,
            "locator": locator,
            "stage": err.stage,
            "error": message,
            "raw": raw,
            "raw_bytes": raw_size,
            "ingest_run": self.run_id,
        }
        self._writer("quarantine").add(self.validators["quarantine"].values(row))

    # --- what goes out --------------------------------------------------------------

    def flush(self) -> None:
        """Turn the pending records' rows into Arrow, a table at a time.

        Arrow checks every value against the declared type; only when a batch fails
        is each record validated on its own, so the bad ones are quarantined whole
        with the exact message and the others kept.
        """
        if self._pending:
            by_table: dict[str, list[dict]] = {}
            for p in self._pending:
                for table, row in p.rows:
                    by_table.setdefault(table, []).append(row)
            try:
                batches = {t: rows_to_batch(TABLES[t], rows) for t, rows in by_table.items()}
            except _CONVERSION_ERRORS:
                batches = self._flush_record_by_record()
            for table, batch in batches.items():
                self._writer(table).add_batch(batch)
            self._pending.clear()
            self._pending_rows = 0
        for row, counts in self._deferred_sources:
            row.update(records=counts.seen, records_ingested=counts.ingested, records_quarantined=counts.quarantined)
            self.sources.append(row)
            self.records_ingested += counts.ingested
            self.records_quarantined += counts.quarantined
        self._deferred_sources.clear()

    def close(self) -> dict[str, Part]:
        """Close the batch's files: {table: Part} of those that hold rows (what the commit needs of each)."""
        parts = {}
        for name, w in self.writers.items():
            path = w.close()
            if path:
                parts[name] = Part.of(self.store.root, path)
        return parts

    def discard(self) -> None:
        """Close and delete every file the batch wrote."""
        for w in self.writers.values():
            try:
                w.close()
            finally:
                remote_root.delete(self.store.filesystems, w.path)
        self.writers.clear()

    # --- inside -------------------------------------------------------------------------

    def _writer(self, table: str) -> TableWriter:
        w = self.writers.get(table)
        if w is None:
            name = f"{self.run_id}-b{self.batch_no:05d}.parquet"
            w = self.writers[table] = TableWriter(TABLES[table], self.store.data_path(table, name))
        return w

    def _with_provenance(self, mapped, ctx: RecordContext) -> list[tuple[str, dict]]:
        out = []
        record_id = stable_id(ctx.path, ctx.locator)
        if not isinstance(mapped, dict):
            raise TypeError(f"map() returned {type(mapped).__name__}, expected a dict of table rows")
        for table, rows in mapped.items():
            prov = self.provenance.get(table)
            if prov is None or table in ("sources", "quarantine"):
                raise RecordError(f"mapping produced rows for unknown table {table!r}", stage="validate")
            for row in rows:
                if prov.path:
                    row.setdefault("source_path", ctx.path)
                if prov.locator:
                    row.setdefault("source_locator", ctx.locator)
                if prov.has_source_format:
                    row.setdefault("source_format", ctx.source_format)
                if prov.index:
                    row.setdefault("record_index", ctx.index)
                if prov.record_id:
                    row.setdefault("record_id", record_id)
                if prov.id_column and row.get(prov.id_column) is None:
                    row[prov.id_column] = stable_id(ctx.path, row["source_locator"])
                if prov.locator and len(row["source_locator"] or "") > LOCATOR_LIMIT:  # ids hash the whole one
                    row["source_locator"] = short_locator(row["source_locator"])
                if not row.keys() <= prov.columns:
                    unknown = sorted(row.keys() - prov.columns)[0]
                    raise RecordError(f"{table} has no column {unknown!r}", stage="validate")
                out.append((table, row))
        return out

    def _flush_record_by_record(self) -> dict[str, pa.RecordBatch]:
        values: dict[str, list[list]] = {}
        for p in self._pending:
            try:
                checked = [(table, self.validators[table].values(row)) for table, row in p.rows]
            except RecordError as e:
                p.counts.seen -= 1  # counted again by quarantine
                p.counts.ingested -= 1
                self.quarantine(p.path, p.fmt, p.record, e, p.counts)
                continue
            for table, vals in checked:
                values.setdefault(table, []).append(vals)
        return {t: values_to_batch(TABLES[t], rows) for t, rows in values.items()}


def conform(table, data: pa.Table) -> pa.Table:
    """A fast path's table in the declared schema: every column, in order, of its type."""
    unknown = set(data.column_names) - set(table.column_names)
    if unknown:
        raise ValueError(f"fast path produced unknown {table.name} columns: {sorted(unknown)}")
    columns = [
        data.column(c.name).cast(c.type) if c.name in data.column_names else pa.nulls(data.num_rows, c.type)
        for c in table.columns
    ]
    return pa.Table.from_arrays(columns, schema=table.arrow_schema)


def _raw_text(record: Record) -> tuple[str | None, int | None]:
    if record.raw is not None:
        size = record.raw_size if record.raw_size is not None else len(record.raw)
        return record.raw[:RAW_LIMIT].decode("utf-8", "backslashreplace"), size
    if record.value is not None:
        try:
            b = orjson.dumps(record.value)
        except (orjson.JSONEncodeError, TypeError):
            b = repr(record.value).encode("utf-8", "backslashreplace")
        return b[:RAW_LIMIT].decode("utf-8", "backslashreplace"), len(b)
    return None, record.raw_size
