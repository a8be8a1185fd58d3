"""Responses of other formats (trait-interp, AfterImage, Dataloop) as Scale Turns.

They have no Scale shape to go back to, so each becomes one Turn holding its
conversation (``kit.conversation``: the one rule ``openai_chat``
follows too), in Scale's message shape: the text of each message (tool calls and
image parts have no place in a Scale message: counted in a note), ``tool`` as
``function``. A response without an answer keeps the messages that lead to it
(a prompt-only Turn, as Scale delivers one); one with none is left out and
counted in a note.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from warehouse.exports import kit

#: OpenAI's roles in Scale's words
ROLES = {"tool": "function"}


def foreign_turns(ctx: kit.ExportContext, dropped: Counter) -> Iterator[dict]:
    """One Turn per response of another format; what their conversations held that a Turn of the
    minimal mapping cannot is counted in ``dropped``."""
    left_out = 0
    for row in kit.conversations(ctx, "r.source_format IS DISTINCT FROM 'scale'"):
        turn = foreign_turn(row, dropped)
        if turn is None:
            left_out += 1
        else:
            yield turn
    if left_out:
        ctx.notes.append(f"{left_out} responses of other formats have neither prompt nor answer text and were left out")


def foreign_turn(row: dict, dropped: Counter | None = None) -> dict | None:
    """``{id, messages, annotations}``: id is the warehouse's response_id, so the Turn can be traced back."""
    c = kit.conversation(row)
    if dropped is not None:
        dropped.update(c.left_out)
    if not c.messages:
        return None
    model = row["inference_model"]
    messages = []
    for m in c.messages:
        role = ROLES.get(m["role"], m["role"])
        if dropped is not None:
            dropped.update({"tool call": len(m.get("tool_calls") or ()), "media part": len(kit.media_of(m))})
        if kit.text_of(m) is None:  # a tool-call message: its calls are counted, nothing else is left
            continue
        message = {"role": role, "content": {"text": kit.text_of(m)},
                   "source_id": (model or "assistant") if role == "assistant" else role}
        if role == "assistant" and model:
            message["model_parameters"] = {"model": model}
        message["annotations"] = []
        messages.append(message)
    return {"id": row["response_id"], "messages": messages, "annotations": []}
