"""The ``prompts`` of a prompt file into ``turns`` rows: one row per part (element), in order.

``{"<key>": [{"mimetype", "value"}, ...], ...}``: several keys are the turns of a
conversation, in the file's order (``"1"``, ``"2"``, or ``prompt1``, ``prompt#1``,
``conversation-1``). The legacy dict-of-dicts shape ``{"prompt1": {"question-1":
{mimetype, value}}}`` reads the same, its inner keys kept as ``extra.part_key``.

A ``metadata`` element is not a part: its ``role`` becomes the prompt's role
(``user`` when none is given, the SDK's default), its other keys go to the
``extra.metadata`` of every part of the prompt. Text parts (``application/text``,
``text``) fill ``content``; any other mimetype (``image/*``, ``image/jpeg``,
``audio/*``, ``video/*``) holds a reference (stream URL, item id or the
``dl.Item.stream`` placeholder of test assets), kept as ``content_ref``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from warehouse.formatkit.records import RecordContext, RecordError, key_step

from ..fields import Fields, as_fields, as_text, json_type, preview

METADATA = "metadata"
DEFAULT_ROLE = "user"


@dataclass
class Prompt:
    key: str
    index: int  # position in the conversation: turns.turn_index
    sub: str  # locator of the prompt inside the document
    role: str = DEFAULT_ROLE
    texts: list[str] = field(default_factory=list)
    rows: list[dict] = field(default_factory=list)

    @property
    def text(self) -> str | None:
        return "\n".join(self.texts) if self.texts else None


def is_text(mimetype: str) -> bool:
    return mimetype == "application/text" or mimetype.startswith("text")


def key_locator(key: str) -> str:
    return key_step(key)  # a long key is cut, with a hash (warehouse.formatkit.records)


def read_prompts(prompts: Any, ctx: RecordContext) -> list[Prompt]:
    if not isinstance(prompts, dict):
        raise RecordError(
            f"prompts: expected an object keyed by prompt key ({{\"1\": [...]}}), got {json_type(prompts)} {preview(prompts)}",
            sub_locator=".prompts",
        )
    return [_prompt(key, elements, i, ctx) for i, (key, elements) in enumerate(prompts.items())]


def _prompt(key: str, elements: Any, index: int, ctx: RecordContext) -> Prompt:
    prompt = Prompt(key, index, ".prompts" + key_locator(key))
    if isinstance(elements, list):
        parts = [(i, f"[{i}]", None, e) for i, e in enumerate(elements)]
    elif isinstance(elements, dict):  # legacy dict of dicts: the inner keys name the parts
        parts = [(i, key_locator(k), k, e) for i, (k, e) in enumerate(elements.items())]
    else:
        raise RecordError(
            f"prompt {key!r}: expected a list of elements (or, legacy, an object of elements), "
            f"got {json_type(elements)} {preview(elements)}",
            sub_locator=prompt.sub,
        )
    metadata: dict[str, Any] = {}
    for position, at, part_key, element in parts:
        sub = prompt.sub + at
        e = as_fields(element, "prompt element", sub)
        mimetype = e.text("mimetype")
        if mimetype is None:
            raise RecordError(
                "prompt element has no mimetype: expected application/text, image/*, audio/*, video/* or metadata",
                sub_locator=sub,
            )
        if mimetype == METADATA:
            metadata.update(_metadata(e, prompt, sub))
            continue
        value = e.raw("value")
        if value is not None and not isinstance(value, str):
            raise RecordError(
                f"value: expected a string for mimetype {mimetype}, got {json_type(value)} {preview(value)}",
                sub_locator=sub + ".value",
            )
        row = {"turn_index": index, "prompt_key": key, "part_index": position, "mimetype": mimetype,
               "source_locator": ctx.locate(sub)}
        if is_text(mimetype):
            row["content"] = value
            if value is not None:
                prompt.texts.append(value)
        else:
            row["content_ref"] = value
        extra = e.rest() or {}
        if part_key is not None:
            extra["part_key"] = part_key
        row["extra"] = extra
        prompt.rows.append(row)
    if not prompt.rows:  # only metadata, or nothing: the turn is kept, empty
        prompt.rows.append({"turn_index": index, "prompt_key": key, "source_locator": ctx.locate(prompt.sub), "extra": {}})
    for row in prompt.rows:
        row["role"] = prompt.role
        if metadata:
            row["extra"]["metadata"] = metadata
        row["extra"] = row["extra"] or None
    return prompt


def _metadata(e: Fields, prompt: Prompt, sub: str) -> dict:
    """A metadata element: the role for the prompt, the rest for extra.metadata."""
    value = e.raw("value")
    if not isinstance(value, dict):
        raise RecordError(
            f"value: expected an object (the prompt's role and metadata) for mimetype metadata, "
            f"got {json_type(value)} {preview(value)}",
            sub_locator=sub + ".value",
        )
    rest = dict(value)
    if "role" in rest:
        role = as_text(rest.pop("role"), "role", sub + ".value.role")
        if role is not None:
            prompt.role = role
    left = e.rest()
    if left:
        rest["element"] = left
    return rest
