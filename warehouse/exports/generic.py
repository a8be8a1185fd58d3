"""The export formats that belong to no source: parquet, jsonl, csv, openai_chat.

Written with the export kit (``warehouse.exports.kit``), as every format's exporter is:
flat rows stream out of DuckDB in Arrow batches; nested ones are staged and read a
window at a time. So an export of any size runs in bounded memory and reports progress.
"""

from __future__ import annotations

import os
from collections import Counter

import orjson
import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq

from warehouse.exports import kit
from warehouse.exports.kit import ExportContext, ExportFormat
from warehouse.formatkit.declared import TABLES
from warehouse.reading.output import finite_json

# --- parquet: one file per table --------------------------------------------------------------


def write_parquet(ctx: ExportContext) -> int:
    from warehouse.exports.card import dataset_card

    written = 0
    tables: dict[str, tuple[pa.Schema, int]] = {}  # for the dataset card
    for name, sql in [("responses", f"{kit.selected_responses_sql()} {kit.ordered_by('responses', 'r')}"),
                      *[(t, kit.rows_sql(t)) for t in kit.children()],
                      ("sources", "SELECT * FROM sources AS c WHERE source_path IN (SELECT DISTINCT source_path FROM responses "
                                  f"WHERE response_id IN (SELECT response_id FROM selected)) {kit.ordered_by('sources')}")]:
        writer = None
        rows = 0
        for batch in kit.batches(ctx, sql, count_responses=name == "responses"):
            if writer is None:
                writer = pq.ParquetWriter(os.path.join(ctx.out, f"{name}.parquet"), batch.schema, compression="zstd")
            writer.write_batch(batch)
            rows += batch.num_rows
        if writer is None:  # an empty selection still gives every file, with its columns
            schema = ctx.con.sql(sql + " LIMIT 0").to_arrow_table().schema
            writer = pq.ParquetWriter(os.path.join(ctx.out, f"{name}.parquet"), schema, compression="zstd")
        writer.close()
        tables[name] = (writer.schema, rows)
        if name == "responses":
            written = rows
    with open(os.path.join(ctx.out, "README.md"), "w", encoding="utf-8") as f:  # Hugging Face: one config per table
        f.write(dataset_card(tables))
    return written


# --- jsonl: one line per response, children nested --------------------------------------------------


def write_jsonl(ctx: ExportContext) -> int:
    # a table whose view shows one row per element of stored lists (per-token values) would put
    # thousands of objects in each line: parquet carries it
    nested = [t for t in kit.core_children() if not TABLES[t].view_columns]
    total = kit.stage(ctx)
    for table in nested:
        kit.stage_children(ctx, table)
    # a response with no turns or sentences has null there, and [] for annotations and evaluations
    lists = ", ".join(name if name in ("turns", "sentence_boundaries") else f"coalesce({name}, []) AS {name}"
                      for name in nested)
    n = 0
    with open(ctx.out, "w", encoding="utf-8") as f:
        for lo, hi in kit.windows(total):
            window = kit.window_sql(lo, hi, {t: t for t in nested}, select=f"s.* EXCLUDE (n), {lists}")
            lines = ctx.con.sql(f"SELECT to_json(x)::VARCHAR AS line FROM ({window}) AS x").to_arrow_table().column(0).to_pylist()
            f.write(finite_json("\n".join(lines)))  # to_json writes NaN bare: null, as `warehouse sql --format json`
            f.write("\n")
            n += len(lines)
            ctx.progress(n)
    kit.note_not_carried(ctx, "jsonl", [t for t in kit.children() if t not in nested])
    return n


# --- csv: responses, flat -----------------------------------------------------------------------------


def write_csv(ctx: ExportContext) -> int:
    kit.stage(ctx)
    types = ctx.con.sql("SELECT * EXCLUDE (n) FROM staged LIMIT 0")
    flat = ", ".join(
        f"CAST({name} AS VARCHAR) AS {name}" if str(t) == "JSON" or str(t).endswith("]") or str(t).startswith("STRUCT")
        else name
        for name, t in zip(types.columns, types.types)
    )
    writer, n = None, 0
    with open(ctx.out, "wb") as f:
        for batch in kit.batches(ctx, f"SELECT {flat} FROM staged ORDER BY n", count_responses=True):
            if writer is None:
                writer = pcsv.CSVWriter(f, batch.schema)
            writer.write_batch(batch)
            n += batch.num_rows
        if writer is None:
            f.write((",".join(types.columns) + "\n").encode())
        else:
            writer.close()
    kit.note_not_carried(ctx, "csv", kit.children())
    return n


# --- openai_chat: messages JSONL for fine-tuning --------------------------------------------------------


def write_openai_chat(ctx: ExportContext) -> int:
    written = skipped = seen = 0
    left_out: Counter = Counter()
    with open(ctx.out, "wb") as f:
        for row in kit.conversations(ctx):
            seen += 1
            c = kit.conversation(row)
            if not c.answered:
                skipped += 1
            else:
                left_out.update(c.left_out)
                f.write(orjson.dumps({"messages": c.messages}))
                f.write(b"\n")
                written += 1
            if seen % kit.BATCH == 0:
                ctx.progress(seen)
    if skipped:
        ctx.notes.append(f"{skipped} selected responses have no answer text (response NULL or empty) and were left out")
    kit.note_left_out(ctx, left_out, "OpenAI's chat format cannot hold it: docs/export.md#conversations")
    kit.note_not_carried(ctx, "openai_chat", [t for t in kit.children() if t != "turns"])
    return written


GENERIC = (
    ExportFormat("parquet", "a directory with one Parquet file per table, each filtered to the selection", True, write_parquet),
    ExportFormat("jsonl", "one JSON line per response, with its turns, sentences, annotations and evaluations nested", False, write_jsonl),
    ExportFormat("csv", "the responses, flat (lists and JSON as text)", False, write_csv),
    ExportFormat("openai_chat", "OpenAI chat fine-tuning JSONL: {messages: [...]} per response, the conversation that ends in it", False, write_openai_chat),
)
