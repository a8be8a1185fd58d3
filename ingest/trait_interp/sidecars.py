"""The files that sit beside trait-interp responses: prompt sets and generation parameters."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from warehouse.formatkit.readers import json_document_records
from warehouse.formatkit.records import Mapped, Record, RecordContext, RecordError
from warehouse.formatkit.source import SourceFile

from ..fields import Fields, as_fields, expect_object, id_text, json_type
from .kinds import KIND, PROMPT_SET, responses_dir_of_metadata

# --- prompt sets ----------------------------------------------------------------------
#
# Three shapes (NOTES.md): {name, description, system_prompt?, prompts: [{id, text, note, ...}]},
# a bare array [{id, prompt}] (normalize_prompt_item copies prompt -> text), and steering
# question sets {"questions": [...]} whose ids are the question positions. A question is a
# string or {"question": ...}, in a "questions" list or a bare array (trait-interp's loader
# accepts all four).

#: the keys a prompt item's text may be under, in the order they are read
TEXT_KEYS = ("text", "prompt", "question")


def prompt_set_records(src: SourceFile) -> Iterator[Record]:
    """One record per prompt; the set's own fields travel in the envelope, under ``set``."""
    for doc in json_document_records(src):
        yield from set_records(doc)


def set_records(doc: Record) -> Iterator[Record]:
    """The records of one decoded set document (or the element of a bare array, passed through)."""
    if doc.error is not None:
        yield doc
        return
    if doc.locator:  # an element of a bare array: a prompt, with no set fields
        doc.envelope = {KIND: PROMPT_SET}
        yield doc
        return
    value = doc.value
    if not isinstance(value, dict):
        yield Record("", error=RecordError(f"prompt set: expected an object or an array, got {json_type(value)}"))
        return
    if isinstance(value.get("prompts"), list):
        key = "prompts"
    elif isinstance(value.get("questions"), list):
        key = "questions"
    else:
        keys = ", ".join(sorted(value)[:8])
        yield Record("", value, error=RecordError(
            f"prompt set: expected a 'prompts' or 'questions' list (keys: {keys}); a steering question set is "
            "{\"questions\": [...]}, an inference prompt set {\"prompts\": [{\"id\", \"text\"}, ...]}"))
        return
    items = value[key]
    if not items:
        # No prompt to carry the set's own fields (a name, an eval_prompt): the set is one row of its own,
        # prompt_id NULL, so nothing of the file is lost. The empty list stays in extra.set, as written.
        yield Record("", None, envelope={KIND: PROMPT_SET, "set": dict(value)})
        return
    envelope = {KIND: PROMPT_SET, "set": {k: v for k, v in value.items() if k != key}}
    for i, item in enumerate(items):
        yield Record(f".{key}[{i}]", item, index=i, envelope=envelope)


def map_prompt(record: Record, ctx: RecordContext) -> Mapped:
    env = Fields(dict((record.envelope or {}).get("set") or {}))
    item = record.value
    if item is None and not record.locator:  # a set without prompts: the set's row
        row: dict[str, Any] = {"prompt_id": None, "prompt": None, "note": None}
    elif isinstance(item, str):  # a steering question: its id is its position
        row = {"prompt_id": str(record.index), "prompt": item, "note": None}
    else:
        f = as_fields(item, "prompt")
        texts = {k: f.text(k) for k in TEXT_KEYS if k in item}
        given = [v for v in texts.values() if v is not None]
        row = {
            "prompt_id": f.id("id"),
            "prompt": given[0] if given else None,
            "note": f.text("note"),  # as written: '' stays '' (the writers turn it into a null prompt_note)
        }
        if row["prompt_id"] is None:
            row["prompt_id"] = str(record.index)
        extra = f.rest() or {}
        for k, v in texts.items():  # a second text key that says something else is kept
            if v is not None and v != row["prompt"]:
                extra[k] = v
        if extra:
            row["extra"] = extra
        if "system_prompt" in item:
            row["system_prompt"] = as_system_prompt(item["system_prompt"])
    row.setdefault("system_prompt", as_system_prompt(env.raw("system_prompt")))
    row["set_name"] = env.text("name")
    row["set_description"] = env.text("description")
    rest = env.rest()
    if rest:
        row["extra"] = dict(row.get("extra") or {}, set=rest)
    return {"prompts": [row]}


def as_system_prompt(v: Any) -> str | None:
    if v is None or isinstance(v, str):
        return v
    raise RecordError(f"system_prompt: expected a string, got {json_type(v)}")


# --- generation parameters ---------------------------------------------------------------


def map_generation_metadata(value: Any, ctx: RecordContext) -> Mapped:
    obj = expect_object(value, "generation metadata")
    f = Fields(obj)
    model = f.text("model")
    model_name = f.text("model_name")  # the older writer's key
    row = {
        "responses_dir": responses_dir_of_metadata(ctx.path),
        "model": model if model is not None else model_name,
        "temperature": f.float("temperature"),
        "max_new_tokens": f.int("max_new_tokens"),
        "rollouts": f.int("rollouts"),
        "timestamp": _timestamp(f.raw("timestamp")),
        "params": obj,
    }
    return {"generation_metadata": [row]}


def _timestamp(v: Any) -> str | None:
    if v is None or isinstance(v, str):
        return v
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return str(v)
    raise RecordError(f"timestamp: expected a string, got {json_type(v)}")


__all__ = ["prompt_set_records", "set_records", "map_prompt", "map_generation_metadata", "id_text"]
