"""``warehouse export --format afterimage``: the selection back to AfterImage JSONL.

One file, one row per line, written as AfterImage's ``JSONLStorage`` writes
them (``json.dumps(row, ensure_ascii=False)``), so ``JSONLStorage.load_conversations``
and ``EvaluatedConversationWithContext(**row)`` read it. Responses the afterimage
ingest wrote come back whole (``unmap.afterimage_row``); those of other formats
get a minimal mapping (``foreign.foreign_row``). The selection is staged and read a
window at a time with the export kit (``warehouse.exports.kit``). docs/formats/afterimage.md#export
"""

from __future__ import annotations

import json
from collections import Counter

from warehouse.exports import kit

from .foreign import foreign_row
from .unmap import afterimage_row, fits_current_types

#: each selected response in file order
ORDER = "r.source_path, r.record_index NULLS FIRST, r.candidate_index, r.source_locator, r.response_id"
COLUMNS = ", ".join(f"r.{c}" for c in (
    "response_id", "record_id", "source_format", "response", "system_prompt", "inference_model", "answers_turn", "persona",
    "instruction_context", "response_context", "context", "context_id", "context_ids", "persona_name",
    "persona_generation_depth", "instruction_index", "batch_id", "session_id", "extra")) + f", {kit.USER_PROMPT} AS prompt"
NATIVE = "p.source_format = 'afterimage'"


def write(ctx: kit.ExportContext) -> int:
    """One line per selected response: its own row back (with its record's messages and its evaluations),
    or, for a response of another format, its conversation (``kit.conversation``)."""
    total = kit.stage(ctx, order=ORDER, columns=COLUMNS, user_prompts=True)
    kit.stage_children(ctx, "turns", row="{'role': c.role, 'content': c.content, 'reasoning_content': c.reasoning_content, "
                                         "'extra': c.extra}", parents=NATIVE)
    kit.stage_children(ctx, "evaluations", row="{'criterion': c.criterion, 'score': c.score, 'score_scale': c.score_scale, "
                                               "'label': c.label, 'feedback': c.feedback, "
                                               "'source_locator': c.source_locator, 'extra': c.extra}", parents=NATIVE)
    kit.stage_conversations(ctx, parents=f"NOT ({NATIVE})")
    lists = {name: name for name in ("turns", "evaluations", "conversation_turns", "conversation_answers")}
    written = legacy = 0
    left_out: Counter[str] = Counter()
    foreign: Counter[str] = Counter()
    empty: Counter[str] = Counter()
    with open(ctx.out, "w", encoding="utf-8") as f, kit.deep_recursion():  # json.dumps recurses per level
        for lo, hi in kit.windows(total):
            lines = []
            for r in kit.window(ctx, lo, hi, lists):
                if r["source_format"] == "afterimage":
                    row = afterimage_row(r)
                    legacy += not fits_current_types(row)
                else:
                    row, dropped = foreign_row(dict(r, turns=r["conversation_turns"], answers=r["conversation_answers"]))
                    if row is None:
                        empty[r["source_format"]] += 1
                        continue
                    foreign[r["source_format"]] += 1
                    left_out.update(dropped)
                lines.append(json.dumps(row, ensure_ascii=False) + "\n")  # as JSONLStorage writes a row
            f.writelines(lines)
            written += len(lines)
            ctx.progress(hi)
    _notes(ctx, legacy, foreign, empty, left_out)
    return written


def _by_format(counts: Counter[str]) -> str:
    return ", ".join(f"{name} {n}" for name, n in sorted(counts.items()))


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


def _notes(ctx: kit.ExportContext, legacy: int, foreign: Counter, empty: Counter, left_out: Counter) -> None:
    if foreign:
        rows = kit.rows_text(kit.count_belonging(ctx, "r.source_format IS DISTINCT FROM 'afterimage'",
                                                 [t for t in kit.children() if t != "turns"]))
        ctx.notes.append(
            f"{_n(sum(foreign.values()), 'response')} of other formats ({_by_format(foreign)}) written with the minimal "
            "mapping: user and assistant messages as conversations, system prompts as system_prompt_parts"
            + (f"; their {rows} are not carried" if rows else ""))
    kit.note_left_out(ctx, left_out, "in other formats' conversations; AfterImage messages are user or assistant text")
    if empty:
        ctx.notes.append(
            f"{_n(sum(empty.values()), 'response')} of other formats ({_by_format(empty)}) had no user or assistant text "
            "and were left out")
    if legacy:
        ctx.notes.append(
            f"{_n(legacy, 'row')} kept an evaluation afterimage's current types reject (a legacy judge's points and "
            "comments, or not the five current criteria and a grade), as in its source; leave the first judge's rows out "
            "with --where \"response_id NOT IN (SELECT response_id FROM evaluations WHERE score_scale = 'points')\"")


EXPORT = kit.ExportFormat(
    "afterimage",
    "AfterImage JSONL: one EvaluatedConversationWithContext row per response, as JSONLStorage writes them",
    directory=False,
    write=write,
    suffixes=(".jsonl",),  # JSON Lines: a .json file is read as one document
)
