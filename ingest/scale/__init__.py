"""Scale GenAI v2 data (docs.genai.scale.com): Turns, Messages, Threads and Tasks.

Read as loose JSON, never through Scale's SDK: the SDK rejects the docs' own
example (a ``type: "<string>"`` placeholder, nested ``possible_values``, and any
attachment). One source record is one Turn (``deliveries.py`` finds them in
Tasks and Threads); a thread's own annotations are a record of their own; a
datasets-API task ``{task_id, dataset, delivery, response}`` is one record too
(``datasets.py``). The
mapping page is docs/formats/scale.md. ``export.py`` writes the rows back as
Scale JSON (``warehouse export --format scale``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from warehouse.formatkit.ingestor import Ingestor, exporter_in
from warehouse.formatkit.records import Mapped, Record, RecordContext
from warehouse.formatkit.source import SourceFile

from ..fields import as_fields, id_text
from . import schema
from .annotations import Target, map_annotations
from .datasets import map_dataset_task
from .deliveries import DATASET_TASK, THREAD, scale_records
from .turn import map_turn
from .views import VIEWS

#: markers of other formats (Dataloop, AfterImage): a file holding one is not ours
_FOREIGN = (b'"shebang"', b'"conversations"')
#: an Inspect eval log opens with its format's version and status (its eval spec has a "task_id" too)
_EVAL_LOG = re.compile(rb'\A\s*\{\s*"version"\s*:\s*\d+\s*,\s*"status"\s*:')
#: a message content object: Scale's `content` is {text, attachments, ...}, never a plain string
_CONTENT_OBJECT = re.compile(rb'"content"\s*:\s*\{\s*"(?:text|reference_texts|attachments|chunks|reasoning)"')


class Scale(Ingestor):
    name = "scale"
    description = "Scale GenAI v2 Turns, Messages, Threads and Tasks (.json, .jsonl)"
    suffixes = (".json", ".jsonl")
    priority = 40  # it refuses Dataloop's files (_FOREIGN): the order between them does not matter
    columns = schema.COLUMNS
    tables = schema.TABLES
    views = VIEWS
    exporter = exporter_in(f"{__name__}.export")

    def sniff(self, path: str, head: bytes) -> bool:
        if head.lstrip()[:1] not in (b"{", b"["):
            return False
        if any(marker in head for marker in _FOREIGN) or _EVAL_LOG.match(head):
            return False
        if b'"source_id"' in head:  # required on every Scale message
            return True
        if b'"task_id"' in head:  # a Task (its threads, or the message that it has none) or a datasets-API task
            return True
        if b'"turns"' in head and b'"messages"' in head:
            return True
        # A message whose source_id lies beyond the head (after a large attachment).
        return _CONTENT_OBJECT.search(head) is not None

    def records(self, src: SourceFile) -> Iterator[Record]:
        return scale_records(src)

    def map(self, record: Record, ctx: RecordContext) -> Mapped:
        if record.envelope and record.envelope.get(THREAD):
            return map_thread_annotations(record, ctx)
        if record.envelope and record.envelope.get(DATASET_TASK):
            return map_dataset_task(record.value, record.envelope.get("page"), ctx)
        return map_turn(record, ctx)


def map_thread_annotations(record: Record, ctx: RecordContext) -> Mapped:
    """A thread's own annotations: level thread, linked to its turns by thread_id."""
    thread = as_fields(record.value, "thread")
    thread_id = id_text(thread.raw("id"), "id", ".id")
    out: Mapped = {}
    map_annotations(thread.raw("annotations"), ".annotations", Target("thread", "", thread_id=thread_id), ctx, out)
    return out
