"""AfterImage conversation rows (github.com/altaidevorg/afterimage).

One source record is one row: a JSONL line written by ``JSONLStorage``, an
element of the server's wrapped output ``{"system_prompt_parts": [...],
"conversations": [rows]}``, or a single row in a ``.json`` file (the shape
the project's docs show). A row becomes one ``responses`` row, a ``turns``
row per message and ``evaluations`` rows for its judge scores. Mapping rules:
docs/formats/afterimage.md.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from warehouse.formatkit.ingestor import Ingestor, exporter_in
from warehouse.formatkit.records import Mapped, Record, RecordContext, RecordError
from warehouse.formatkit.source import SourceFile

from . import schema
from .files import row_records
from .row import map_row

#: a "conversations" list: the first key of every row the generator writes, and the server wrapper's key
_CONVERSATIONS = re.compile(rb'"conversations"\s*:\s*\[')
#: ShareGPT files (AfterImage exports them too) also hold "conversations", with from/value messages:
#: a role, or the wrapper's own key, says the list is AfterImage's
_OURS = (b'"role"', b'"system_prompt_parts"')
#: the last field name of a sub-locator (`.conversations[1].role` -> role)
_LAST_NAME = re.compile(r"\.([^.\[\]]+)$")


class AfterImage(Ingestor):
    name = "afterimage"
    description = "AfterImage conversation rows (.jsonl), the server's wrapped .json output, single-row .json"
    suffixes = (".jsonl", ".json")
    priority = 30
    line_records = True
    fast_path = True
    worker_modules = (f"{__name__}.fast",)
    columns = schema.COLUMNS
    exporter = exporter_in(f"{__name__}.export")

    def sniff(self, path: str, head: bytes) -> bool:
        return bool(_CONVERSATIONS.search(head)) and any(marker in head for marker in _OURS)

    def records(self, src: SourceFile) -> Iterator[Record]:
        return row_records(src)

    def fast_lines(self, data: bytes, path: str, first_line: int):
        from . import fast  # where a block is mapped: loading the format does not need it

        return fast.fast_lines(data, path, first_line)

    def map(self, record: Record, ctx: RecordContext) -> Mapped:
        try:
            return map_row(record.value, record.envelope, ctx)
        except RecordError as e:
            raise _in_message(e) from None


def _in_message(e: RecordError) -> RecordError:
    """Keep the record's own locator (the JSONL line, so quarantine says ``file:12``)
    and move the bad field's path into the message instead."""
    if not e.sub_locator:
        return e
    path = e.sub_locator.lstrip(".")
    last = _LAST_NAME.search(e.sub_locator)
    if last and e.message.startswith(last.group(1) + ": "):
        message = path + e.message[len(last.group(1)) :]
    else:
        message = f"{path}: {e.message}"
    return RecordError(message, stage=e.stage)
