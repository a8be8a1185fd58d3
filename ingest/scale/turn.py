"""One Scale turn (or a lone message) into responses, turns and the rows of its parts.

A turn is ``{id, messages, annotations, rubrics}``. Every message is a ``turns``
row; every assistant message is a candidate, i.e. a ``responses`` row. A run of
consecutive assistant messages holds alternatives to one prompt (RLHF), so a
candidate's prompt is read from the messages before its run: ``prompt`` is the
last user message there, ``system_prompt`` the system messages there. A turn
without an assistant message still gives one ``responses`` row (response NULL).

A lone Message object (Scale's archetype pages publish them on their own) is read
as a turn of that one message.
"""

from __future__ import annotations

from typing import Any

from warehouse.formatkit.records import Mapped, Record, RecordContext, RecordError

from ..fields import Fields, children, expect_object, id_text
from .annotations import Target, map_annotations
from .content import map_content
from .rubrics import map_rubric_evaluations, map_rubrics

CANDIDATE_ROLE = "assistant"


def map_turn(record: Record, ctx: RecordContext) -> Mapped:
    obj = expect_object(record.value, "Scale turn")
    if "messages" in obj:
        turn: Fields | None = Fields(obj)
        messages = turn.list("messages")
    elif "role" in obj or "content" in obj:
        turn, messages = None, None
    else:
        keys = ", ".join(sorted(obj)[:8]) or "none"
        raise RecordError(
            f"not a Scale record: no messages, role or content key (keys: {keys}); expected a Turn "
            "{id, messages, annotations}, a Message {role, content, source_id}, a Thread {turns} or a Task "
            "{threads}; pass --format to read it as another format"
        )
    _check_scale_messages(obj if turn is None else messages)
    delivery, delivery_extra = _delivery(record.envelope or {})
    thread_id = delivery.get("thread_id")

    # a lone Message is the whole record
    msgs = list(children(messages, ".messages", "message", ctx)) if turn else [(0, Fields(obj), ctx.locate())]
    roles = [_role(m) for _, m, _ in msgs]
    candidates = [i for i, role in enumerate(roles) if role == CANDIDATE_ROLE]
    ids = {i: ctx.row_id(msgs[i][1].sub) for i in candidates}
    if len(candidates) > 1:
        only = None  # a turn-level annotation is about the whole turn, not one candidate
    else:
        only = ids[candidates[0]] if candidates else ctx.row_id()

    out: Mapped = {}
    turn_target = Target("turn", "", only, None, thread_id)
    maxima = map_rubrics(turn.list("rubrics"), turn_target, ctx, out) if turn else []
    rows = [_message(m, locator, Target("message", m.sub, ids.get(i), i, thread_id), maxima, ctx, out)
            for i, m, locator in msgs]
    if turn:
        map_annotations(turn.raw("annotations"), ".annotations", turn_target, ctx, out)

    base = dict(delivery, turn_id=turn.id("id") if turn else None)
    extra = dict(turn.rest() or {}) if turn else {}
    extra.update(delivery_extra)
    base["extra"] = extra or None
    out["responses"] = _responses(rows, candidates, ids, base, ctx)
    out["turns"] = rows
    return out


def _check_scale_messages(messages: Any) -> None:
    """A turn (or a lone message) is Scale's only when a message says so: Scale writes a ``source_id`` on
    every message and its ``content`` as an object ``{text, ...}``. Messages with neither are another
    format's (an OpenAI / Hugging Face chat row ``{"messages": [{"role", "content": "..."}]}``), which read
    as Scale would be a silent misread: the record is refused, saying what was expected."""
    items = [messages] if isinstance(messages, dict) else messages if isinstance(messages, list) else []
    found = [m for m in items if isinstance(m, dict)]
    if found and not any("source_id" in m or isinstance(m.get("content"), dict) for m in found):
        raise RecordError(
            "not a Scale turn: no message has a source_id or a content object {text, ...} (Scale writes both); "
            "expected a Turn {id, messages: [{role, content: {text}, source_id}]}. A chat row of "
            "{role, content: string} messages is a Hugging Face / OpenAI chat row: read it with --format hf_chat"
        )


def _role(m: Fields) -> str:
    role = m.text("role")
    if role is None:
        raise RecordError("message without a role: expected system, user, assistant or function", sub_locator=m.sub + ".role")
    return role


def _message(m: Fields, locator: str, target: Target, maxima: list, ctx: RecordContext, out: Mapped) -> dict:
    content = map_content(m.raw("content"), m.sub + ".content", target, ctx, out)
    p = Fields(m.object("model_parameters") or {}, m.sub + ".model_parameters")
    map_annotations(m.raw("annotations"), m.sub + ".annotations", target, ctx, out)
    evaluations_left = map_rubric_evaluations(
        m.list("rubric_evaluations"), m.sub + ".rubric_evaluations", target, maxima, ctx, out
    )
    row = {
        "response_id": target.response_id,
        "turn_index": target.turn_index,
        "role": m.text("role"),
        "content": content.text,
        "reasoning_content": content.reasoning,
        "source_id": m.id("source_id"),
        "model": p.text("model"),
        "temperature": p.float("temperature"),
        "max_completion_tokens": p.int("max_completion_tokens"),
        "top_p": p.float("top_p"),
        "top_k": p.int("top_k"),
        "source_locator": locator,
    }
    extra = m.rest() or {}
    if content.extra:
        extra["content"] = content.extra
    if p.rest():
        extra["model_parameters"] = p.rest()
    if evaluations_left:
        extra["rubric_evaluations"] = evaluations_left
    row["extra"] = extra or None
    return row


def _responses(rows: list[dict], candidates: list[int], ids: dict, base: dict, ctx: RecordContext) -> list[dict]:
    out = []
    for n, i in enumerate(candidates):
        start = i
        while start > 0 and rows[start - 1]["role"] == CANDIDATE_ROLE:
            start -= 1
        out.append(
            {
                **base,
                "response_id": ids[i],
                "candidate_index": n,
                **_prompt(rows[:start]),
                "response": rows[i]["content"],
                "inference_model": rows[i]["model"],
                "source_id": rows[i]["source_id"],
                "source_locator": rows[i]["source_locator"],
            }
        )
    if not candidates:
        out.append({**base, "response_id": ctx.row_id(), **_prompt(rows)})
    return out


def _prompt(before: list[dict]) -> dict:
    users = [r["content"] for r in before if r["role"] == "user"]
    systems = [r["content"] for r in before if r["role"] == "system" and r["content"] is not None]
    return {"prompt": users[-1] if users else None, "system_prompt": "\n\n".join(systems) if systems else None}


def _delivery(envelope: dict) -> tuple[dict, dict]:
    """Columns and extra keys a turn takes from the Task / Thread it was delivered in."""
    columns: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    task = envelope.get("task")
    if task is not None:
        columns["task_id"] = id_text(task.get("task_id"), "task_id")
        left = {k: v for k, v in task.items() if k != "task_id"}
        if left:
            extra["task"] = left
    thread = envelope.get("thread")
    if thread is not None:
        columns["thread_id"] = id_text(thread.get("id"), "thread id")
        columns["thread_turn_index"] = envelope.get("thread_turn_index")
        left = {k: v for k, v in thread.items() if k != "id"}
        if left:
            extra["thread"] = left
    if envelope.get("delivery"):
        extra["delivery"] = envelope["delivery"]
    return columns, extra
