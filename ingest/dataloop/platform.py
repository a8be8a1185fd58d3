"""The platform item JSON: item columns, tags, and its annotations (the model answers among them).

An annotation is a model answer when it is a free-text (``type: text``) or
ref-image (``ref_image``) annotation, the two kinds the SDK turns into
assistant messages, or when it names the prompt it answers
(``metadata.system.promptId``; the spec's example answer is a ``binary`` stream).
The model is ``metadata.user.model`` (``{name, confidence, model_id}``, written by
``AnnotationCollection.add``), else ``metadata.system.model`` (model adapters).
Every annotation, answer or not, is an ``annotations`` row.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from warehouse.formatkit.records import RecordContext, RecordError

from ..fields import as_fields, as_text, children, json_type, preview
from .take import Taker

ANSWER_TYPES = ("text", "ref_image")
STREAM_TYPES = ("binary",)


@dataclass
class Answer:
    prompt_key: str | None
    response: str | None = None
    response_ref: str | None = None
    response_mimetype: str | None = None
    inference_model: str | None = None
    model_id: str | None = None
    model_confidence: float | None = None
    capture_date: str | None = None


@dataclass
class Annotation:
    sub: str
    row: dict
    answer: Answer | None


@dataclass
class Item:
    columns: dict = field(default_factory=dict)
    extra: dict | None = None
    annotations: list[Annotation] = field(default_factory=list)


def read_item(obj: Any, sub: str, ctx: RecordContext, document_dltype: str | None = None) -> Item:
    """The item JSON at ``sub`` (``""`` read alone, ``@json`` beside a document)."""
    t = as_fields(obj, "platform item JSON", sub, Taker)
    item = Item()
    c = item.columns
    c["item_id"] = t.id("id")
    c["dataset_id"] = t.id("datasetId")
    c["item_creator"] = t.text("creator")
    c["item_created_at"] = t.text("createdAt")
    c["item_updated_at"] = t.text("updatedAt")
    c["item_filename"] = t.text("filename")  # its halves ``dir`` and ``name`` stay in extra as written
    dltype = t.peek("metadata.system.shebang.dltype")
    if document_dltype is None or dltype == document_dltype:
        c["dltype"] = t.text("metadata.system.shebang.dltype")  # else it stays in extra: the two disagree
    tags: list[str] = []
    for path in ("metadata.system.tags", "metadata.tags"):
        found = t.peek(path)
        if isinstance(found, dict):
            tags += [k for k, v in found.items() if v is True and k not in tags]
            if all(v is True for v in found.values()):
                t.raw(path)  # fully told by `tags`; anything else stays verbatim in extra
    c["tags"] = tags or None
    # annotationsCount and annotated stay in extra, as written: what the platform said, even where
    # the list agrees with them (an export of some of the answers writes them back unchanged)
    annotations = t.list("annotations") or []
    item.annotations = [_annotation(a, locator)
                        for _, a, locator in children(annotations, sub + ".annotations", "annotation", ctx, Taker)]
    item.extra = t.left()
    return item


def _annotation(t: Taker, locator: str) -> Annotation:
    sub = t.sub
    kind = t.text("type")
    coordinates = t.raw("coordinates")
    metadata = t.object("metadata")
    m = Taker(metadata or {}, sub + ".metadata")  # typed reads only: the column keeps the object verbatim
    prompt_key = m.id("system.promptId")
    row = {
        "level": "message" if prompt_key is not None else "item",
        "annotation_type": kind,
        "label": t.text("label"),
        "coordinates": coordinates,
        "value_text": coordinates if kind == "text" and isinstance(coordinates, str) else None,
        "source_annotation_id": t.id("id"),
        "item_id": t.id("itemId"),
        "prompt_key": prompt_key,
        "creator": t.text("creator"),
        "created_at": t.text("createdAt"),
        "metadata": metadata,
        "source_locator": locator,
    }
    answer = None
    if kind in ANSWER_TYPES or prompt_key is not None:
        answer = Answer(prompt_key, capture_date=row["created_at"])
        _answer_output(answer, kind, coordinates, m, sub)
        for source in ("user.model", "system.model"):
            answer.inference_model = answer.inference_model or m.text(f"{source}.name")
            answer.model_id = answer.model_id or m.id(f"{source}.model_id")
            confidence = m.float(f"{source}.confidence")
            if answer.model_confidence is None:
                answer.model_confidence = confidence
    row["extra"] = t.left()
    return Annotation(sub, row, answer)


def _answer_output(answer: Answer, kind: str | None, coordinates: Any, m: Taker, sub: str) -> None:
    at = sub + ".coordinates"
    if kind == "text" and not isinstance(coordinates, str):
        raise RecordError(
            "coordinates: expected the answer text (a string) for a text annotation, "
            f"got {json_type(coordinates)} {preview(coordinates)}",
            sub_locator=at,
        )
    if isinstance(coordinates, str):
        if kind in STREAM_TYPES or m.peek("user.stream") is True:
            answer.response_ref = coordinates
        else:
            answer.response = coordinates
    elif isinstance(coordinates, dict) and "ref" in coordinates:
        answer.response_ref = as_text(coordinates["ref"], "ref", at + ".ref")
        answer.response_mimetype = as_text(coordinates.get("mimetype"), "mimetype", at + ".mimetype")
