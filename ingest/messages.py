"""OpenAI-shaped chat messages into ``turns`` rows: helpers the format packages share.

Hugging Face chat datasets (TRL's ``messages``, ``prompt``, ``completion``, ``chosen``,
``rejected``), OpenAI chat-completions requests and the messages of their answers all
write a message the same way: ``{role, content, ...}``, where

* ``content`` is a string, a list of typed parts (``{type: text, text}``,
  ``{type: image_url, image_url: {url}}``, ``{type: image}``, ...) or null (an assistant
  message that only calls tools): a list is kept as written in ``content_parts``, its text
  parts joined by a newline in ``content``;
* ``tool_calls`` (an assistant's calls, ``[{id, type, function: {name, arguments}}]``) is kept
  as written and summed up in ``has_tool_calls`` and ``tool_names``; a tool's reply gives
  ``tool_call_id``, and its ``name`` ``tool_name``;
* ``reasoning_content`` (Hugging Face chat templates, DeepSeek, older vLLM), or where a writer
  names it otherwise ``reasoning`` (vLLM) or ``thinking`` (gpt-oss templates), is
  ``reasoning_content``; the first of them that holds text, the others stay in ``extra``;
* every other key (``name`` of a user, ``refusal``, ``weight``, ...) is kept in ``extra``.

Any other ``content`` (an object, a number) is not this shape: the record is quarantined
saying what a message holds (a Scale message's ``content`` is an object, for instance).
"""

from __future__ import annotations

from typing import Any

from warehouse.formatkit.records import RecordContext, RecordError

from .fields import Fields, as_fields, json_type, preview

#: roles whose message is a tool's reply: their ``name`` is the tool's
TOOL_ROLES = ("tool", "function", "ipython")
#: where writers keep a message's reasoning, in the order they are taken
REASONING_KEYS = ("reasoning_content", "reasoning", "thinking")
#: what a message of this shape is, for messages that say so
SHAPE = "an OpenAI / Hugging Face chat message {role, content: string, list of parts or null, tool_calls, ...}"


def message_turns(items: Any, sub: str, start: int, owner: str | None, ctx: RecordContext, skip: int = 0) -> list[dict]:
    """``turns`` rows of the messages at ``sub`` (from the ``skip``-th on), numbered from ``start``."""
    if not isinstance(items, list):
        raise RecordError(f"{sub.lstrip('.')}: expected a list of messages {{role, content}}, got {json_type(items)} "
                          f"{preview(items)}", sub_locator=sub)
    rows = []
    for i in range(skip, len(items)):
        at = f"{sub}[{i}]"
        rows.append(turn_row(as_fields(items[i], "message", at), start + i - skip, ctx.locate(at), owner))
    return rows


def turn_row(m: Fields, index: int, locator: str, response_id: str | None, model: str | None = None) -> dict:
    """The ``turns`` row of one message (``m``: its fields, ``m.sub`` its place in the record)."""
    role = m.raw("role")
    if not isinstance(role, str):
        found = "missing" if role is None else f"expected a string, got {json_type(role)} {preview(role)}"
        raise RecordError(f"role: {found}; every message needs one (system, user, assistant, tool)",
                          sub_locator=m.sub + ".role")
    content, parts = _content(m)
    calls = m.raw("tool_calls")
    if calls is not None and not isinstance(calls, list):
        raise RecordError(f"tool_calls: expected a list, got {json_type(calls)} {preview(calls)}",
                          sub_locator=m.sub + ".tool_calls")
    names = [tool_name(call, f"{m.sub}.tool_calls[{i}]") for i, call in enumerate(calls or ())]
    return {
        "response_id": response_id,
        "turn_index": index,
        "role": role,
        "content": content,
        "content_parts": parts,
        "reasoning_content": _reasoning(m),
        "model": model,
        "tool_calls": calls,
        "has_tool_calls": bool(calls),
        "tool_names": [n for n in names if n is not None] or None,
        "tool_call_id": m.text("tool_call_id"),
        "tool_name": m.text("name") if role in TOOL_ROLES else None,
        "source_locator": locator,
        "extra": m.rest(),
    }


def _content(m: Fields) -> tuple[str | None, list | None]:
    content = m.raw("content")
    if content is None or isinstance(content, str):
        return content, None
    if isinstance(content, list):
        for i, part in enumerate(content):
            if not isinstance(part, dict):
                raise RecordError(f"content[{i}]: expected a content part {{type, ...}}, got {json_type(part)} "
                                  f"{preview(part)}", sub_locator=f"{m.sub}.content[{i}]")
        texts = [p["text"] for p in content if p.get("type") == "text" and isinstance(p.get("text"), str)]
        return ("\n".join(texts) if texts else None), content
    raise RecordError(f"content: expected a string, a list of content parts or null ({SHAPE}), got "
                      f"{json_type(content)} {preview(content)}", sub_locator=m.sub + ".content")


def _reasoning(m: Fields) -> str | None:
    """The first of ``REASONING_KEYS`` that holds text; the others are left for ``extra``."""
    for key in REASONING_KEYS:
        value = m.obj.get(key)
        if isinstance(value, str):
            return m.text(key)
    if m.obj.get("reasoning_content") is not None:
        return m.text("reasoning_content")  # not text: says so
    return None


def tool_name(call: Any, sub: str) -> str | None:
    """The function name of a tool call (``{function: {name}}``), None when it names none."""
    fn = call.get("function") if isinstance(call, dict) else None
    name = fn.get("name") if isinstance(fn, dict) else None
    if name is not None and not isinstance(name, str):
        raise RecordError(f"name: expected a string, got {json_type(name)} {preview(name)}", sub_locator=sub + ".function.name")
    return name


def exchange(turns: list[dict], first_answer: int = 0) -> dict:
    """``prompt``, ``response`` and ``system_prompt`` of a conversation (its turns rows, in order).

    The answer is the last assistant message from ``first_answer`` on (the completion's, when
    the turns before it are the prompt; NULL without one; an empty one is ``""``, an answer of
    nothing); the prompt the last user message before it (or the last user message when nothing
    answered); the system prompt the system and developer messages before it, joined by a blank
    line. Earlier exchanges stay in ``turns``.
    """
    answer = next((i for i in range(len(turns) - 1, first_answer - 1, -1) if turns[i]["role"] == "assistant"), None)
    before = turns if answer is None else turns[:answer]
    users = [t["content"] for t in before if t["role"] == "user"]
    systems = [t["content"] for t in before if t["role"] in ("system", "developer") and t["content"] is not None]
    return {
        "prompt": users[-1] if users else None,
        "response": None if answer is None else turns[answer]["content"],
        "system_prompt": "\n\n".join(systems) if systems else None,
    }
