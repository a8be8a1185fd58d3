"""The rows of one Dataloop record back to its files: the document and the platform item JSON.

The reverse of ``item.py``, ``prompts.py``, ``platform.py`` and ``trace.py``. Typed
columns go back to the paths they were taken from; ``extra`` goes back where the
mapping left it: a response's ``extra`` holds the document's other fields, its
``extra.item`` the item JSON's, a turn's ``extra`` the element's (or message's),
an annotation's ``extra`` the annotation's. Item fields that follow from the
columns (``name``, ``dir``, ``annotationsCount``, ``annotated``) were kept in
``extra.item`` as written, so they come back as the item had them (the count is
the platform's count of the item's annotations, even when an export writes some).

Which files the record had is read from its rows: a document when it has prompt
parts or messages, document fields in ``extra``, rows located in the sibling
(``@json...``), or nothing from an item JSON; an item JSON when it has item
columns, ``extra.item`` or annotations.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from warehouse.exports import kit

from . import detect
from .download import SIBLING
from .item import document_key_back
from .prompts import METADATA, is_text

ITEM_COLUMNS = ("item_id", "dataset_id", "item_filename", "item_creator", "item_created_at", "item_updated_at", "tags")

#: Dataloop's own key order, so the files read like the platform's
DOCUMENT_ORDER = ("shebang", "metadata", "prompts")
ITEM_ORDER = ("id", "datasetId", "url", "dataset", "createdAt", "dir", "filename", "type", "hidden", "metadata", "name",
              "creator", "updatedAt", "updatedBy", "stream", "thumbnail")
ITEM_LAST = ("annotations", "annotationsCount", "annotated")
ANNOTATION_ORDER = ("id", "datasetId", "itemId", "url", "item", "dataset", "type", "label", "coordinates", "metadata",
                    "creator", "createdAt", "updatedBy", "updatedAt", "hash", "source")
MESSAGE_ORDER = ("role", "content", "reasoning_content", "tool_calls", "tool_call_id", "name", "model_info")

#: split tags live in metadata.system.tags in real downloads, user tags in metadata.tags
SPLIT_TAGS = ("train", "validation", "test")

_ANNOTATION_INDEX = re.compile(r"annotations\[(\d+)\]$")


@dataclass
class Files:
    document: dict | None  # the item's own bytes: items/<name>
    item_json: dict | None  # what the platform says about it: json/<name>


def record_files(responses: list[dict], turns: list[dict], annotations: list[dict]) -> Files:
    """The files of one Dataloop record, from its responses (candidate order), turns and annotations."""
    first = responses[0]
    extra = dict(first.get("extra") or {})
    item_extra = extra.pop("item", None)
    extra = {document_key_back(k): v for k, v in extra.items()}  # the document's own fields
    dltype = first.get("dltype")
    has_item = item_extra is not None or bool(annotations) or any(first.get(c) is not None for c in ITEM_COLUMNS)
    in_sibling = any((row.get("source_locator") or "").startswith(SIBLING) for row in (*responses, *annotations))
    has_document = bool(turns) or bool(extra) or in_sibling or not has_item
    document = None
    if has_document and dltype == detect.LLM_TRACE:
        document = trace_document(extra, turns, first)
    elif has_document:
        document = prompt_document(dltype, extra, turns)
    item = item_json(first, item_extra or {}, annotations) if has_item else None
    return Files(document, item)


# --- documents --------------------------------------------------------------------------------------


def _document(dltype: str, extra: dict, body: dict) -> dict:
    metadata = {"dltype": dltype, **(extra.pop("metadata", None) or {})}
    return {"shebang": "dataloop", "metadata": metadata, **extra, **body}


def prompt_document(dltype: str | None, extra: dict, turns: list[dict]) -> dict:
    prompts: dict[str, Any] = {}
    for rows in _by_turn(turns):
        prompts[rows[0]["prompt_key"]] = _prompt(rows)
    return ordered(_document(dltype or detect.PROMPT, extra, {"prompts": prompts}), DOCUMENT_ORDER)


def _by_turn(turns: list[dict]) -> list[list[dict]]:
    groups: dict[int, list[dict]] = {}
    for t in sorted(turns, key=lambda t: (t["turn_index"], -1 if t.get("part_index") is None else t["part_index"])):
        groups.setdefault(t["turn_index"], []).append(t)
    return list(groups.values())


def _prompt(rows: list[dict]) -> list | dict:
    """One prompt's elements, each part at its ``part_index``; the metadata element fills the first gap
    (it is not a part, but it took a position), else it is appended as dtlpy's ``to_json`` does."""
    head = rows[0].get("extra") or {}
    metadata = dict(head.get("metadata") or {})
    element_rest = metadata.pop("element", None) or {}
    value = {"role": rows[0]["role"], **metadata} if rows[0].get("role") is not None else metadata
    meta = {"mimetype": METADATA, "value": value, **element_rest}
    parts = {r["part_index"]: r for r in rows if r.get("part_index") is not None}
    legacy = any("part_key" in (r.get("extra") or {}) for r in parts.values())
    size = max(parts) + 1 if parts else 0
    gaps = [i for i in range(size) if i not in parts]
    elements: list[tuple[str | None, dict]] = []
    for i in range(size):
        if i in parts:
            elements.append(_part(parts[i]))
        else:  # several metadata elements were merged on ingest: the first carries it all
            elements.append((None, meta if i == gaps[0] else {"mimetype": METADATA, "value": {}}))
    if not gaps and not (legacy and value == {"role": "user"} and not element_rest):
        elements.append((None, meta))
    if not legacy:
        return [e for _, e in elements]
    out: dict[str, dict] = {}
    for key, e in elements:  # the legacy dict of dicts: metadata elements had keys we did not keep
        if key is None:
            key = METADATA
            while key in out or any(k == key for k, _ in elements):
                key += "_"
        out[key] = e
    return out


def _part(row: dict) -> tuple[str | None, dict]:
    extra = dict(row.get("extra") or {})
    extra.pop("metadata", None)
    part_key = extra.pop("part_key", None)
    mimetype = row["mimetype"]
    value = row.get("content") if mimetype is not None and is_text(mimetype) else row.get("content_ref")
    return part_key, {"mimetype": mimetype, "value": value, **extra}


def trace_document(extra: dict, turns: list[dict], response: dict) -> dict:
    ordered_turns = sorted(turns, key=lambda t: t["turn_index"])
    messages = []
    for i, t in enumerate(ordered_turns):
        final = i == len(ordered_turns) - 1 and t["role"] == "assistant"
        messages.append(_message(t, response.get("model_id") if final else None))
    return ordered(_document(detect.LLM_TRACE, extra, {"messages": messages}), ("shebang", "metadata"))


def _message(t: dict, model_id: str | None) -> dict:
    extra = dict(t.get("extra") or {})
    m: dict[str, Any] = {"role": t["role"]}
    # list content is in content_parts as written, object content stayed verbatim in extra
    if t.get("content_parts") is not None:
        m["content"] = kit.json_value(t["content_parts"])
    else:
        m["content"] = extra.pop("content") if "content" in extra else t.get("content")
    if t.get("reasoning_content") is not None:
        m["reasoning_content"] = t["reasoning_content"]
    if t.get("tool_calls") is not None:
        m["tool_calls"] = kit.json_value(t["tool_calls"])
    if t.get("tool_call_id") is not None:
        m["tool_call_id"] = t["tool_call_id"]
    if t.get("tool_name") is not None:
        m["name"] = t["tool_name"]
    info = {k: v for k, v in (("name", t.get("model")), ("model_id", model_id)) if v is not None}
    if info or "model_info" in extra:
        m["model_info"] = merge(info, extra.pop("model_info", None) or {})
    return ordered(merge(m, extra), MESSAGE_ORDER)


# --- the platform item JSON -----------------------------------------------------------------------------


def item_json(first: dict, item_extra: dict, annotations: list[dict]) -> dict:
    item: dict[str, Any] = {}
    for key, column in (("id", "item_id"), ("datasetId", "dataset_id"), ("createdAt", "item_created_at"),
                        ("filename", "item_filename"), ("creator", "item_creator"), ("updatedAt", "item_updated_at")):
        if first.get(column) is not None:
            item[key] = first[column]
    system: dict[str, Any] = {"shebang": {"dltype": first.get("dltype") or detect.PROMPT}}
    metadata: dict[str, Any] = {"system": system}
    split, user = place_tags(first.get("tags") or [], item_extra.get("metadata") or {})
    if split:
        system["tags"] = dict.fromkeys(split, True)
    if user:
        metadata["tags"] = dict.fromkeys(user, True)
    item["metadata"] = metadata
    item["annotations"] = [annotation_json(a) for a in sorted(annotations, key=_annotation_position)]
    item = merge(item, item_extra)  # name, dir, annotationsCount, annotated: as the item had them
    if isinstance(item["metadata"].get("system"), dict):  # the platform writes these keys sorted
        item["metadata"]["system"] = dict(sorted(item["metadata"]["system"].items()))
    return ordered(item, ITEM_ORDER, ITEM_LAST)


def place_tags(tags: list[str], extra_metadata: dict) -> tuple[list[str], list[str]]:
    """Split ``tags`` between ``metadata.system.tags`` and ``metadata.tags`` so that reading them back
    (the true ones: system first, then user, each name once) gives the same list. A tag object kept
    verbatim in ``extra.item`` (it held a value other than true) already says its own names."""
    system_kept = _tag_object(extra_metadata.get("system"))
    user_kept = _tag_object(extra_metadata)
    if system_kept is not None:
        told = [k for k, v in system_kept.items() if v is True]
        return [], [] if user_kept is not None else tags[len(told):]
    if user_kept is not None:
        told = [k for k, v in user_kept.items() if v is True]
        for k in range(len(tags) + 1):
            if tags[:k] + [t for t in told if t not in tags[:k]] == tags:
                return tags[:k], []
        return tags, []
    k = 0
    while k < len(tags) and tags[k] in SPLIT_TAGS:
        k += 1
    return tags[:k], tags[k:]


def _tag_object(parent: Any) -> dict | None:
    tags = parent.get("tags") if isinstance(parent, dict) else None
    return tags if isinstance(tags, dict) else None


def _annotation_position(a: dict) -> tuple:
    match = _ANNOTATION_INDEX.search(a.get("source_locator") or "")
    return (int(match.group(1)) if match else -1, a.get("source_locator") or "")


def annotation_json(a: dict) -> dict:
    obj: dict[str, Any] = {}
    for key, column in (("id", "source_annotation_id"), ("itemId", "item_id"), ("type", "annotation_type"),
                        ("label", "label"), ("metadata", "metadata"), ("creator", "creator"), ("createdAt", "created_at")):
        if a.get(column) is not None:
            obj[key] = a[column]
    obj["coordinates"] = a.get("coordinates")  # the platform always writes it (null for a class label)
    return ordered(merge(obj, a.get("extra") or {}), ANNOTATION_ORDER)


# --- helpers ---------------------------------------------------------------------------------------------------


def merge(base: dict, extra: dict) -> dict:
    """``base`` with ``extra`` merged in, recursively; ``extra`` (kept verbatim on ingest) wins a conflict."""
    out = dict(base)
    for k, v in extra.items():
        out[k] = merge(out[k], v) if isinstance(out.get(k), dict) and isinstance(v, dict) else v
    return out


def ordered(obj: dict, first: tuple[str, ...], last: tuple[str, ...] = ()) -> dict:
    keys = [k for k in first if k in obj and k not in last]
    keys += [k for k in obj if k not in keys and k not in last]
    keys += [k for k in last if k in obj]
    return {k: obj[k] for k in keys}
