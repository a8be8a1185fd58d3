"""OpenAI chat completions and Batch API files (and vLLM's ``run_batch``, which writes the same lines).

One source record is one line: a batch input line (a request), a batch output or error
line (a result), or a chat completion saved as it came (a line, or a ``.json`` file or
array). A result is joined to its request by ``custom_id`` when the batch's input file is
beside it (``files.py``): its rows hold the request's messages and parameters with the
answer; either file alone ingests too. Mapping rules: docs/formats/openai_batch.md.
"""

from __future__ import annotations

from collections.abc import Iterator

from warehouse.formatkit.ingestor import Ingestor
from warehouse.formatkit.records import Mapped, Record, RecordContext
from warehouse.formatkit.source import SourceFile

from . import schema
from .detect import kind_of_head
from .files import batch_records
from .rows import map_record


class OpenAIBatch(Ingestor):
    name = "openai_batch"
    description = "OpenAI Batch API input and output lines (and vLLM run_batch's), chat completions (.jsonl, .json)"
    suffixes = (".jsonl", ".json")
    # its lines are told by keys no other format's files hold together (custom_id with body or response)
    priority = 33
    # a batch file is joined to the files beside it as a whole (files.py): never cut into pieces
    line_records = False
    columns = schema.COLUMNS

    def sniff(self, path: str, head: bytes) -> bool:
        return kind_of_head(head) is not None

    def records(self, src: SourceFile) -> Iterator[Record]:
        return batch_records(src)

    def map(self, record: Record, ctx: RecordContext) -> Mapped:
        return map_record(record.value, record.envelope, ctx)
