"""Dataloop prompt items ("RLHF JSON") and llm_trace documents (dtlpy SDK, platform exports).

One source record is one Dataloop item: a prompt file (``{"shebang": "dataloop",
"metadata": {"dltype": "prompt"}, "prompts": {...}}``), its platform item JSON
(``metadata.system.shebang.dltype``, with the annotations that hold the model
answers), or both joined when a dataset download has them side by side
(``items/X.json`` + ``json/X.json``, see ``download.py``). ``llm_trace``
documents (OpenAI-style messages) are items too. Mapping: docs/formats/dataloop.md.
"""

from __future__ import annotations

from collections.abc import Iterator

from warehouse.formatkit.ingestor import Ingestor, exporter_in
from warehouse.formatkit.records import Mapped, Record, RecordContext, RecordError
from warehouse.formatkit.source import SourceFile

from ..fields import expect_object
from . import detect, download, schema
from .item import map_prompt_item
from .trace import map_trace


class Dataloop(Ingestor):
    name = "dataloop"
    description = "Dataloop prompt items (prompt files, platform item JSON, dataset downloads) and llm_trace documents"
    suffixes = (".json",)
    priority = 50
    columns = schema.COLUMNS
    exporter = exporter_in(f"{__name__}.export")  # back to a dataset download: export.py

    def sniff(self, path: str, head: bytes) -> bool:
        return detect.is_document(head) or detect.is_platform_item(head)

    def records(self, src: SourceFile) -> Iterator[Record]:
        return download.records(src)

    def map(self, record: Record, ctx: RecordContext) -> Mapped:
        obj = expect_object(record.value, "Dataloop item")
        if detect.is_platform_value(obj):
            return map_prompt_item(None, obj, "", ctx)  # an item JSON read alone
        envelope = record.envelope or {}
        item_json = envelope.get("item_json")
        dltype = detect.document_dltype(obj)
        if dltype == detect.PROMPT:
            return map_prompt_item(obj, item_json, download.SIBLING, ctx)
        if dltype == detect.LLM_TRACE:
            return map_trace(obj, item_json, download.SIBLING, ctx)
        if dltype is None:
            keys = ", ".join(sorted(obj)[:8]) or "none"
            raise RecordError(
                f"not a Dataloop prompt item or llm_trace: no prompts, messages or item metadata (keys: {keys}); "
                "pass --format to read it as another format"
            )
        raise RecordError(
            f"Dataloop document type {dltype!r} holds no responses: this format reads prompt items "
            "(dltype prompt) and llm_trace documents",
            sub_locator=".metadata.dltype",
        )
