"""Export back to Dataloop: a directory laid out like a dataset download.

``items/<name>`` holds each item's own file (a prompt file or an ``llm_trace``
document), ``json/<name>`` its platform item JSON with the annotations (model
answers among them), as ``dataset.download(annotation_options=JSON)`` writes
them; ingesting the directory joins each pair into one record again. One item per
source record: the selected responses of a record are its answers. The reverse
mapping is ``unmap.py``; responses of other formats go through ``foreign.py``.
Records are staged (one parent per record) and written a window at a time with the
export kit (``warehouse.exports.kit``). Mapping and layout: docs/formats/dataloop.md#export.
"""

from __future__ import annotations

import os
from collections import Counter

from warehouse.exports import kit

from . import foreign, unmap

#: one parent per source record, in the order of the files (by the record's selected responses)
RECORD = ("r.record_id",)
ORDER = "min(r.source_path), min(r.record_index) NULLS FIRST, min(r.source_locator), r.record_id"
#: a record's format, and its place among the file's selected records (to name the items of another format's file)
COLUMNS = (
    "any_value(r.source_format) AS source_format, count(*) OVER (PARTITION BY min(r.source_path)) AS file_records, "
    "row_number() OVER (PARTITION BY min(r.source_path) ORDER BY min(r.record_index) NULLS FIRST, min(r.source_locator), "
    "r.record_id) - 1 AS file_position"
)
#: what the item files need of a selected response
RESPONSE = "{" + ", ".join(f"'{c}': c.{c}" for c in (
    "response_id", "record_id", "source_format", "source_path", "source_locator", "record_index", "candidate_index", "prompt",
    "response", "system_prompt", "inference_model", "capture_date", "tags", "dltype", "item_id", "dataset_id",
    "item_filename", "item_creator", "item_created_at", "item_updated_at", "prompt_key", "model_id", "model_confidence",
    "response_ref", "response_mimetype", "answers_turn")) + ", 'extra': CASE WHEN c.source_format = 'dataloop' THEN c.extra END}"
NATIVE = "p.source_format = 'dataloop'"
LISTS = {name: name for name in ("responses", "turns", "annotations", "conversation_turns", "conversation_answers")}
#: one row per staged record in the window: its lists as JSON, and its place among its file's records
SELECT = ("to_json({responses: responses, turns: turns, annotations: annotations, conversation_turns: conversation_turns, "
          "conversation_answers: conversation_answers})::VARCHAR, file_records, file_position")


#: per other format, the folder all its selected files are under: the common prefix of the first and last paths
FOREIGN_ROOTS_SQL = """
SELECT source_format, min(source_path), max(source_path) FROM responses
WHERE response_id IN (SELECT response_id FROM selected) AND source_format <> 'dataloop'
GROUP BY source_format
"""


def write(ctx: kit.ExportContext) -> int:
    for folder in ("items", "json"):
        os.makedirs(os.path.join(ctx.out, folder))
    roots = {fmt: _common_folder(low, high) for fmt, low, high in ctx.con.execute(FOREIGN_ROOTS_SQL).fetchall()}
    export = _Export(ctx.out, roots)
    total = kit.stage(ctx, per=RECORD, order=ORDER, columns=COLUMNS)
    # a record's selected responses (candidate order); for Dataloop records the turns and annotations that
    # go with them, for records of other formats what their conversations need
    kit.stage_children(ctx, "responses", row=RESPONSE, order=("c.candidate_index", "c.source_locator", "c.response_id"))
    kit.stage_children(ctx, "turns", parents=NATIVE)
    kit.stage_children(ctx, "annotations", parents=NATIVE)
    kit.stage_conversations(ctx, parents=f"NOT ({NATIVE})")
    for lo, hi in kit.windows(total):
        batch = ctx.con.sql(kit.window_sql(lo, hi, LISTS, select=SELECT)).to_arrow_table()
        texts, counts, positions = (batch.column(i).to_pylist() for i in range(3))
        for text, count, position in zip(texts, counts, positions):
            export.record(kit.loads(text), position if count > 1 else None)  # NaN, wide integers, deep values too
        ctx.progress(export.seen)
    ctx.notes += export.notes()
    if export.foreign:
        rows = kit.rows_text(kit.count_belonging(ctx, "r.source_format IS DISTINCT FROM 'dataloop'", kit.children()))
        if rows:
            ctx.notes.append(f"the {rows} of the responses of other formats are not carried by their prompt items")
    return export.written


class _Export:
    """Writes one record at a time and counts what it wrote and left out."""

    def __init__(self, out: str, roots: dict[str, str]):
        self.out, self.roots = out, roots
        self.names = Names()
        self.seen = self.written = self.left_out = 0
        self.foreign: Counter[str] = Counter()
        self.dropped: Counter[str] = Counter()  # what other formats' conversations held that a prompt item cannot

    def record(self, record: dict, position: int | None) -> None:
        responses = record["responses"]
        first = responses[0]
        self.seen += len(responses)
        if first["source_format"] == "dataloop":
            name = self.names.claim(item_path(first))
            files = unmap.record_files(responses, record["turns"] or [], record["annotations"] or [])
            self.written += len(responses)
        else:
            answered = sum(r["response"] is not None for r in responses)
            self.left_out += len(responses) - answered
            if not answered:
                return
            name = self.names.claim(foreign_path(first, self.roots[first["source_format"]], position))
            files = foreign.record_files(responses, record["conversation_turns"] or [],
                                         record["conversation_answers"] or [], name, self.dropped)
            self.written += answered
            self.foreign[first["source_format"]] += answered
        _write_files(self.out, name, files)

    def notes(self) -> list[str]:
        notes = []
        if self.foreign:
            by_format = ", ".join(f"{n} {fmt}" for fmt, n in sorted(self.foreign.items()))
            notes.append(
                f"{sum(self.foreign.values())} responses of other formats ({by_format}) were written as prompt items "
                "with the minimal mapping (system prompt, prompt, response, model): see docs/formats/dataloop.md#export"
            )
        notes += [f"{kind}: {n} left out (in other formats' conversations; a prompt holds text and images)"
                  for kind, n in sorted(self.dropped.items()) if n]
        if self.left_out:
            notes.append(f"{self.left_out} selected responses of other formats have no answer text (response NULL) "
                         "and were left out")
        if self.names.renamed:
            notes.append(f"{self.names.renamed} items had the file name of another exported item "
                         "and were written as <name>-2.json, ...")
        return notes


def _write_files(out: str, name: str, files: unmap.Files) -> None:
    for folder, obj, indent in (("items", files.document, False), ("json", files.item_json, True)):
        if obj is None:
            continue
        path = os.path.join(out, folder, *name.split("/"))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(kit.dumps(obj, indent=indent))  # the stdlib for an integer wider than 64 bits or a deep value


# --- names -----------------------------------------------------------------------------------------


def _clean(path: str) -> list[str]:
    """A name from data as the export writes it: safe to write, read back by the ingest
    (``kit.safe_parts``), ending in ``.json``."""
    parts = kit.safe_parts(path.replace("\\", "/"))
    if not parts:
        return ["item.json"]
    if not parts[-1].endswith(".json"):
        parts[-1] += ".json"  # the ingestor reads .json files
    return parts


def item_path(first: dict) -> list[str]:
    """Where a Dataloop item goes under ``items/`` and ``json/``: its ``filename`` in the dataset, as a
    download lays it out; else its path under the ``items/`` (or ``json/``) folder it was read from;
    else its file name."""
    if first.get("item_filename"):
        return _clean(first["item_filename"])
    parts = first["source_path"].replace("\\", "/").split("/")
    for i in range(len(parts) - 2, -1, -1):
        if parts[i] in ("items", "json"):
            return _clean("/".join(parts[i + 1 :]))
    return _clean(parts[-1])


def _common_folder(low: str, high: str) -> str:
    return os.path.commonprefix([low, high]).rpartition("/")[0]


def foreign_path(first: dict, root: str, position: int | None) -> list[str]:
    """``<source_format>/<path under the folder of the format's selected files, no extension>[-<n>].json``
    for a record of another format, ``n`` counting the file's exported records from 0 when it has several
    (``trait_interp/inference/instruct/responses/general/baseline/1.json``, ``afterimage/conversations-3.json``)."""
    path = first["source_path"]
    relative = path[len(root) + 1 :] if path.startswith(root + "/") else os.path.basename(path)
    stem = os.path.splitext(relative)[0] or "record"
    if position is not None:
        stem += f"-{position}"
    return _clean(f"{first['source_format']}/{stem}.json")


class Names:
    """Item names, each given once: a taken name gets ``-2``, ``-3``, ... before ``.json``. A name is
    taken for ``items/`` and ``json/`` together (the pair is one item), and a file never shares its
    path with a folder."""

    def __init__(self) -> None:
        self.files: set[str] = set()
        self.folders: set[str] = set()
        self.renamed = 0

    def claim(self, parts: list[str]) -> str:
        if any("/".join(parts[:i]) in self.files for i in range(1, len(parts))):
            parts = [kit.fit("_".join(parts))]  # a folder named like an item file: no folders then
        stem, ext = os.path.splitext(parts[-1])
        n = 1
        while True:
            candidate = [*parts[:-1], parts[-1] if n == 1 else f"{stem}-{n}{ext}"]
            if self._free(candidate):
                break
            n += 1
        self.renamed += n > 1
        self.files.add("/".join(candidate))
        self.folders.update("/".join(candidate[:i]) for i in range(1, len(candidate)))
        return "/".join(candidate)

    def _free(self, parts: list[str]) -> bool:
        path = "/".join(parts)
        return path not in self.files and path not in self.folders


EXPORT = kit.ExportFormat(
    "dataloop",
    "a Dataloop dataset download: items/<name> prompt files (or llm_trace documents) and json/<name> item JSON with the answers",
    directory=True,
    write=write,
)
