"""One Hugging Face chat row into ``responses``, ``turns`` and ``evaluations`` rows.

* ``messages`` and ShareGPT ``conversations``: one response, a turn per message, all of them
  the response's own (as an AfterImage row's);
* ``prompt``/``completion`` (and prompt-only): one response; the prompt's messages are the
  record's shared turns (``response_id`` NULL), the completion's the response's own, after
  them; plain text gives no turns (``prompt``, ``response``);
* ``prompt``/``chosen``/``rejected``: two responses of one record, the chosen (candidate 0) and
  the rejected (candidate 1), each with an ``evaluations`` row ``criterion = 'preference'``,
  ``label`` chosen or rejected (the ``dpo_pairs`` view pairs them); the prompt's messages are
  shared, each completion's messages its response's own. Without a prompt (TRL's implicit
  prompt) the messages both conversations open with are the prompt. ``score_chosen`` and
  ``score_rejected`` (UltraFeedback's) are ``evaluations`` rows ``criterion = 'score'``.

Every other key of the row is kept in ``extra`` (of each response of the row).
docs/formats/hf_chat.md
"""

from __future__ import annotations

from typing import Any

from warehouse.formatkit.records import Mapped, RecordContext, RecordError

from ..fields import Fields, children, expect_object, json_type, preview
from ..messages import exchange, message_turns
from .detect import MESSAGES, PREFERENCE, PROMPT_COMPLETION, SHAPES, SHAREGPT, shape_of

#: ``evaluations.criterion`` of the mark that pairs a preference row's two responses
PREFERENCE_CRITERION = "preference"
SIDES = ("chosen", "rejected")
#: ShareGPT's speakers in OpenAI's words; other ``from`` values are kept as the role
SHAREGPT_ROLES = {"human": "user", "gpt": "assistant"}


def map_row(value: Any, ctx: RecordContext) -> Mapped:
    obj = expect_object(value, "Hugging Face chat row")
    shape = shape_of(obj)
    if shape is None:
        keys = ", ".join(sorted(obj)[:8]) or "none"
        raise RecordError(f"not a Hugging Face chat row (keys: {keys}): expected {SHAPES}")
    if shape not in (PREFERENCE, MESSAGES, SHAREGPT, PROMPT_COMPLETION) and "response" in obj:
        raise RecordError("a `prompt` with a `response` is not a Hugging Face chat row (its answer is `completion`): "
                          f"expected {SHAPES}")
    f = Fields(obj)
    if shape == PREFERENCE:
        return _preference(f, ctx)
    if shape in (MESSAGES, SHAREGPT):
        rid = ctx.row_id()
        rows = _messages(f, rid, ctx) if shape == MESSAGES else _sharegpt(f, rid, ctx)
        row = {"response_id": rid, "candidate_index": 0, "chat_shape": shape, **exchange(rows)}
        if shape == SHAREGPT and row["system_prompt"] is None and isinstance(f.obj.get("system"), str):
            row["system_prompt"] = f.text("system")  # LLaMA-Factory's ShareGPT keeps it beside the conversation
        row["extra"] = f.rest()
        return _out([row], rows)
    return _prompt_completion(f, shape, ctx)


def _messages(f: Fields, owner: str, ctx: RecordContext) -> list[dict]:
    return message_turns(f.raw("messages"), ".messages", 0, owner, ctx)


def _sharegpt(f: Fields, owner: str, ctx: RecordContext) -> list[dict]:
    items = f.raw("conversations")
    if not isinstance(items, list):
        raise RecordError(f"conversations: expected a list of ShareGPT messages {{from, value}}, got {json_type(items)} "
                          f"{preview(items)}", sub_locator=".conversations")
    rows = []
    for i, m, locator in children(items, ".conversations", "ShareGPT message", ctx):
        speaker = m.raw("from")
        if not isinstance(speaker, str) or "value" not in m:
            keys = ", ".join(sorted(m.obj)[:8]) or "none"
            raise RecordError(f"a ShareGPT message needs `from` (human, gpt, system, ...) and `value`, got keys {keys}",
                              sub_locator=m.sub)
        rows.append({"response_id": owner, "turn_index": i, "role": SHAREGPT_ROLES.get(speaker, speaker),
                     "content": m.text("value"), "source_locator": locator, "extra": m.rest()})
    return rows


def _prompt_completion(f: Fields, shape: str, ctx: RecordContext) -> Mapped:
    prompt = f.raw("prompt")
    completion = f.raw("completion") if shape == PROMPT_COMPLETION else None
    rid = ctx.row_id()
    row: dict[str, Any] = {"response_id": rid, "candidate_index": 0, "chat_shape": shape}
    if isinstance(prompt, list) or isinstance(completion, list):
        _same_kind({"prompt": prompt, "completion": completion})
        shared = message_turns(prompt, ".prompt", 0, None, ctx) if prompt is not None else []
        own = message_turns(completion, ".completion", len(shared), rid, ctx) if completion is not None else []
        row.update(exchange(shared + own, first_answer=len(shared)))
    else:
        shared, own = [], []
        row.update(prompt=_text(prompt, "prompt"), response=_text(completion, "completion"), system_prompt=None)
    row["extra"] = f.rest()
    return _out([row], shared + own)


def _preference(f: Fields, ctx: RecordContext) -> Mapped:
    sides = {side: f.raw(side) for side in SIDES}
    prompt = f.raw("prompt")
    _same_kind({"prompt": prompt, **sides})
    ids = {side: ctx.row_id(f".{side}") for side in SIDES}
    conversational = isinstance(sides["chosen"], list)
    shared: list[dict] = []
    own: dict[str, list[dict]] = {}
    if conversational:
        if prompt is not None:
            shared, skip = message_turns(prompt, ".prompt", 0, None, ctx), 0
        else:  # the implicit prompt: the messages both conversations open with
            skip = common_opening(sides["chosen"], sides["rejected"])
            shared = message_turns(sides["chosen"][:skip], ".chosen", 0, None, ctx)
        start = len(shared)
        for side in SIDES:
            own[side] = message_turns(sides[side], f".{side}", start, ids[side], ctx, skip=skip)
            start += len(own[side])
    rows, evaluations = [], []
    for k, side in enumerate(SIDES):
        row: dict[str, Any] = {"response_id": ids[side], "candidate_index": k, "source_locator": ctx.locate(f".{side}"),
                               "chat_shape": PREFERENCE}
        if conversational:
            row.update(exchange(shared + own[side], first_answer=len(shared)))
        else:
            row.update(prompt=_text(prompt, "prompt"), response=_text(sides[side], side), system_prompt=None)
        rows.append(row)
        evaluations.append({"response_id": ids[side], "criterion": PREFERENCE_CRITERION, "label": side,
                            "source_locator": ctx.locate(f".{side}")})
        if f.obj.get(f"score_{side}") is not None:
            evaluations.append({"response_id": ids[side], "criterion": "score", "score": f.float(f"score_{side}"),
                                "source_locator": ctx.locate(f".score_{side}")})
    extra = f.rest()
    for row in rows:
        row["extra"] = extra
    out = _out(rows, shared + own.get("chosen", []) + own.get("rejected", []))
    out["evaluations"] = evaluations
    return out


def common_opening(chosen: list, rejected: list) -> int:
    """How many messages both conversations open with, leaving each at least one of its own: TRL's
    implicit prompt (and the prompt the export writes for a pair)."""
    k = 0
    while k < min(len(chosen), len(rejected)) - 1 and chosen[k] == rejected[k]:
        k += 1
    return k


def _same_kind(values: dict[str, Any]) -> None:
    """Conversational and plain text are not mixed in one row (TRL's rule); a missing value is neither."""
    kinds = {name: "a list of messages" if isinstance(v, list) else "text" for name, v in values.items() if v is not None}
    if len(set(kinds.values())) > 1:
        said = ", ".join(f"{name} is {kind}" for name, kind in kinds.items())
        raise RecordError(f"{said}: give them all as lists of messages (conversational) or all as text")


def _text(value: Any, key: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise RecordError(f"{key}: expected text or a list of messages {{role, content}}, got {json_type(value)} "
                      f"{preview(value)}", sub_locator=f".{key}")


def _out(responses: list[dict], turn_rows: list[dict]) -> Mapped:
    out: Mapped = {"responses": responses}
    if turn_rows:
        out["turns"] = turn_rows
    return out
