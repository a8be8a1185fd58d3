"""trait-interp "Response Schema" files (github.com/ewernn/trait-interp).

One source record is one response object: an element of an array file
(extraction, steering) or a whole single-object file (inference, rollouts).
The same ingestor also reads the files around responses: prompt sets (the
inputs, into ``prompts``), generation parameters (``generation_metadata``),
annotation files (``annotations``, ``annotation_sets``), per-token projection
files (``token_values``, ``projection_files``) and the experiment's config
(``model_variants``).
Path-derived fields (experiment, prompt set, ...) are computed in SQL, by the
view ``path_fields`` it defines (``path_fields.py``), never here.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from warehouse.formatkit.ingestor import FastResult, Ingestor, exporter_in
from warehouse.formatkit.readers import BOM, json_document_records, json_whole_record
from warehouse.formatkit.records import Mapped, Record, RecordContext
from warehouse.formatkit.source import SourceFile

from .. import tokenizers
from . import kinds, schema
from .annotations import annotation_records, map_annotations
from .config import config_records, map_model_variant
from .projections import map_projections
from .responses import map_response
from .sidecars import map_generation_metadata, map_prompt, prompt_set_records
from .token_stats import SPANS_BY_TOKENIZER_SQL
from .user_prompts import USER_PROMPTS_SQL
from .views import DEFINES, VIEWS

#: other formats' markers: a file holding one of these is not ours without a path to say so
#: (Dataloop, AfterImage and chat messages, Scale tasks: its datasets-API task has a response with a prompt)
_FOREIGN = (b'"shebang"', b'"conversations"', b'"messages"', b'"task_id"')


class TraitInterp(Ingestor):
    name = "trait_interp"
    description = ("trait-interp response files (inference, extraction, steering, rollouts), prompt sets, metadata.json, "
                   "per-token projections, experiment configs")
    suffixes = (".json",)
    priority = 20
    columns = schema.COLUMNS
    tables = schema.TABLES
    views = VIEWS
    defines = DEFINES  # its path grammar and the generation parameters responses join
    user_prompts_sql = USER_PROMPTS_SQL  # responses.prompt holds the chat-templated prompt
    stats_queries = {"spans_by_tokenizer": SPANS_BY_TOKENIZER_SQL}  # which tokenizer made the token ranges
    fast_documents_path = True  # inference files of the common flat shape: fast.py
    worker_modules = (f"{__name__}.fast",)
    exporter = exporter_in(f"{__name__}.export")

    def sniff(self, path: str, head: bytes) -> bool:
        # The path first: it decides most files, and looking for an annotation file's keys in
        # the content (kinds.kind_of) reads the whole head, the whole of a small file.
        if kinds.kind_of_path(path) != kinds.RESPONSES:
            return True  # the layout says so; content problems become quarantine messages
        if kinds.in_experiments_tree(path) and ("/responses/" in path or "/val_responses/" in path):
            return True
        if kinds.kind_of(path, head) == kinds.ANNOTATIONS:
            return True
        start = head.lstrip()[:1]
        if start not in (b"[", b"{"):
            return False
        if any(marker in head for marker in _FOREIGN):
            return False
        if not (b'"response"' in head and (b'"prompt"' in head or b'"question"' in head)):
            return False
        # The keys of the record itself, not deeper: a layer-profiling result has prompt and response
        # objects of statistics under each layer, and is no response
        keys = kinds.record_keys(head)
        return "response" in keys and ("prompt" in keys or "question" in keys)

    def not_records(self, path: str) -> str | None:
        return kinds.not_records(path)

    def option_problem(self, name: str, value: Any) -> str | None:
        # annotation files re-tokenize responses without stored tokens (annotation_targets.py): a folder, or a
        # model id in the local Hugging Face cache
        return tokenizers.problem(value) if name == "tokenizer" else None

    def records(self, src: SourceFile) -> Iterator[Record]:
        # The file's kind is decided here, once (by its path, or its content for an annotation file
        # with another name), and each record carries it to `map` in its envelope (kinds.KIND).
        kind = kinds.kind_of(src.path, src.head.removeprefix(BOM))
        if kind == kinds.PROMPT_SET:
            return prompt_set_records(src)
        if kind == kinds.ANNOTATIONS:
            return annotation_records(src)
        if kind == kinds.GENERATION_METADATA:
            return _of_kind(json_document_records(src), kind)
        if kind == kinds.PROJECTIONS:
            return iter([_projection_record(src)])
        if kind == kinds.EXPERIMENT_CONFIG:
            return config_records(src)
        return json_document_records(src)  # responses: no envelope

    def fast_document(self, path: str, head: bytes, data: bytes) -> bool:
        # By the path alone: a file the content test (kinds.kind_of) would call an annotation file
        # has "response_source" or "detailed_annotations" as a key, which fast.py refuses.
        from . import fast  # where files are mapped: loading the format does not need it

        return not data.startswith(BOM) and kinds.kind_of_path(path) == kinds.RESPONSES and fast.takes(data)

    def fast_documents(self, docs: list[tuple[str, bytes]]) -> FastResult | None:
        from . import fast

        return fast.documents(docs, self.name)

    def map(self, record: Record, ctx: RecordContext) -> Mapped:
        kind = record.envelope.get(kinds.KIND) if record.envelope else kinds.RESPONSES
        if kind == kinds.PROMPT_SET:
            return map_prompt(record, ctx)
        if kind == kinds.GENERATION_METADATA:
            return map_generation_metadata(record.value, ctx)
        if kind == kinds.ANNOTATIONS:
            return map_annotations(record, ctx)
        if kind == kinds.PROJECTIONS:
            return map_projections(record, ctx)
        if kind == kinds.EXPERIMENT_CONFIG:
            return map_model_variant(record, ctx)
        return map_response(record.value, ctx)


def _projection_record(src: SourceFile) -> Record:
    """A projection file is one record, whatever its top level: its place travels with it."""
    record = json_whole_record(src)
    record.envelope = {kinds.KIND: kinds.PROJECTIONS, "place": kinds.projection_place(src.path)}
    return record


def _of_kind(records: Iterator[Record], kind: str) -> Iterator[Record]:
    for record in records:
        record.envelope = {kinds.KIND: kind}
        yield record
