"""Responses of other formats as AfterImage rows: a minimal, documented mapping.

Its conversation (``kit.conversation``, the rule ``openai_chat`` follows too): user
and assistant messages become ``conversations`` (their text), system messages
``system_prompt_parts``; tool messages, tool calls and media parts have no place in
an AfterImage row and are counted. docs/formats/afterimage.md#export
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from warehouse.exports import kit


def foreign_row(r: dict) -> tuple[dict | None, Counter]:
    """(an AfterImage row, what its conversation held that AfterImage cannot) for a response of another
    format (``r``: a row ``kit.conversation`` takes); the row is None when no user or assistant text is left."""
    c = kit.conversation(r)
    left = Counter(c.left_out)
    conversation_rows = []
    for m in c.messages:
        left.update({"tool call": len(m.get("tool_calls") or ()), "media part": len(kit.media_of(m))})
        text = kit.text_of(m)
        if m["role"] in ("user", "assistant") and text is not None:
            conversation_rows.append({"role": m["role"], "content": text, "reasoning_content": None})
        elif m["role"] == "tool":
            left["tool message"] += 1
    if not conversation_rows:
        return None, left
    row: dict[str, Any] = {
        "conversations": conversation_rows,
        "metadata": {"source_format": r["source_format"], "response_id": r["response_id"]},
        "instruction_context": None,
        "response_context": None,
        "persona": None,
    }
    system = [kit.text_of(m) for m in c.messages if m["role"] in ("system", "developer") and kit.text_of(m) is not None]
    if system:
        row["system_prompt_parts"] = system
    return row, left
