"""One AfterImage row into ``responses``, ``turns`` and ``evaluations`` rows.

Every shape the generator has written maps here: evaluated and unevaluated rows
(no ``evaluation``/``final_score`` keys, or the model defaults ``null``/``0.0``),
empty or null ``metadata``, rows without ``reasoning_content`` or ``persona``,
the server's rows without metadata, and legacy rows with one ``context`` field.
A row of its own with ``system_prompt_parts`` (how the warehouse's afterimage
export writes a wrapper row to JSONL) maps as if the wrapper held them.
"""

from __future__ import annotations

from typing import Any

from warehouse.formatkit.records import Mapped, RecordContext, RecordError

from ..fields import Fields, expect_object
from .conversation import exchange, turn_rows
from .evaluation import evaluation_rows

_TEXT_FIELDS = ("persona", "instruction_context", "response_context", "context")


def map_row(value: Any, envelope: dict | None, ctx: RecordContext) -> Mapped:
    obj = expect_object(value, "AfterImage row")
    if "conversations" not in obj:
        keys = ", ".join(sorted(obj)[:8]) or "none"
        raise RecordError(
            f"not an AfterImage row: no 'conversations' key (keys: {keys}); "
            "each row needs a 'conversations' list of {role, content} messages"
        )
    f = Fields(obj)
    response_id = ctx.row_id()
    turns = turn_rows(f.raw("conversations"), response_id, ctx)
    prompt, response = exchange(turns)
    row: dict[str, Any] = {"response_id": response_id, "candidate_index": 0, "prompt": prompt, "response": response}
    for key in _TEXT_FIELDS:
        row[key] = f.text(key)
    extra: dict[str, Any] = {}
    _metadata(f.object("metadata"), row, extra)
    evaluations = evaluation_rows(f, response_id, ctx, extra)
    if envelope is None and "system_prompt_parts" in f:
        # a wrapper row as the warehouse's afterimage export writes it: one JSONL line, its parts inline
        envelope = {"system_prompt_parts": f.raw("system_prompt_parts")}
    _wrapper(envelope, row, extra)
    extra.update(f.rest() or {})
    row["extra"] = extra or None
    out: Mapped = {"responses": [row]}
    if turns:
        out["turns"] = turns
    if evaluations:
        out["evaluations"] = evaluations
    return out


def _metadata(metadata: dict | None, row: dict, extra: dict) -> None:
    """``GenerationMetadata`` keys become columns; any other key stays in ``extra.metadata``."""
    if metadata is None:
        return
    m = Fields(metadata, ".metadata")
    row["context_id"] = m.id("context_id")
    row["context_ids"] = m.texts("context_ids")
    row["persona_name"] = m.text("persona_name")
    row["persona_generation_depth"] = m.int("persona_generation_depth")
    row["instruction_index"] = m.int("instruction_index")
    row["batch_id"] = m.id("batch_id")
    row["session_id"] = m.id("session_id")
    left = m.rest()
    if left:
        extra["metadata"] = left


def _wrapper(envelope: dict | None, row: dict, extra: dict) -> None:
    """The server wrapper's fields, shared by every row of its file.

    The server builds the respondent's system prompt as ``" ".join(parts)``
    (plus a language rule it does not store); the parts themselves are kept in
    ``extra`` so the split survives.
    """
    if not envelope:
        return
    w = Fields(dict(envelope))
    parts = w.texts("system_prompt_parts")
    if parts is not None:
        row["system_prompt"] = " ".join(parts) or None
        extra["system_prompt_parts"] = parts
    left = w.rest()
    if left:
        extra["wrapper"] = left
