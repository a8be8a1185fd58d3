"""``warehouse export --format trait_interp``: the selection back into a trait-interp project tree.

``--out`` is a directory laid out like trait-interp's project root
(docs/formats/trait_interp.md#export):

* ``experiments/...``: the response files, at their paths below ``experiments/``
  (array files for extraction and steering, one object per file for inference
  and rollouts), with their ``*_annotations.json`` and ``metadata.json`` siblings;
* ``datasets/...``: the prompt sets of the exported responses;
* ``other/...``: files from outside an experiments tree, and the responses of
  other formats as minimal records (``foreign.py``).

Where each file goes is planned first (``layout.py``); the responses are then staged in
that order and written a window at a time with the export kit (``warehouse.exports.kit``),
each back through the inverse mapping (``unmap/``).
"""

from __future__ import annotations

import os
from collections import Counter
from itertools import groupby

from warehouse.exports import kit

from .. import foreign
from ..unmap import annotations, responses, sidecars
from . import layout
from .jsonout import FileWriter, write_json

#: each response to write, in file order (``layout_out``: its file, its place in it)
PLAN = "JOIN layout_out AS o ON o.response_id = r.response_id"
ORDER = "o.out_path, o.out_index"
COLUMNS = """o.out_path, o.single, o.native, r.source_format, r.source_path, r.source_locator, r.candidate_index,
       r.pipeline, r.prompt, r.response, r.system_prompt, r.tokens, r.token_ids, r.prompt_end, r.prefill_end,
       r.inference_model, r.prompt_note, r.capture_date, r.tags, r.trait_score, r.coherence_score,
       CAST(r.rollout_source AS VARCHAR) AS rollout_source, CAST(r.extra AS VARCHAR) AS extra"""
#: a native response's turn and sentence boundaries; sentences as the file listed them
TURN = """{'role': c.role, 'token_start': c.token_start, 'token_end': c.token_end, 'has_thinking': c.has_thinking,
           'has_tool_calls': c.has_tool_calls, 'tool_names': c.tool_names, 'tool_call_id': c.tool_call_id,
           'tool_name': c.tool_name, 'content': c.content, 'reasoning_content': c.reasoning_content,
           'extra': CAST(c.extra AS VARCHAR)}"""
SENTENCE = """{'sentence_num': c.sentence_num, 'token_start': c.token_start, 'token_end': c.token_end, 'cue_p': c.cue_p,
               'extra': CAST(c.extra AS VARCHAR)}"""
IN_THE_FILE = r"CAST(regexp_extract(c.source_locator, '\[([0-9]+)\]$', 1) AS BIGINT)"

ANNOTATIONS_SQL = """
SELECT f.out_path AS file_path, a.source_path, s.form, CAST(s.metadata AS VARCHAR) AS metadata,
       CAST(s.categories AS VARCHAR) AS categories, CAST(s.extra AS VARCHAR) AS set_extra,
       o.out_path AS target_path, o.out_index, o.single,
       a.level, a.source_locator, a.span, a.category, a.intensity, a.note, a.borderline,
       a.token_start, a.token_end, a.token_source, CAST(a.extra AS VARCHAR) AS extra,
       CAST(a.entry_key AS VARCHAR) AS entry_key
FROM annotations AS a
JOIN layout_files AS f ON f.source_path = a.source_path AND f.kind = 'annotations'
JOIN annotation_sets AS s ON s.source_path = a.source_path
JOIN layout_out AS o ON o.response_id = a.response_id AND o.native
ORDER BY a.source_path, a.source_locator, a.annotation_id
"""

METADATA_SQL = """
SELECT f.out_path, CAST(g.params AS VARCHAR) AS params
FROM generation_metadata AS g JOIN layout_files AS f ON f.source_path = g.source_path AND f.kind = 'metadata'
ORDER BY f.out_path
"""

PROMPTS_SQL = """
WITH exported AS (
    SELECT r.prompt_set, r.trait, r.pipeline FROM responses AS r
    WHERE r.response_id IN (SELECT response_id FROM layout_out WHERE native)
)
SELECT p.prompt_set, p.set_kind, p.source_path, p.source_locator, p.prompt_id, p.prompt, p.note, p.system_prompt,
       p.set_name, p.set_description, CAST(p.extra AS VARCHAR) AS extra
FROM prompts AS p
WHERE (p.set_kind = 'inference' AND p.prompt_set IN (SELECT prompt_set FROM exported))
   OR (p.set_kind = 'steering' AND p.prompt_set IN (SELECT trait FROM exported WHERE pipeline = 'steering'))
ORDER BY p.source_path, p.source_locator
"""


def write(ctx: kit.ExportContext) -> int:
    with kit.deep_recursion():  # jsonout writes JSON recursively, one level at a time
        layout.plan(ctx.con)
        written, others = _responses(ctx)
        _annotations(ctx)
        for row in ctx.con.execute(METADATA_SQL).fetchall():
            write_json(os.path.join(ctx.out, row[0]), kit.json_value(row[1]))
        sets = _prompt_sets(ctx)
        _foreign_notes(ctx, written, others)
        _left_behind(ctx, sets)
    return written


def _responses(ctx: kit.ExportContext) -> tuple[int, Counter]:
    total = kit.stage(ctx, order=ORDER, columns=COLUMNS, join=PLAN)
    kit.stage_children(ctx, "turns", row=TURN, parents="p.native")
    kit.stage_children(ctx, "sentence_boundaries", row=SENTENCE, order=(IN_THE_FILE,), parents="p.native")
    out = FileWriter(ctx.out)
    written, other = 0, Counter()
    try:
        for lo, hi in kit.windows(total):
            for row in kit.window(ctx, lo, hi, {"turns": "turns", "sentences": "sentence_boundaries"}):
                if row["native"]:
                    value = responses.native_record(row, row["turns"], row["sentences"])
                else:
                    value = foreign.foreign_record(row)
                    other[row["source_format"]] += 1
                out.record(row["out_path"], row["single"], value)
                written += 1
            ctx.progress(written)
    finally:
        out.close()
    return written, other


def _annotations(ctx: kit.ExportContext) -> None:
    rows = (r for batch in kit.batches(ctx, ANNOTATIONS_SQL) for r in batch.to_pylist())
    for file_path, group in groupby(rows, key=lambda r: r["file_path"]):
        group = list(group)  # one annotation file's rows: the ingest read that file whole too
        first = group[0]
        root = {"metadata": first["metadata"], "categories": first["categories"], "extra": first["set_extra"]}
        write_json(os.path.join(ctx.out, file_path), annotations.document(first["form"], root, group))


def _prompt_sets(ctx: kit.ExportContext) -> list[str]:
    """Write the prompt sets of the exported responses; the source paths of those sets (written, or said
    to be left for another file of the same set)."""
    rows = (r for batch in kit.batches(ctx, PROMPTS_SQL) for r in batch.to_pylist())
    done: dict[str, str] = {}
    used = []
    for source, group in groupby(rows, key=lambda r: r["source_path"]):
        group = list(group)
        used.append(source)
        path = sidecars.set_path(group[0]["prompt_set"], group[0]["set_kind"])
        if path in done:
            ctx.notes.append(f"prompt set {path}: also in {source}; wrote the one from {done[path]}")
            continue
        done[path] = source
        write_json(os.path.join(ctx.out, path), sidecars.prompt_set_document(group))
    return used


def _foreign_notes(ctx: kit.ExportContext, written: int, others: Counter) -> None:
    if others:
        kinds = ", ".join(f"{n} {fmt}" for fmt, n in sorted(others.items()))
        rows = kit.rows_text(kit.count_belonging(ctx, "r.source_format IS DISTINCT FROM 'trait_interp'", kit.core_children()))
        ctx.notes.append(
            f"{sum(others.values())} responses of other formats ({kinds}) were written under other/ as minimal "
            "records (prompt, response, system_prompt, provenance in source); their extra fields"
            + (f" and their {rows}" if rows else "") + " are not carried"
        )
    skipped = ctx.total - written
    if skipped:
        ctx.notes.append(
            f"{skipped} responses of other formats have no prompt or no response text and were left out "
            "(trait-interp records need both)"
        )


#: what the export leaves behind, counted after it: the rows of trait-interp's own tables that no
#: exported response has (the selection is responses, and what belongs to them)
LEFT_SQL = {
    "prompts": "SELECT count(*), count(DISTINCT source_path) FROM prompts "
               "WHERE source_path NOT IN (SELECT unnest(?::VARCHAR[]))",
    "annotations": """
        WITH left_out AS (
            SELECT a.level, r.response_id IS NOT NULL AS known
            FROM annotations AS a LEFT JOIN responses AS r USING (response_id)
            WHERE a.source_path IN (SELECT source_path FROM annotation_sets)
              AND (a.response_id IS NULL OR a.response_id NOT IN (SELECT response_id FROM layout_out WHERE native))
        )
        SELECT count(*) FILTER (WHERE level IS DISTINCT FROM 'sentence' AND NOT known),
               count(*) FILTER (WHERE level IS DISTINCT FROM 'sentence' AND known),
               count(*) FILTER (WHERE level = 'sentence'),
               (SELECT count(*) FROM annotation_sets
                WHERE source_path NOT IN (SELECT source_path FROM layout_files WHERE kind = 'annotations'))
        FROM left_out""",
    "generation_metadata": "SELECT count(*) FROM generation_metadata "
                           "WHERE source_path NOT IN (SELECT source_path FROM layout_files WHERE kind = 'metadata')",
    "activations": "SELECT count(*) FROM activations WHERE response_id IN (SELECT response_id FROM layout_out)",
}


def _left_behind(ctx: kit.ExportContext, used_sets: list[str]) -> None:
    con = ctx.con
    prompts, sets = con.execute(LEFT_SQL["prompts"], [used_sets]).fetchall()[0]
    if prompts:
        ctx.notes.append(f"{prompts} prompts of {sets} prompt set files no exported response uses were not exported")
    missing, unselected, sentences, files = con.execute(LEFT_SQL["annotations"]).fetchall()[0]
    if missing or unselected or sentences:
        why = [f"{missing} whose response is not in the warehouse" if missing else "",
               f"{unselected} about responses not exported" if unselected else "",
               f"{sentences} sentence categories, about no response" if sentences else ""]
        ctx.notes.append(
            f"{missing + unselected + sentences} annotations are about no exported response and were not exported "
            f"({', '.join(w for w in why if w)})" + (f"; {files} annotation files had nothing else and were not written" if files else ""))
    (metadata,) = con.execute(LEFT_SQL["generation_metadata"]).fetchall()[0]
    if metadata:
        ctx.notes.append(f"{metadata} generation metadata files of folders with no exported response were not exported")
    (activations,) = con.execute(LEFT_SQL["activations"]).fetchall()[0]
    if activations:
        ctx.notes.append(f"{activations} activation files (.pt) of exported responses were not exported: exports write JSON")


EXPORT = kit.ExportFormat(
    "trait_interp",
    "a trait-interp project tree: experiments/ response files with their annotations and metadata.json, "
    "datasets/ prompt sets",
    directory=True,
    write=write,
)
