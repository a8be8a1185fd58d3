"""Hugging Face chat datasets: TRL's dataset formats and ShareGPT, as JSON Lines, JSON or Parquet.

One source record is one row of the dataset: a ``messages`` conversation, a
``prompt``/``completion`` pair (or a prompt alone), a ``prompt``/``chosen``/``rejected``
preference row, or ShareGPT ``conversations`` of ``{from, value}``, conversational
(lists of ``{role, content}`` messages) or plain text. This warehouse's own
``openai_chat`` and ``hf_chat`` exports read back as this format. Mapping rules:
docs/formats/hf_chat.md.
"""

from __future__ import annotations

from collections.abc import Iterator

from warehouse.filesystems import FileSystems
from warehouse.formatkit.ingestor import Ingestor, exporter_in
from warehouse.formatkit.opening import HEAD_BYTES
from warehouse.formatkit.records import Mapped, Record, RecordContext
from warehouse.formatkit.source import SourceFile

from . import schema
from .detect import parquet_shape, sniff_json
from .files import row_records
from .row import map_row

#: a Parquet file's first bytes (its footer's last four are the same)
PARQUET_MAGIC = b"PAR1"
#: a footer larger than this is no dataset's: the file is not looked into further
FOOTER_LIMIT = 16 * 1024 * 1024


class HfChat(Ingestor):
    name = "hf_chat"
    description = ("Hugging Face chat datasets (.jsonl, .json, .parquet): messages, prompt/completion, "
                   "prompt/chosen/rejected, ShareGPT conversations")
    suffixes = (".jsonl", ".json", ".parquet")
    # after AfterImage (whose rows hold a `conversations` list of roles: ShareGPT's hold from/value), before
    # Scale, which claims any file with a "task_id" (a column some chat datasets have); a Scale message has
    # an object content and a source_id, which this format refuses
    priority = 36
    line_records = True
    columns = schema.COLUMNS
    exporter = exporter_in(f"{__name__}.export")

    def sniff(self, path: str, head: bytes) -> bool:
        if path.lower().endswith(".parquet"):
            return head.startswith(PARQUET_MAGIC) and _parquet_shape(path, head) is not None
        return sniff_json(head)

    def records(self, src: SourceFile) -> Iterator[Record]:
        return row_records(src)

    def map(self, record: Record, ctx: RecordContext) -> Mapped:
        return map_row(record.value, ctx)


def _parquet_shape(path: str, head: bytes) -> str | None:
    """The shape of a Parquet file's rows, from its schema. The schema is in the footer, at the end:
    a file the head holds whole is read from it, a larger one's footer is read (two small reads)."""
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        if len(head) < HEAD_BYTES:
            return parquet_shape(pq.read_schema(io.BytesIO(head)))
        f, size, _mtime = FileSystems.of(path).open(path)  # the run's, which the path carries
        with f:
            f.seek(max(size - 8, 0))
            tail = f.read(8)
            footer = int.from_bytes(tail[:4], "little")
            if tail[4:] != PARQUET_MAGIC or footer > min(FOOTER_LIMIT, size):
                return None
            return parquet_shape(pq.read_schema(f))
    except (pa.ArrowException, OSError, ValueError):
        return None
