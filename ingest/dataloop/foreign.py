"""Responses of the other formats as Dataloop prompt items: a minimal, documented mapping.

One source record (an AfterImage line, a Scale turn, a trait-interp response, ...)
becomes one prompt item. Its prompt file holds the messages of its responses'
conversations (``kit.conversation``, the rule every export follows)
before their answers, one prompt per message with its role (``system``, ``user``,
an earlier ``assistant`` message; text and image elements), keyed ``"1"``, ``"2"``,
... as ``PromptItem.add`` keys them; tool messages and tool calls have no place
there (counted in a note). Its item JSON holds one free-text answer annotation
per response with text, answering the last message before it
(``metadata.system.promptId``), as dtlpy's ``to_messages`` puts each answer right
after its prompt, with ``metadata.user.model.name`` = the response's
``inference_model``, ``createdAt`` (and ``updatedAt``) = its ``capture_date``,
``creator`` (and ``updatedBy``) = ``warehouse-export``, and where it came from
(``metadata.user.source``: format, path, locator). A response without text has
nothing to answer with and is left out; the rest of the source's fields (turns,
annotations, evaluations, tokens) are not written.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from warehouse.exports import kit

from . import detect
from .prompts import METADATA
from .unmap import Files

TEXT = "application/text"
IMAGE = "image/*"
CREATOR = "warehouse-export"


def record_files(responses: list[dict], turns: list[dict], answers: list[dict], name: str, left: Counter) -> Files | None:
    """The files of one record of another format (None when no response has text); what its
    conversations held that a prompt item cannot is counted in ``left``."""
    answered = [r for r in responses if r.get("response") is not None]
    if not answered:
        return None
    answering = {r["response_id"] for r in answered}
    prompts: list[tuple[str, list]] = []  # the record's messages, shared by its answers' conversations
    keys: dict[str, str | None] = {}
    for r in answered:
        context = _context(r, turns, answers, answering, left)
        at = 0
        while at < len(context) and at < len(prompts) and context[at] == prompts[at]:
            at += 1
        if at < len(context):  # where conversations part, the rest follows the prompts there are
            prompts += context[at:]
            keys[r["response_id"]] = str(len(prompts))
        else:
            keys[r["response_id"]] = str(at) if at else None
    document = {"shebang": "dataloop", "metadata": {"dltype": detect.PROMPT},
                "prompts": {str(i + 1): [*elements, {"mimetype": METADATA, "value": {"role": role}}]
                            for i, (role, elements) in enumerate(prompts)}}
    annotations = [_answer(r, keys[r["response_id"]]) for r in answered]
    tags = list(dict.fromkeys(t for r in answered for t in (r.get("tags") or ())))
    first = answered[0]
    metadata: dict[str, Any] = {"system": {"mimetype": "application/json", "shebang": {"dltype": detect.PROMPT}},
                                "user": {"source": {"format": first["source_format"], "path": first["source_path"]}}}
    if tags:
        metadata["tags"] = dict.fromkeys(tags, True)
    folder, _, base = name.rpartition("/")
    item = {"dir": "/" + folder, "filename": "/" + name, "type": "file", "metadata": metadata, "name": base,
            "annotations": annotations, "annotationsCount": len(annotations), "annotated": True}
    return Files(document, item)


def _context(r: dict, turns: list[dict], answers: list[dict], answering: set[str], left: Counter) -> list[tuple[str, list]]:
    """The messages before the response's answer, as (role, elements): its conversation, less the
    answers this item holds anyway (an earlier answer of the record is an annotation, not a prompt)
    and what a prompt cannot hold (tool messages, tool calls)."""
    c = kit.conversation(dict(r, turns=turns, answers=answers))
    left.update(c.left_out)
    messages = list(zip(c.messages, c.owners))
    if messages and messages[-1][1] == r["response_id"]:
        messages.pop()  # the answer itself
    context = []
    for m, owner in messages:
        left["tool call"] += len(m.get("tool_calls") or ())
        if m["role"] == "tool":
            left["tool message"] += 1
        elif not (m["role"] == "assistant" and owner in answering and owner != r["response_id"]):
            elements = _elements(m, left)
            if elements:
                context.append((m["role"], elements))
    return context


def _elements(message: dict, left: Counter) -> list[dict]:
    """A message's content as prompt elements: text, and images by their URL."""
    content = message["content"]
    if isinstance(content, str):
        return [{"mimetype": TEXT, "value": content}]
    elements = []
    for part in content or ():
        if part.get("type") == "text":
            elements.append({"mimetype": TEXT, "value": part["text"]})
        elif part.get("type") == "image_url" and isinstance(part.get("image_url"), dict):
            elements.append({"mimetype": IMAGE, "value": part["image_url"].get("url")})
        else:
            left[f"content part of type {part.get('type')!r}"] += 1
    return elements


def _answer(r: dict, prompt_key: str | None) -> dict:
    system = {"promptId": prompt_key} if prompt_key is not None else {}
    user: dict[str, Any] = {}
    if r.get("inference_model") is not None:
        user["model"] = {"name": r["inference_model"]}
    user["source"] = {"format": r["source_format"], "path": r["source_path"], "locator": r["source_locator"]}
    # dtlpy's Annotation.from_json needs creator, createdAt, updatedBy and updatedAt
    return {"type": "text", "label": "free-text", "coordinates": r["response"], "metadata": {"system": system, "user": user},
            "creator": CREATOR, "createdAt": r.get("capture_date"), "updatedBy": CREATOR, "updatedAt": r.get("capture_date")}
