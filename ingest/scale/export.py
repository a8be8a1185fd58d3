"""``warehouse export --format scale``: the selected responses back to Scale GenAI JSON.

The output is one file: a JSON array of top-level documents, one per line, or
JSON Lines when ``--out`` ends in ``.jsonl``. Each document is what the
responses came from: a Task (or a page of tasks) with its threads, a Thread, a
Turn, or a lone Message, rebuilt from the rows at their JSON paths
(``unmap.py``). Responses of other formats become one Turn each (``foreign.py``).

The selection is staged by document with the export kit (``warehouse.exports.kit``),
and the rows stream out of DuckDB as one query ordered by document, so memory holds
one document at a time.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import BinaryIO

from warehouse.exports import kit

from .foreign import foreign_turns
from .unmap import rebuild

#: one parent per top-level document the selected Scale responses sit in: a file's array element or
#: JSONL line, or the whole file
DOCUMENT = ("r.source_path", "r.record_index")
ORDER = "r.source_path, r.record_index NULLS FIRST"
#: a thread's own annotations are a record of their own, taken along when one of the thread's turns is selected
THREADS_SQL = r"""
SELECT k.n, a.record_id
FROM staged_keys AS k JOIN responses AS r ON r.response_id = k.response_id
JOIN annotations AS a ON a.level = 'thread' AND a.source_path = r.source_path
 AND starts_with(regexp_replace(r.source_locator, '\.messages\[\d+\]$', ''), a.target || '.turns[')
"""

#: the evaluations that are not derived from an annotation (those come back with the annotation)
RUBRIC_SCORES = r"regexp_matches(c.source_locator, '\.rubric_evaluations\[\d+\]\.(criteria_evaluations\[\d+\]|total_score|percentage)$')"

#: (table, columns read back, which of its rows), in the order they are placed into a document; each
#: table's rows are those that belong to the document's selected responses (their own, and their records')
PARTS = (
    ("responses", "turn_id, thread_id, task_id", "true"),
    ("turns", "role, content, reasoning_content, source_id, model, temperature, max_completion_tokens, top_p, top_k", "true"),
    ("rubric_criteria", "criterion_id, criterion, weight, max_total_score", "true"),
    ("reference_texts", "content, category, url", "true"),
    ("attachments", "annotation_id, name, mime_type, url, scale_url, content, size_bytes, duration, transcript, "
                    "transcript_url, transcript_start, transcript_end", "true"),
    ("chunks", "chunk_type, text", "true"),
    ("evaluations", "criterion, score", RUBRIC_SCORES),
    ("annotations", "annotation_id, key, value, annotation_type, title, description, labels, possible_values, metadata, "
                    "note, source_annotation_id, not_applicable, cannot_assess", "true"),
)


def _part_sql(index: int, table: str, columns: str, where: str) -> str:
    fields = ", ".join(f"'{c}': c.{c}" for c in [*columns.split(", "), "source_locator", "extra"])
    # each row in its place, its text last: a total order, so the same selection gives the same bytes
    rows = kit.children_sql(table, row=f"to_json({{{fields}}})::VARCHAR", order=("c.source_locator", "row"), where=where)
    return f"SELECT n, {index} AS part, row, k FROM ({rows})"


def documents(ctx: kit.ExportContext) -> Iterator[tuple[dict[str, list[dict]], bool]]:
    """The rows of each selected Scale document, by table, one document at a time; and whether orjson read
    them all (else one holds NaN or Infinity, which only the standard library writes back)."""
    kit.stage(ctx, per=DOCUMENT, order=ORDER, columns="", where="r.source_format = 'scale'")
    kit.take_along(ctx, THREADS_SQL)
    sql = "\nUNION ALL\n".join(_part_sql(i, *p) for i, p in enumerate(PARTS)) + "\nORDER BY n, part, k"
    current, rows, plain = None, {}, True
    for batch in kit.batches(ctx, f"SELECT n, part, row FROM ({sql})"):
        numbers, parts, texts = (batch.column(name).to_pylist() for name in ("n", "part", "row"))
        for number, part, text in zip(numbers, parts, texts):
            if number != current:
                if rows:
                    yield rows, plain
                current, rows, plain = number, {}, True
            row, read = kit.loads_checked(text)
            plain = plain and read
            rows.setdefault(PARTS[part][0], []).append(row)
    if rows:
        yield rows, plain


class Output:
    """Documents into one JSON array (a document per line) or JSON Lines."""

    def __init__(self, f: BinaryIO, lines: bool):
        self.f, self.lines, self.count = f, lines, 0

    def add(self, doc: dict, finite: bool = True) -> None:
        # orjson writes NaN as null; the ingest reads NaN back (Python's json writes it), so keep it
        text = kit.dumps(doc) if finite else kit.dumps_stdlib(doc)
        if self.lines:
            self.f.write(text + b"\n")
        else:
            self.f.write((b",\n" if self.count else b"[\n") + text)
        self.count += 1

    def close(self) -> None:
        if not self.lines:
            self.f.write(b"\n]\n" if self.count else b"[]\n")


def jsonl_out(path: str) -> bool:
    """JSON Lines when --out ends in .jsonl, else one JSON array."""
    return path.lower().endswith(".jsonl")


def write(ctx: kit.ExportContext) -> int:
    written = foreign = 0
    with open(ctx.out, "wb") as f:
        out = Output(f, jsonl_out(ctx.target))
        for rows, finite in documents(ctx):
            out.add(rebuild(rows), finite)
            written += len(rows.get("responses", ()))
            ctx.progress(written)
        dropped: Counter = Counter()
        for turn in foreign_turns(ctx, dropped):
            out.add(turn)
            written += 1
            foreign += 1
            ctx.progress(written)
        out.close()
    if foreign:
        rows = kit.rows_text(kit.count_belonging(ctx, "r.source_format IS DISTINCT FROM 'scale'",
                                                 ("sentence_boundaries", "annotations", "evaluations")))
        ctx.notes.append(f"{foreign} responses of other formats were written as minimal Turns "
                         "(their conversations, the answer last; see docs/formats/scale.md#export)"
                         + (f"; their {rows} are not carried" if rows else ""))
    kit.note_left_out(ctx, dropped, "in other formats' conversations; a Scale message of the minimal mapping holds text")
    return written


EXPORT = kit.ExportFormat(
    "scale",
    "Scale GenAI JSON: the Tasks, Threads and Turns the responses came from (a JSON array; JSON Lines for *.jsonl)",
    directory=False,
    write=write,
    suffixes=(".json", ".jsonl"),
)
