"""A prompt item (prompt file and/or platform item JSON) into responses, turns and annotations.

``responses``: one row per model answer (candidate), in annotation order, with
the text of the prompt it answers; an item without answers gives one row with
``response`` NULL (the last user prompt as ``prompt``). ``turns``: the prompt
parts; an answer is not a message there, ``answers_turn`` says which prompt it
follows in the conversation. ``annotations``: every annotation. The prompt parts belong to the
single response when there is one, else to none (``response_id`` NULL: join on
``record_id``).
"""

from __future__ import annotations

import re
from typing import Any

from warehouse.formatkit.records import Mapped, RecordContext, RecordError

from ..fields import preview
from . import detect
from .platform import Item, read_item
from .prompts import Prompt, key_locator, read_prompts
from .take import Taker


def read_document(doc: dict, shape_dltype: str) -> tuple[Taker, str]:
    """The document's dltype (declared, else the one its shape shows); shebang and dltype are
    taken so they do not reach ``extra``."""
    t = Taker(doc)
    shebang = t.text("shebang")
    if shebang != "dataloop":
        raise RecordError(f"shebang: expected \"dataloop\", got {preview(shebang)}", sub_locator=".shebang")
    declared = t.text("metadata.dltype")
    return t, declared or shape_dltype


def item_rows(item: Item | None) -> tuple[dict, dict | None]:
    """Columns every response of the item carries, and the item JSON's leftovers."""
    if item is None:
        return {}, None
    return dict(item.columns), item.extra


def merge_extra(document_left: dict | None, item_left: dict | None) -> dict | None:
    """The response's ``extra``: the document's leftover fields, and the item JSON's under ``item``."""
    extra = {document_key(k): v for k, v in (document_left or {}).items()}
    if item_left:
        extra["item"] = item_left
    return extra or None


#: ``extra.item`` holds the item JSON's leftovers, so a document's own top-level field ``item`` is
#: kept as ``item~`` (and ``item~`` as ``item~~``, ...): neither overwrites the other, and the
#: exporter (``unmap``) tells them apart
_ITEM_KEY = re.compile(r"item~*")


def document_key(key: str) -> str:
    """Where a document's leftover top-level field ``key`` is kept in ``extra``."""
    return key + "~" if _ITEM_KEY.fullmatch(key) else key


def document_key_back(key: str) -> str:
    """The document field an ``extra`` key (other than ``item``) was kept for: ``document_key`` reversed."""
    return key[:-1] if key != "item" and _ITEM_KEY.fullmatch(key) else key


def map_prompt_item(doc: dict | None, item_json: Any, item_sub: str, ctx: RecordContext) -> Mapped:
    prompts: list[Prompt] = []
    document_left = None
    dltype = None
    if doc is not None:
        t, dltype = read_document(doc, detect.PROMPT)
        if "prompts" not in doc:
            raise RecordError("a prompt document needs a prompts object ({\"1\": [...]}); none found")
        prompts = read_prompts(t.raw("prompts"), ctx)
        document_left = t.left()
    item = read_item(item_json, item_sub, ctx, dltype) if item_json is not None else None
    columns, item_left = item_rows(item)
    if dltype is not None:
        columns["dltype"] = dltype
    base = dict(columns, extra=merge_extra(document_left, item_left))
    by_key = {p.key: p for p in prompts}
    system = [p.text for p in prompts if p.role == "system" and p.text]
    base["system_prompt"] = "\n".join(system) if system else None

    annotations = item.annotations if item else []
    answers = [a for a in annotations if a.answer is not None]
    responses = []
    for n, a in enumerate(answers):
        ans = a.answer
        prompt = by_key.get(ans.prompt_key)
        responses.append(dict(
            base,
            response_id=ctx.row_id(a.sub),
            source_locator=ctx.locate(a.sub),
            candidate_index=n,
            prompt=prompt.text if prompt else None,
            prompt_key=ans.prompt_key,
            answers_turn=prompt.index if prompt else None,  # the answer comes right after its prompt
            response=ans.response,
            response_ref=ans.response_ref,
            response_mimetype=ans.response_mimetype,
            inference_model=ans.inference_model,
            model_id=ans.model_id,
            model_confidence=ans.model_confidence,
            capture_date=ans.capture_date,
        ))
        a.row["response_id"] = responses[-1]["response_id"]
    if not responses:
        users = [p for p in prompts if p.role == "user"] or prompts
        last = users[-1] if users else None
        responses.append(dict(base, response_id=ctx.row_id(), candidate_index=0,
                              prompt=last.text if last else None, prompt_key=last.key if last else None))

    owner = responses[0]["response_id"] if len(responses) == 1 else None
    turns = [dict(row, response_id=owner) for p in prompts for row in p.rows]
    for a in annotations:
        prompt = by_key.get(a.row["prompt_key"])
        if prompt is not None:
            a.row["turn_index"] = prompt.index
            a.row["target"] = ".prompts" + key_locator(prompt.key)
    out: Mapped = {"responses": responses}
    if turns:
        out["turns"] = turns
    if annotations:
        out["annotations"] = [a.row for a in annotations]
    return out

