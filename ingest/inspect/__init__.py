"""Inspect AI eval logs (inspect.aisi.org.uk): ``.eval`` archives and ``.json`` logs.

Read as the files are, never through ``inspect_ai``: its log reader is a heavy runtime
dependency (an async stack, cloud file systems, a web viewer), and a ``.eval`` log is a
zip of JSON members that the standard library's ``zipfile`` lists and Arrow's zstd codec
decompresses (``archive.py``), one member at a time, so a log of any size is read in
bounded memory. A ``.json`` log over the record limit is streamed with ijson, one sample
at a time (``stream.py``).

One source record is one sample of one epoch (``samples/<id>_epoch_<n>.json``,
``.samples[i]``): a ``responses`` row, a ``turns`` row per message, an ``evaluations``
row per score and a ``sample_events`` row per event of its transcript (``sample.py``).
The log's header is one more record, an ``eval_logs`` row; each score reduced over
epochs one ``score_reductions`` row (``header.py``). The mapping page is
docs/formats/inspect.md.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Iterator

from warehouse.formatkit.ingestor import Ingestor
from warehouse.formatkit.records import Mapped, Record, RecordContext
from warehouse.formatkit.source import SourceFile

from . import schema
from .files import LOG, REDUCTION, ZIP_MAGIC, log_records
from .header import map_log, map_reduction
from .sample import map_sample

#: the members Inspect writes first (the journal's start record; a log rewritten whole may begin
#: with a sample, its header or an index): the name of a zip's first member says it is a log
_FIRST_MEMBER = re.compile(rb"_journal/[^/]+|samples/[^/]+\.json|header\.json|summaries\.json|reductions\.json")
#: a .json log: Inspect writes the log format's version first, then the status, then the eval spec
_JSON_LOG = re.compile(rb'\A\s*\{\s*"version"\s*:\s*\d+\s*,')
_SPEC = re.compile(rb'"eval"\s*:\s*\{\s*"(?:eval_id|run_id|task|task_id|created)"\s*:')


class Inspect(Ingestor):
    name = "inspect"
    description = "Inspect AI eval logs: .eval archives and .json logs, a response per sample and epoch"
    suffixes = (".eval", ".json")
    # Its files are told by their first bytes alone; Scale's sniff would take a .json log (its eval spec has a task_id)
    priority = 15
    columns = schema.COLUMNS
    tables = schema.TABLES
    views = schema.VIEWS

    def sniff(self, path: str, head: bytes) -> bool:
        if head.startswith(ZIP_MAGIC):
            return _first_member(head) is not None and bool(_FIRST_MEMBER.fullmatch(_first_member(head)))
        return bool(_JSON_LOG.match(head)) and _SPEC.search(head) is not None

    def records(self, src: SourceFile) -> Iterator[Record]:
        return log_records(src)

    def map(self, record: Record, ctx: RecordContext) -> Mapped:
        kind = (record.envelope or {}).get("kind")
        if kind == LOG:
            return map_log(record, ctx)
        if kind == REDUCTION:
            return map_reduction(record, ctx)
        return map_sample(record, ctx)


def _first_member(head: bytes) -> bytes | None:
    """The name of a zip archive's first member, from its local header (30 bytes, then the name)."""
    if len(head) < 30:
        return None
    (length,) = struct.unpack_from("<H", head, 26)
    name = head[30:30 + length]
    return name if len(name) == length else None
