"""A sample's chat messages into ``turns`` rows, and the exchange they hold.

Inspect's messages are ``{id, role, content, source, model, tool_calls, tool_call_id,
function, error, metadata, ...}``: ``content`` is a string or a list of parts (``text``,
``reasoning``, ``image``, ``audio``, ``video``, ``document``, ``data``, ...). Every message is
a row, every part kept:

* ``content``: the string, or the text parts joined by a newline;
* ``content_parts``: the list of parts, in OpenAI's shape where it has one (an ``image``
  part is ``{type: image_url, image_url: {url, detail}}``), the others as written;
* ``reasoning_content``: the reasoning parts' text, joined by a blank line (the parts stay
  in ``content_parts``, with their ``signature`` and ``redacted``);
* ``tool_calls`` in OpenAI's shape ``{id, type, function: {name, arguments}}`` (Inspect writes
  ``{id, function: name, arguments}``), with Inspect's other keys (``parse_error``, ``view``, ...);
  a ``tool`` message's ``tool_call_id`` and ``function`` are ``tool_call_id`` and ``tool_name``.

Inspect stores media once per sample, in ``attachments``, and writes ``attachment://<hash>``
in its place: a part's reference is resolved, so the turn holds the image (the attachments
stay in ``responses.extra.attachments``, where the transcript's references point).
"""

from __future__ import annotations

from typing import Any

from warehouse.formatkit.records import RecordContext, RecordError

from ..fields import Fields, children, json_type, preview

ATTACHMENT = "attachment://"


def turn_rows(messages: list | None, response_id: str, attachments: dict, ctx: RecordContext) -> list[dict]:
    rows = []
    for i, m, locator in children(messages, ".messages", "message", ctx):
        role = m.text("role")
        if role is None:
            raise RecordError("role: missing; every message has one (system, user, assistant, tool)", sub_locator=m.sub + ".role")
        content, parts, reasoning = _content(m, attachments)
        calls = m.list("tool_calls")
        tool_calls = [_call(c, f"{m.sub}.tool_calls[{k}]") for k, c in enumerate(calls or ())]
        names = [c["function"].get("name") for c in tool_calls if isinstance(c.get("function"), dict)]
        rows.append({
            "response_id": response_id,
            "turn_index": i,
            "role": role,
            "content": content,
            "content_parts": parts,
            "reasoning_content": reasoning,
            "has_thinking": reasoning is not None,
            "message_id": m.id("id"),
            "source_id": m.text("source"),
            "model": m.text("model"),
            "tool_calls": tool_calls if calls is not None else None,
            "has_tool_calls": bool(tool_calls),
            "tool_names": [n for n in names if isinstance(n, str)] or None,
            # a user message's tool_call_id is a list (the calls a computer-use screenshot answers): kept in extra
            "tool_call_id": m.text("tool_call_id") if role == "tool" else None,
            "tool_name": m.text("function") if role == "tool" else None,
            "source_locator": locator,
            "extra": m.rest(),
        })
    return rows


def exchange(turns: list[dict]) -> tuple[str | None, str | None, str | None]:
    """(prompt, response, system prompt): the last assistant message, the last user message before it
    and the system messages before it. Without an assistant message (a sample that failed before the
    model answered) the response is NULL and the prompt is the last user message. An answer with no
    text (tool calls only) is ``""``: the model answered, with no text."""
    answer = next((i for i in range(len(turns) - 1, -1, -1) if turns[i]["role"] == "assistant"), None)
    before = turns if answer is None else turns[:answer]
    prompt = next((t["content"] for t in reversed(before) if t["role"] == "user"), None)
    system = [t["content"] for t in before if t["role"] == "system" and t["content"]]
    response = None if answer is None else (turns[answer]["content"] or "")
    return prompt, response, "\n".join(system) if system else None


def _content(m: Fields, attachments: dict) -> tuple[str | None, list | None, str | None]:
    """(content, content_parts, reasoning_content) of a message."""
    content = m.raw("content")
    if content is None or isinstance(content, str):
        return resolve(content, attachments), None, None
    if not isinstance(content, list):
        raise RecordError(f"content: expected a string or a list of parts, got {json_type(content)} {preview(content)}",
                          sub_locator=m.sub + ".content")
    texts, thoughts, parts = [], [], []
    for _, p, _ in children(content, m.sub + ".content", "content part"):
        kind = p.obj.get("type")
        if kind == "text" and isinstance(p.obj.get("text"), str):
            texts.append(p.obj["text"])
        elif kind == "reasoning" and isinstance(p.obj.get("reasoning"), str):
            thoughts.append(p.obj["reasoning"])
        parts.append(_part(p.obj, attachments))
    return ("\n".join(texts) if texts else None), parts, ("\n\n".join(thoughts) if thoughts else None)


def _part(part: dict, attachments: dict) -> dict:
    """A content part, its attachment references resolved; an image in OpenAI's shape."""
    out = {k: resolve(v, attachments) if isinstance(v, str) else v for k, v in part.items()}
    if part.get("type") == "image" and isinstance(out.get("image"), str):
        image = {"url": out.pop("image")}
        if "detail" in out:
            image["detail"] = out.pop("detail")
        out.pop("type")
        out = {"type": "image_url", "image_url": image, **out}
    return out


def _call(call: Any, sub: str) -> dict:
    """A tool call in OpenAI's shape, Inspect's other keys kept beside."""
    if not isinstance(call, dict):
        raise RecordError(f"expected a JSON object for the tool call, got {json_type(call)} {preview(call)}", sub_locator=sub)
    if isinstance(call.get("function"), dict):  # already OpenAI's shape
        return call
    name = call.get("function")
    if name is not None and not isinstance(name, str):
        raise RecordError(f"function: expected the tool's name, got {json_type(name)} {preview(name)}", sub_locator=sub + ".function")
    rest = {k: v for k, v in call.items() if k not in ("id", "type", "function", "arguments")}
    return {"id": call.get("id"), "type": call.get("type", "function"),
            "function": {"name": name, "arguments": call.get("arguments")}, **rest}


def resolve(text: str | None, attachments: dict) -> str | None:
    """``attachment://<hash>`` as the attachment it names (as written when the sample lacks it)."""
    if text is not None and text.startswith(ATTACHMENT):
        found = attachments.get(text[len(ATTACHMENT):])
        if isinstance(found, str):
            return found
    return text
