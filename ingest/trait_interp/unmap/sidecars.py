"""Prompt sets back into their files: the reverse of ``map_prompt`` (ingest/trait_interp/sidecars.py).

A set keeps its shape, told by its rows' locators: ``{name, description,
system_prompt?, prompts: [{id, text, note?, ...}]}``, a bare array
``[{id, prompt}]``, or a steering question set ``{"questions": [...]}`` (its
items strings, or ``{"question": ...}`` objects). A set without prompts is one
row with an empty locator: its root, the empty list in ``extra.set``.
"""

from __future__ import annotations

import re
from typing import Any

from warehouse.exports import kit

from ..sidecars import TEXT_KEYS
from .annotations import idx_value

_INDEX = re.compile(r"\[(\d+)\]$")


def set_path(prompt_set: str, set_kind: str) -> str:
    """Where trait-interp keeps the set, relative to the project root (beside ``experiments/``)."""
    if set_kind == "steering":
        return f"datasets/traits/{prompt_set}/steering.json"
    return f"datasets/inference/{prompt_set}.json"


def prompt_set_document(rows: list[dict]) -> Any:
    """One set file from its ``prompts`` rows (all of one source file)."""
    if len(rows) == 1 and not rows[0]["source_locator"]:
        return _root(rows[0], rows[0].get("system_prompt"), (kit.json_value(rows[0].get("extra")) or {}).get("set"))
    rows = sorted(rows, key=lambda r: int(_INDEX.search(r["source_locator"]).group(1)))
    first = rows[0]
    shape = "array" if first["source_locator"].startswith("[") else first["source_locator"].split("[")[0].lstrip(".")
    extras = [dict(kit.json_value(r.get("extra")) or {}) for r in rows]
    set_extra = next((e.pop("set") for e in extras if "set" in e), None)
    for e in extras:
        e.pop("set", None)
    # an item's own system prompt is in its extra too (map_prompt keeps the item's keys); the others are the set's
    common = next((r.get("system_prompt") for r, e in zip(rows, extras) if "system_prompt" not in e), None)
    items = [_item(r, e, shape, i) for i, (r, e) in enumerate(zip(rows, extras))]
    if shape == "array":
        return items
    root = _root(first, common, set_extra)
    root[shape] = items
    return root


def _root(first: dict, system_prompt: str | None, set_extra: dict | None) -> dict:
    root: dict[str, Any] = {}
    if first.get("set_name") is not None:
        root["name"] = first["set_name"]
    if first.get("set_description") is not None:
        root["description"] = first["set_description"]
    if system_prompt is not None:
        root["system_prompt"] = system_prompt
    root.update(set_extra or {})
    return root


def _item(row: dict, extra: dict, shape: str, position: int) -> Any:
    if shape == "questions" and row["prompt_id"] == str(position) and row.get("note") is None and not extra \
            and isinstance(row.get("prompt"), str):
        return row["prompt"]
    item: dict[str, Any] = {}
    steering = shape == "questions" or row.get("set_kind") == "steering"
    if not steering or row["prompt_id"] != str(position):  # a steering question's id is its position
        item["id"] = idx_value(row["prompt_id"])
    # the text under the set's own key, unless the item kept another text there (in extra)
    preferred = "question" if steering else "prompt" if shape == "array" else "text"
    text_key = next(k for k in (preferred, *TEXT_KEYS) if k not in extra)
    item[text_key] = row.get("prompt")
    if row.get("note") is not None:
        item["note"] = row["note"]
    item.update(extra)  # other keys of the item, its own system_prompt among them
    return item
