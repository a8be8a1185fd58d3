"""Scale annotations into ``annotations`` rows, and ratings into ``evaluations``.

One shape serves every level (thread, turn, message, chunk): ``{id, key, type,
title, description, labels, not_applicable, cannot_assess, metadata,
justification, value, possible_values}``. Scale's archetype pages abbreviate it to
``{key, value}``; its Turn page writes ``type: "<string>"`` and nests
``possible_values`` (``[[1, 2, 3]]``). Nothing here depends on ``type``: the typed
columns follow the JSON type of the value, so abbreviated and placeholder
annotations map like complete ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from warehouse.formatkit.records import Mapped, RecordContext, RecordError

from ..fields import Fields, children, json_type, preview
from .files import file_rows


@dataclass(frozen=True)
class Target:
    """What a list of annotations is about, and the links its rows carry."""

    level: str  # thread, turn, message or chunk
    sub: str  # locator of the annotated object inside the record
    response_id: str | None = None
    turn_index: int | None = None
    thread_id: str | None = None


def map_annotations(items: Any, sub: str, target: Target, ctx: RecordContext, out: Mapped) -> None:
    """Rows for the ``annotations`` list at ``sub`` (``.messages[1].annotations``)."""
    if items is None:
        return
    if not isinstance(items, list):
        raise RecordError(f"annotations: expected a list, got {json_type(items)} {preview(items)}", sub_locator=sub)
    for _, a, locator in children(items, sub, "annotation", ctx):
        _annotation(a, locator, target, ctx, out)


def _annotation(a: Fields, locator: str, target: Target, ctx: RecordContext, out: Mapped) -> None:
    sub = a.sub
    key = a.text("key")
    if key is None:
        raise RecordError(
            "annotation without a key: Scale names every question in `key`; add it or remove the annotation",
            sub_locator=sub,
        )
    annotation_id = ctx.row_id(sub)
    kind = a.text("type")
    value = a.raw("value")
    options = a.raw("possible_values")
    labels = a.texts("labels")
    justification = a.text("justification")
    if _is_file_value(kind, value):
        value = _files_out_of(value, sub, target, annotation_id, ctx, out)
    label = chosen_label(value, labels, options)
    row = {
        "annotation_id": annotation_id,
        "response_id": target.response_id,
        "turn_index": target.turn_index,
        "level": target.level,
        "target": ctx.locate(target.sub),
        "key": key,
        "value": value,
        "value_number": _number(value),
        "value_text": value if isinstance(value, str) else None,
        "annotation_type": kind,
        "label": label,
        "title": a.text("title"),
        "description": a.text("description"),
        "labels": labels,
        "possible_values": options,
        "metadata": a.raw("metadata"),
        "note": justification,
        "source_annotation_id": a.id("id"),
        "thread_id": target.thread_id,
        "not_applicable": a.bool("not_applicable"),
        "cannot_assess": a.bool("cannot_assess"),
        "source_locator": locator,
        "extra": a.rest(),
    }
    out.setdefault("annotations", []).append(row)
    rating = _rating(value, justification, sub)
    if rating is not None:
        score, feedback, extra = rating
        out.setdefault("evaluations", []).append(
            {
                "response_id": target.response_id,
                "turn_index": target.turn_index,
                "criterion": key,
                "score": score,
                "score_scale": score_scale(options),
                "label": label,
                "feedback": feedback,
                "source_locator": locator,
                "extra": extra,
            }
        )


def _number(v: Any) -> float | None:
    if isinstance(v, bool):
        return float(v)
    if isinstance(v, (int, float)):
        return float(v)
    return None


def _rating(value: Any, justification: str | None, sub: str) -> tuple[float, str | None, dict | None] | None:
    """(score, feedback, extra) when the annotation is a numeric rating: a number, or a rubric rating's score."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value), justification, None
    if isinstance(value, dict) and isinstance(value.get("score"), (int, float)) and not isinstance(value["score"], bool):
        r = Fields(value, sub + ".value")
        score = r.float("score")
        feedback = r.text("justification")
        return score, feedback if feedback is not None else justification, r.rest()
    return None


def flat_options(options: Any) -> list | None:
    """``possible_values`` as one flat list: Scale's docs nest it (``[[1, 2, 3]]``)."""
    if not isinstance(options, list):
        return None
    if options and all(isinstance(o, list) for o in options):
        return [x for o in options for x in o]
    return options


def _same(a: Any, b: Any) -> bool:
    # 1 == True in Python; a boolean option must not pick the label of the integer 1.
    return a == b and isinstance(a, bool) == isinstance(b, bool)


def chosen_label(value: Any, labels: list[str] | None, options: Any) -> str | None:
    """The label of the chosen option: labels[i] names possible_values[i]; a category value is its own label."""
    if not labels or value is None or isinstance(value, (list, dict)):
        return None
    flat = flat_options(options)
    if flat is not None and len(flat) == len(labels):
        for option, label in zip(flat, labels):
            if _same(option, value):
                return label
    if isinstance(value, str) and value in labels:
        return value
    return None


def score_scale(options: Any) -> str | None:
    """``1-7`` from numeric possible values, so scores on different scales are never mixed silently."""
    flat = flat_options(options)
    if not flat or not all(isinstance(o, (int, float)) and not isinstance(o, bool) for o in flat):
        return None
    return f"{fmt_number(min(flat))}-{fmt_number(max(flat))}"


def fmt_number(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


# --- file annotations ---------------------------------------------------------------------
#
# A `file` annotation's value is a file (DetailedFile) or a list of them (BasicFile), each
# possibly holding base64 `content`. The files become `attachments` rows (annotation_id
# links them) and the value kept in `annotations.value` is the same minus `content`, so
# large bytes live in one table only.


def _is_file_value(kind: str | None, value: Any) -> bool:
    if kind == "file":
        return isinstance(value, (dict, list))
    items = value if isinstance(value, list) else [value]
    return bool(items) and all(isinstance(v, dict) and "mime_type" in v for v in items)


def _files_out_of(value: Any, sub: str, target: Target, annotation_id: str, ctx: RecordContext, out: Mapped) -> Any:
    single = isinstance(value, dict)
    items = [value] if single else value
    links = {"response_id": target.response_id, "turn_index": target.turn_index, "annotation_id": annotation_id}
    subs = [sub + ".value"] if single else [f"{sub}.value[{k}]" for k in range(len(items))]
    out.setdefault("attachments", []).extend(file_rows(items, subs, links, ctx))
    kept = [{k: v for k, v in item.items() if k != "content"} for item in items]
    return kept[0] if single else kept
