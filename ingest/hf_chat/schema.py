"""The columns Hugging Face chat datasets add to the shared tables (merged into ``warehouse.formatkit.declared.TABLES``)."""

from __future__ import annotations

from warehouse.tables import STR, C, Column

RESPONSE_COLUMNS: tuple[Column, ...] = (
    C("chat_shape", STR, "shape of the Hugging Face chat row the response comes from: `messages`, `sharegpt`, "
                         "`prompt_completion`, `prompt` (prompt-only) or `preference`"),
)

COLUMNS = {"responses": RESPONSE_COLUMNS}
