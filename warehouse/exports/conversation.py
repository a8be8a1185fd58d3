"""The conversation of a response: one rule for every export that writes conversations.

A record's **messages** are its ``turns`` in source order (``turn_index``; the rows
of one message's parts share it), with each answer that is not a message itself
(``responses.answers_turn``: an answer given as an annotation) placed right after the
message it answers. The **conversation of a response** is that sequence up to and
including the response's own final message:

* its final message is the last assistant message it owns (``turns.response_id``),
  or its answer placed after ``answers_turn``;
* the other candidates' answers in the same run of messages other responses own
  (the alternatives to its prompt: ``[user, model_1, model_2]``, several answers
  to one prompt, a preference row's chosen completion before its rejected one)
  are left out;
* from an earlier run of alternatives, the ones by the response's model are kept
  when there are any (dtlpy's ``to_messages(model_name=...)``), else all of them;
* a record with no messages (a prompt and a response) gives system prompt, user prompt, answer.

Messages come out in OpenAI's chat shape: ``{role, content}`` with ``content`` a
string, or a list of parts (``text``, ``image_url``) when a message has media;
an assistant message keeps its ``tool_calls`` (``content`` may then be null); a
``tool`` message its ``tool_call_id``. What that shape cannot hold is left out
and counted (``Conversation.left_out``): a tool message that answers no earlier
tool call (OpenAI rejects it), a media part other than an image, a role OpenAI
has no word for. A content part's keys written null are left out (Arrow-typed writers,
``datasets``' among them, give every part every key). docs/export.md#conversations
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

#: what each turn needs to be placed and written, as a DuckDB struct of the turn ``c``
TURN_FIELDS = (
    "{'turn_index': c.turn_index, 'part_index': c.part_index, 'role': c.role, 'content': c.content, "
    "'content_parts': c.content_parts, 'mimetype': c.mimetype, 'content_ref': c.content_ref, "
    "'tool_calls': c.tool_calls, 'tool_call_id': c.tool_call_id, 'response_id': c.response_id, 'model': c.model}"
)
#: the answers of a record that are not messages (placed after ``answers_turn``), as a struct of the response ``c``
ANSWER_FIELDS = (
    "{'response_id': c.response_id, 'answers_turn': c.answers_turn, 'response': c.response, "
    "'inference_model': c.inference_model, 'candidate_index': c.candidate_index}"
)

#: source roles in OpenAI's chat fine-tuning words (it has no ``developer``; ``function`` is its old ``tool``)
ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant",
         "tool": "tool", "function": "tool"}
#: content parts OpenAI's chat fine-tuning takes: text, and images in user messages
PART_TYPES = ("text", "image_url")


@dataclass
class Conversation:
    messages: list[dict]  # OpenAI chat messages, the answer last when ``answered``
    answered: bool  # the response has answer text: the last message is it
    left_out: Counter = field(default_factory=Counter)  # what the shape could not hold, by kind
    owners: list[str | None] = field(default_factory=list)  # per message: the response it is (turns.response_id)


@dataclass
class _Message:
    role: str | None  # None: a role OpenAI has no word for (the message is left out)
    owner: str | None  # the response the message is (or belongs to); None for a shared message
    model: str | None
    content: Any = None  # a string, a list of parts, or None
    tool_calls: list | None = None
    tool_call_id: str | None = None
    dropped: Counter = field(default_factory=Counter)  # what of it the shape cannot hold, by kind


def conversation(row: dict) -> Conversation:
    """The conversation of one response.

    ``row``: ``response_id``, ``response``, ``prompt``, ``system_prompt``,
    ``inference_model``, ``answers_turn``, ``turns`` (every turn of its record, as
    ``TURN_FIELDS``) and ``answers`` (its record's answers that are not messages,
    as ``ANSWER_FIELDS``). Without answer text the conversation is the record's
    messages that lead to the response (or its shared and own ones), unanswered.
    """
    left: Counter = Counter()
    me = row["response_id"]
    sequence = _record_messages(row.get("turns") or (), row.get("answers") or ())
    if row.get("answers_turn") is not None and not any(m.owner == me and m.role == "assistant" for m in sequence):
        sequence.append(_Message("assistant", me, row.get("inference_model"), row.get("response")))  # not staged
    final = next((i for i in range(len(sequence) - 1, -1, -1)
                  if sequence[i].owner == me and sequence[i].role == "assistant"), None)
    answered = bool(row.get("response"))
    if final is None:  # the answer is no message: the record's shared and own messages, then the answer
        messages = [m for m in sequence if m.owner in (None, me)]
        if row.get("response") is not None:  # an empty answer is an answer, with nothing (as a turn would be)
            messages.append(_Message("assistant", me, row.get("inference_model"), row["response"]))
    else:
        messages = _alternatives_left_out(sequence[: final + 1], me, row.get("inference_model"))
        if not _has_something(messages[-1]):  # a message known by its tokens only: its text is the response's
            messages[-1].content = row.get("response")
    for m in messages:  # what the conversation held that the shape cannot: counted, then left out
        left.update(m.dropped)
    out, owners = _paired([m for m in messages if m.role is not None and _has_something(m)], left)
    if not any(m["role"] == "user" for m in out) and row.get("prompt"):
        at = next((i for i, m in enumerate(out) if m["role"] != "system"), len(out))
        out.insert(at, {"role": "user", "content": row["prompt"]})
        owners.insert(at, None)
    if row.get("system_prompt") and not any(m["role"] == "system" for m in out):
        out.insert(0, {"role": "system", "content": row["system_prompt"]})
        owners.insert(0, None)
    answered = answered and bool(out) and owners[-1] == me and out[-1]["role"] == "assistant"
    return Conversation(out, answered, left, owners)


def text_of(message: dict) -> str | None:
    """A message's text: its string content, or its text parts joined by a newline."""
    content = message.get("content")
    if content is None or isinstance(content, str):
        return content
    texts = [p["text"] for p in content if p.get("type") == "text"]
    return "\n".join(texts) if texts else None


def media_of(message: dict) -> list[dict]:
    """A message's parts that are not text (images, ...)."""
    content = message.get("content")
    return [p for p in content if p.get("type") != "text"] if isinstance(content, list) else []


# --- the record's messages -------------------------------------------------------------------------------


def _record_messages(turns, answers) -> list[_Message]:
    groups: dict[int, list[dict]] = {}
    for t in sorted(turns, key=lambda t: (t["turn_index"], -1 if t.get("part_index") is None else t["part_index"])):
        groups.setdefault(t["turn_index"], []).append(t)
    after: dict[int | None, list[dict]] = {}
    for a in sorted(answers, key=lambda a: (a.get("candidate_index") or 0)):
        after.setdefault(a["answers_turn"] if a["answers_turn"] in groups else None, []).append(a)
    sequence = []
    for index, rows in groups.items():
        sequence.append(_message(rows))
        sequence += [_Message("assistant", a["response_id"], a.get("inference_model"), a.get("response"))
                     for a in after.get(index, ())]
    sequence += [_Message("assistant", a["response_id"], a.get("inference_model"), a.get("response"))
                 for a in after.get(None, ())]
    return sequence


def _message(rows: list[dict]) -> _Message:
    first = rows[0]
    role = ROLES.get(first["role"] or "")
    m = _Message(role, first.get("response_id"), first.get("model"), tool_call_id=first.get("tool_call_id"))
    left = m.dropped
    if role is None:
        left[f"message with role {first['role']!r} (no OpenAI role)"] += 1
        return m
    m.tool_calls = [_call(c) for c in _json(first.get("tool_calls")) or () if isinstance(c, dict)] or None
    if len(rows) == 1 and rows[0].get("mimetype") is None:
        parts = _json(first.get("content_parts"))
        m.content = first.get("content") if parts is None else _kept_parts(parts, left)
    else:  # one row per part (a multimodal prompt): text parts and image references
        m.content = _parts(rows, left)
    if isinstance(m.content, list) and role != "user":  # only a user message may hold images
        media = [p for p in m.content if p.get("type") != "text"]
        if media:
            left[f"image part of a {role} message (only user messages hold images)"] += len(media)
            m.content = _simplest([p for p in m.content if p.get("type") == "text"])
    return m


def _parts(rows: list[dict], left: Counter) -> str | list | None:
    parts: list[dict] = []
    for r in rows:
        mimetype = r.get("mimetype") or ""
        if r.get("content") is not None:
            parts.append({"type": "text", "text": r["content"]})
        elif r.get("content_ref") is not None and mimetype.startswith("image"):
            parts.append({"type": "image_url", "image_url": {"url": r["content_ref"]}})
        elif r.get("content_ref") is not None:
            left[f"{mimetype} part (OpenAI's chat messages take text and images)"] += 1
    return _simplest(parts)


def _kept_parts(parts: Any, left: Counter) -> str | list | None:
    kept = []
    for p in parts if isinstance(parts, list) else ():
        kind = p.get("type") if isinstance(p, dict) else None
        if kind in PART_TYPES:
            # a key written null is no key (Arrow's struct types, hence datasets' writers, give every part every key)
            kept.append({k: v for k, v in p.items() if v is not None})
        else:
            left[f"content part of type {kind!r} (not an OpenAI chat part)"] += 1
    return _simplest(kept)


def _simplest(parts: list[dict]) -> str | list | None:
    """Text parts alone are one string (joined by a newline, as ``responses.prompt``); media keep the list."""
    if not parts:
        return None
    if all(p.get("type") == "text" for p in parts):
        return "\n".join(p["text"] for p in parts)
    return parts


def _call(call: dict) -> dict:
    """A tool call in OpenAI's shape: ``{id, type: function, function: {name, arguments}}``, arguments as text."""
    fn = call.get("function") if isinstance(call.get("function"), dict) else {}
    arguments = fn.get("arguments")
    if arguments is not None and not isinstance(arguments, str):
        arguments = json.dumps(arguments, ensure_ascii=False)
    return {"id": call.get("id"), "type": "function", "function": {"name": fn.get("name"), "arguments": arguments or ""}}


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


# --- the response's conversation in it --------------------------------------------------------------------


def _alternatives_left_out(messages: list[_Message], me: str, model: str | None) -> list[_Message]:
    """Drop the other candidates of the response's own run; from earlier runs of alternatives keep its model's."""
    # runs of consecutive messages owned by other responses: their answers (an alternative answer may be
    # several messages: a tool call, the tool's reply, the answer; a preference row's chosen completion)
    runs: list[list[int]] = []
    for i, m in enumerate(messages):
        alternative = m.owner not in (None, me)
        if alternative and runs and runs[-1][-1] == i - 1:
            runs[-1].append(i)
        elif alternative:
            runs.append([i])
    dropped: set[int] = set()
    last = len(messages) - 1
    for run in runs:
        if run[-1] == last - 1 or (run[-1] < last and _reaches(messages, run[-1] + 1, last, me)):
            dropped.update(run)  # alternatives to the response itself
        elif len({messages[i].owner for i in run}) > 1 and model is not None:
            same = [i for i in run if messages[i].model == model]
            if same:
                dropped.update(i for i in run if i not in same)
    return [m for i, m in enumerate(messages) if i not in dropped]


def _reaches(messages: list[_Message], start: int, last: int, me: str) -> bool:
    """Whether only the response's own messages lie between ``start`` and its final message."""
    return all(messages[i].owner == me for i in range(start, last + 1))


def _has_something(m: _Message) -> bool:
    return m.content is not None or bool(m.tool_calls)


def _paired(messages: list[_Message], left: Counter) -> tuple[list[dict], list[str | None]]:
    """OpenAI's dicts and their owners; a tool message that answers no earlier tool call is left out
    (OpenAI rejects it)."""
    calls: set[str] = set()
    out, owners = [], []
    for m in messages:
        d: dict[str, Any] = {"role": m.role, "content": m.content}
        if m.role == "assistant" and m.tool_calls:
            d["tool_calls"] = m.tool_calls
            calls.update(c.get("id") for c in m.tool_calls if isinstance(c, dict))
        if m.role == "tool":
            if m.tool_call_id is None or m.tool_call_id not in calls:
                left["tool message answering no earlier tool call"] += 1
                continue
            d["tool_call_id"] = m.tool_call_id
        if d["content"] is None and "tool_calls" not in d:
            continue
        out.append(d)
        owners.append(m.owner)
    return out, owners
