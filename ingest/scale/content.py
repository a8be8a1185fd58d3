"""A Scale message's ``content`` into its text, its reasoning and the rows of its parts.

``content`` is ``{text, reference_texts, attachments, chunks, reasoning}``: the
text and the reasoning become columns of the message's ``turns`` row; reference
texts, attachments and chunks become rows of their own tables (and chunk
annotations ``annotations`` rows), linked by ``response_id``/``turn_index``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from warehouse.formatkit.records import Mapped, RecordContext, RecordError

from ..fields import Fields, children, json_type, preview
from .annotations import Target, map_annotations
from .files import attachment_rows


@dataclass
class Content:
    text: str | None = None
    reasoning: str | None = None
    #: content keys kept in the message's ``extra.content``: unknown ones, and ``reasoning``
    #: as written when joining its parts would lose something
    extra: dict | None = None


def map_content(value: Any, sub: str, target: Target, ctx: RecordContext, out: Mapped) -> Content:
    """``target`` is the message (level, links); ``sub`` locates the ``content`` object."""
    if value is None:
        return Content()
    if isinstance(value, str):  # not Scale's shape, but a message text all the same
        return Content(text=value)
    if not isinstance(value, dict):
        raise RecordError(
            f"content: expected an object {{text, attachments, ...}}, got {json_type(value)} {preview(value)}",
            sub_locator=sub,
        )
    c = Fields(value, sub)
    links = {"response_id": target.response_id, "turn_index": target.turn_index}
    text = c.text("text")
    reasoning, reasoning_extra = _reasoning(c.list("reasoning"), sub + ".reasoning")
    _add(out, "reference_texts", _reference_rows(c.list("reference_texts"), sub + ".reference_texts", links, ctx))
    _add(out, "attachments", attachment_rows(c.list("attachments"), sub + ".attachments", links, ctx))
    _add(out, "chunks", _chunk_rows(c.list("chunks"), sub + ".chunks", target, ctx, out))
    extra = c.rest() or {}
    if reasoning_extra is not None:
        extra["reasoning"] = reasoning_extra
    return Content(text, reasoning, extra or None)


def _add(out: Mapped, table: str, rows: list[dict]) -> None:
    if rows:
        out.setdefault(table, []).extend(rows)


def _reasoning(items: list | None, sub: str) -> tuple[str | None, list | None]:
    """The reasoning text (parts joined by a blank line), and the list as written when joining loses something."""
    if not items:
        return None, None
    parts, lossless = [], len(items) == 1
    for _, r, _ in children(items, sub, "reasoning"):
        text = r.text("content")
        if text is not None:
            parts.append(text)
        if r.rest():
            lossless = False
    # Several parts, or parts with more than `content`: keep the list so no boundary or key is lost.
    return ("\n\n".join(parts) if parts else None), (None if lossless else items)


def _reference_rows(items: list | None, sub: str, links: dict, ctx: RecordContext) -> list[dict]:
    rows = []
    for k, r, locator in children(items, sub, "reference text", ctx):
        rows.append(
            {
                **links,
                "reference_index": k,
                "content": r.text("content"),
                "category": r.text("category"),
                "url": r.text("url"),
                "source_locator": locator,
                "extra": r.rest(),
            }
        )
    return rows


def _chunk_rows(items: list | None, sub: str, message: Target, ctx: RecordContext, out: Mapped) -> list[dict]:
    rows = []
    for k, c, locator in children(items, sub, "chunk", ctx):
        target = Target("chunk", c.sub, message.response_id, message.turn_index, message.thread_id)
        map_annotations(c.raw("annotations"), c.sub + ".annotations", target, ctx, out)
        rows.append(
            {
                "response_id": message.response_id,
                "turn_index": message.turn_index,
                "chunk_index": k,
                "chunk_type": c.text("type"),
                "text": c.text("text"),
                "source_locator": locator,
                "extra": c.rest(),
            }
        )
    return rows
