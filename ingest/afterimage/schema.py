"""The columns AfterImage adds to the shared tables (merged into ``warehouse.formatkit.declared.TABLES``)."""

from __future__ import annotations

from warehouse.tables import I64, STR, STRS, C, Column

RESPONSE_COLUMNS: tuple[Column, ...] = (
    C("persona", STR, "persona of the simulated user (AfterImage top-level `persona`)"),
    C("persona_name", STR, "persona the question generator played (AfterImage `metadata.persona_name`)"),
    C("persona_generation_depth", I64, "depth of that persona in the persona tree, 0 for a seed persona (AfterImage `metadata.persona_generation_depth`)"),
    C("instruction_context", STR, "context document given to the question generator (AfterImage)"),
    C("response_context", STR, "context given to the respondent model (AfterImage)"),
    C("context", STR, "the single context of legacy AfterImage rows, before it was split into instruction_context and response_context"),
    C("context_id", STR, "id of the source document of the question, as text (AfterImage `metadata.context_id`)"),
    C("context_ids", STRS, "ids of every source document used (AfterImage `metadata.context_ids`)"),
    C("instruction_index", I64, "position of the instruction in its generation batch (AfterImage `metadata.instruction_index`)"),
    C("batch_id", STR, "generation batch id, as text (AfterImage `metadata.batch_id`)"),
    C("session_id", STR, "generation session id, as text (AfterImage `metadata.session_id`)"),
)

COLUMNS = {"responses": RESPONSE_COLUMNS}
