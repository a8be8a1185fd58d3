"""Responses of other formats as trait-interp response records: a minimal, documented mapping.

Prompt, response, system prompt, the trait-interp fields they have, and where they
came from in ``source``. docs/formats/trait_interp.md#export
"""

from __future__ import annotations

from typing import Any

from .unmap.responses import OPTIONAL, SCORES

#: columns of other formats' rows that trait-interp's schema has too
FOREIGN_FIELDS = ("tokens", "token_ids", "prompt_end", *OPTIONAL, *SCORES)


def foreign_record(row: dict) -> dict:
    """A response of another format as a minimal trait-interp record.

    Rows without prompt or response text are left out before (``export/layout.py``):
    trait-interp records need both.
    """
    rec: dict[str, Any] = {"prompt": row["prompt"], "response": row["response"], "system_prompt": row.get("system_prompt")}
    for key in FOREIGN_FIELDS:
        if row.get(key) is not None:
            rec[key] = row[key]
    rec["source"] = {
        "type": "response-warehouse",
        "source_format": row.get("source_format"),
        "source_path": row.get("source_path"),
        "source_locator": row.get("source_locator"),
        "candidate_index": row.get("candidate_index"),
    }
    return rec
