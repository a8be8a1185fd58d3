"""Warehouse rows back into Hugging Face chat rows (every format's ingest mapping in reverse is its ``unmap``).

``source_row`` rebuilds a row the hf_chat ingest read, in the shape it came in (``chat_shape``):
``messages``, ShareGPT ``conversations``, ``prompt``/``completion`` (or a prompt alone) and
``prompt``/``chosen``/``rejected``, conversational or plain text. Each message gets back its
content (its parts, when it had a list), reasoning, tool calls and the keys kept in ``extra``; the
row its other keys, and a preference row the scores the ingest read as evaluations. Ingested
again, the row gives the same rows.

Responses of other formats are written as TRL's conversational shapes instead: ``messages_row``
(their conversation, ``kit.conversation``: OpenAI's chat shape, the rule every export follows) and
``preference_row`` for a ``dpo_pairs`` pair (the messages both conversations open with are the
prompt). Their messages are ``{role, content}``, ``content`` their text (media parts are counted,
not written), with ``tool_calls`` and ``tool_call_id`` when the export holds tool calls.
docs/formats/hf_chat.md#export
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pyarrow as pa

from warehouse.exports import kit

from .detect import MESSAGES, PREFERENCE, PROMPT_ONLY, SHAREGPT
from .row import SHAREGPT_ROLES, SIDES, common_opening

#: OpenAI's roles in ShareGPT's words (the inverse of the ingest's)
SHAREGPT_SPEAKERS = {role: speaker for speaker, role in SHAREGPT_ROLES.items()}
#: a message's fields that are written only when set (the ingest reads a missing one and a null one alike)
OPTIONAL = ("reasoning_content", "tool_calls", "tool_call_id")


# --- rows the hf_chat ingest read -----------------------------------------------------------------------------


def source_row(r: dict) -> tuple[dict, bool]:
    """(the row a record came from, whether it is whole): ``r`` holds the record's selected ``responses``
    (by candidate), its ``turns`` and its ``scores``. A preference row one of whose two answers is not
    selected is not whole: it comes back as its selected answer's prompt and completion."""
    responses = sorted(r["responses"], key=lambda x: x["candidate_index"])
    turns = sorted(r["turns"] or (), key=lambda t: t["turn_index"])
    shared = [t for t in turns if t["response_id"] is None]
    own = {x["response_id"]: [t for t in turns if t["response_id"] == x["response_id"]] for x in responses}
    shape = r["chat_shape"]
    whole = shape != PREFERENCE or len(responses) == len(SIDES)
    if shape == MESSAGES:
        row = {"messages": [_message(t) for t in turns]}
    elif shape == SHAREGPT:
        row = _sharegpt(turns, responses[0]["system_prompt"])
    elif whole and shape == PREFERENCE:
        row = _preference(responses, shared, own, r["scores"] or ())
    else:  # prompt and completion, a prompt alone, or one answer of a preference row
        x = responses[0]
        if turns:
            row = {"prompt": [_message(t) for t in shared] or None}
            if shape != PROMPT_ONLY:
                row["completion"] = [_message(t) for t in own[x["response_id"]]] or None
        else:
            row = {"prompt": x["prompt"]} if shape == PROMPT_ONLY else {"prompt": x["prompt"], "completion": x["response"]}
    row.update(kit.json_value(r["extra"]) or {})
    return row, whole


def _message(t: dict) -> dict:
    parts = kit.json_value(t["content_parts"])
    m: dict[str, Any] = {"role": t["role"], "content": t["content"] if parts is None else parts}
    for key in OPTIONAL:
        if t[key] is not None:
            m[key] = kit.json_value(t[key]) if key == "tool_calls" else t[key]
    if t["tool_name"] is not None:
        m["name"] = t["tool_name"]
    m.update(kit.json_value(t["extra"]) or {})
    return m


def _sharegpt(turns: list[dict], system_prompt: str | None) -> dict:
    row: dict[str, Any] = {}
    if system_prompt is not None and not any(t["role"] in ("system", "developer") for t in turns):
        row["system"] = system_prompt  # read from beside the conversation (LLaMA-Factory's ShareGPT)
    row["conversations"] = [{"from": SHAREGPT_SPEAKERS.get(t["role"], t["role"]), "value": t["content"],
                             **(kit.json_value(t["extra"]) or {})} for t in turns]
    return row


def _preference(responses: list[dict], shared: list[dict], own: dict[str, list[dict]], scores) -> dict:
    ids = {side: x["response_id"] for side, x in zip(SIDES, responses)}
    row: dict[str, Any] = {}
    if not any(own.values()) and not shared:  # plain text
        if responses[0]["prompt"] is not None:
            row["prompt"] = responses[0]["prompt"]
        row.update({side: x["response"] for side, x in zip(SIDES, responses)})
    elif shared and shared[0]["source_locator"].endswith(".chosen[0]"):
        # TRL's implicit prompt: the messages both conversations open with were read from `chosen`
        row.update({side: [_message(t) for t in shared + own[ids[side]]] for side in SIDES})
    else:
        # an explicit prompt, possibly empty: none is read out of the conversations again
        row["prompt"] = [_message(t) for t in shared]
        row.update({side: [_message(t) for t in own[ids[side]]] for side in SIDES})
    for side in SIDES:
        score = next((e["score"] for e in scores if e["response_id"] == ids[side]), None)
        if score is not None:
            row[f"score_{side}"] = score
    return row


# --- responses of other formats ---------------------------------------------------------------------------------


def message_type(tools: bool) -> pa.DataType:
    """The Arrow type of a message: ``{role, content}``, and its tool fields when ``tools``."""
    fields = [("role", pa.string()), ("content", pa.string())]
    if tools:
        function = pa.struct([("name", pa.string()), ("arguments", pa.string())])
        call = pa.struct([("id", pa.string()), ("type", pa.string()), ("function", function)])
        fields += [("tool_calls", pa.list_(call)), ("tool_call_id", pa.string())]
    return pa.struct(fields)


def messages_row(c: kit.Conversation, tools: bool, left: Counter) -> dict:
    return {"messages": [_text_message(m, tools, left) for m in c.messages]}


def preference_row(chosen: kit.Conversation, rejected: kit.Conversation, tools: bool, left: Counter) -> dict:
    k = common_opening(chosen.messages, rejected.messages)
    return {"prompt": [_text_message(m, tools, left) for m in chosen.messages[:k]],
            "chosen": [_text_message(m, tools, left) for m in chosen.messages[k:]],
            "rejected": [_text_message(m, tools, left) for m in rejected.messages[k:]]}


def _text_message(m: dict, tools: bool, left: Counter) -> dict:
    """A conversation's message (OpenAI's shape) as a row's: its text; media parts are counted, not written."""
    media = kit.media_of(m)
    if media:
        left["media part (hf_chat messages hold text)"] += len(media)
    out = {"role": m["role"], "content": kit.text_of(m)}
    if tools:
        out["tool_calls"] = m.get("tool_calls")
        out["tool_call_id"] = m.get("tool_call_id")
    return out
