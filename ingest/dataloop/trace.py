"""An ``llm_trace`` document (dtlpy ``LLMTrace``): OpenAI-style messages into turns, one response.

One ``turns`` row per message. The ``responses`` row: ``response`` is the final
message when it comes from the assistant (NULL when the trace ends elsewhere,
e.g. a question not yet answered), ``prompt`` the last user message before it,
``system_prompt`` the system messages, ``inference_model`` / ``model_id`` the
final message's ``model_info`` (the Dataloop model entity, as for prompt items;
the provider's model name stays in ``turns.extra.completion_info.model``). Each
message's ``model_info.name`` is ``turns.model``; its ``model_info.model_id``
stays in ``turns.extra.model_info``, for every message, the final one included.

Tool calls: ``tool_calls`` as written (ids and arguments), summed up in
``has_tool_calls`` and ``tool_names``; a ``tool`` message's ``tool_call_id`` and
``name`` fill ``tool_call_id`` and ``tool_name``. List content (text and image
parts) is kept as written in ``content_parts``, its text parts joined by a newline
in ``content``; object or scalar content is kept verbatim in ``extra.content``.
"""

from __future__ import annotations

from typing import Any

from warehouse.formatkit.records import Mapped, RecordContext, RecordError

from ..fields import children, id_text, json_type, preview
from ..messages import tool_name
from . import detect
from .item import item_rows, merge_extra, read_document
from .platform import read_item
from .take import Taker

TOOL_ROLES = ("tool", "function")


def map_trace(doc: dict, item_json: Any, item_sub: str, ctx: RecordContext) -> Mapped:
    t, dltype = read_document(doc, detect.LLM_TRACE)
    messages = t.list("messages")
    if messages is None:
        raise RecordError("an llm_trace document needs a messages list; none found")
    item = read_item(item_json, item_sub, ctx, dltype) if item_json is not None else None
    columns, item_left = item_rows(item)
    response_id = ctx.row_id()
    turns = [_turn(m, i, locator, response_id)
             for i, m, locator in children(messages, ".messages", "message", ctx, Taker)]

    final = turns[-1] if turns and turns[-1]["role"] == "assistant" else None
    asked = turns[: len(turns) - 1] if final else turns
    users = [r for r in asked if r["role"] == "user"]
    system = [r["content"] for r in turns if r["role"] == "system" and r["content"]]
    row = dict(
        columns,
        dltype=dltype,
        response_id=response_id,
        candidate_index=0,
        prompt=users[-1]["content"] if users else None,
        response=final["content"] if final else None,
        system_prompt="\n".join(system) if system else None,
        inference_model=final["model"] if final else None,
        model_id=_model_id(messages[-1]) if final else None,
        extra=merge_extra(t.left(), item_left),
    )
    out: Mapped = {"responses": [row], "turns": turns} if turns else {"responses": [row]}
    if item is not None and item.annotations:
        # About the whole trace item, as a prompt item's non-answer annotations: joined on record_id.
        out["annotations"] = [a.row for a in item.annotations]
    return out


def _turn(m: Taker, index: int, locator: str, response_id: str) -> dict:
    sub = m.sub
    role = m.text("role")
    if role is None:
        raise RecordError(
            "message has no role: every llm_trace message needs one (user, assistant, system, tool)", sub_locator=sub
        )
    tool_calls = m.peek("tool_calls")
    if tool_calls is not None and not isinstance(tool_calls, list):
        raise RecordError(
            f"tool_calls: expected a list, got {json_type(tool_calls)} {preview(tool_calls)}", sub_locator=sub + ".tool_calls"
        )
    names = [tool_name(call, f"{sub}.tool_calls[{i}]") for i, call in enumerate(tool_calls or ())]
    content, parts = _content(m)
    row = {
        "response_id": response_id,
        "turn_index": index,
        "role": role,
        "content": content,
        "content_parts": parts,
        "reasoning_content": m.text("reasoning_content"),
        "model": m.text("model_info.name"),
        "tool_calls": m.raw("tool_calls") if tool_calls is not None else None,  # a null stays in extra, as written
        "has_tool_calls": bool(tool_calls),
        "tool_names": [n for n in names if n is not None] or None,
        "tool_call_id": m.text("tool_call_id"),
        "tool_name": m.text("name") if role in TOOL_ROLES else None,
        "source_locator": locator,
    }
    row["extra"] = m.left()
    return row


def _model_id(message: dict) -> str | None:
    """The Dataloop model entity of a message. Read, not taken: every message keeps its own
    ``model_info.model_id`` in ``turns.extra`` (the final one is also ``responses.model_id``)."""
    model_info = message.get("model_info")
    return id_text(model_info.get("model_id"), "model_id") if isinstance(model_info, dict) else None


def _content(m: Taker) -> tuple[str | None, list | None]:
    """(content, content_parts): a string is the content; a list of parts is kept as written,
    its text parts making the content."""
    content = m.peek("content")
    if content is None or isinstance(content, str):
        m.raw("content")
        return content, None
    if isinstance(content, list):
        parts = m.raw("content")
        texts = [p["text"] for p in parts if isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)]
        return ("\n".join(texts) if texts else None), parts
    return None, None  # an object or a scalar: kept verbatim in extra.content
