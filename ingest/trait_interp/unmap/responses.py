"""One ``responses`` row (with its turns and sentences) back into a trait-interp response record.

The reverse of ``ingest/trait_interp/responses.py``: the flat schema
(docs/response_schema.md), every ``extra`` key back at the top level. Legacy
shapes come out flat (the metadata wrapper's fields at the top level, its other
keys in ``metadata``), except a legacy nested record whose ``prompt``/``response``
objects held more than text and tokens: it comes out nested, so those keys go
back where they were. The round trip is on the rows, not the bytes.

Responses of other formats get a minimal record instead (``trait_interp/foreign.py``).
"""

from __future__ import annotations

from warehouse.exports import kit

#: written when not null, in the order trait-interp's writers use
OPTIONAL = ("prefill_end", "inference_model", "prompt_note", "capture_date", "tags")
#: what marks a record of trait-interp's ResponseRecord writer (inference, rollouts: ``save_response_json``),
#: which writes ``prompt_note`` null too (a prompt without a note); other writers never write the key
RESPONSE_RECORD = ("inference_model", "capture_date")
SCORES = ("trait_score", "coherence_score")
TURN_KEYS = ("has_thinking", "has_tool_calls", "tool_names", "tool_call_id", "tool_name", "content", "reasoning_content")
#: keys the flat form writes itself: an ``extra`` holding one of them came from a nested record
_FLAT_KEYS = ("prompt", "response", "tokens", "token_ids", "prompt_end")


def native_record(row: dict, turns: list[dict] | None = None, sentences: list[dict] | None = None) -> dict:
    """The trait-interp record a ``responses`` row of format trait_interp was read from (up to its shape)."""
    extra = dict(kit.json_value(row.get("extra")) or {})
    nested = any(k in extra for k in _FLAT_KEYS)
    if nested:
        rec = _nested(row, extra)
    else:
        rec = {"prompt": row.get("prompt"), "response": row.get("response"), "system_prompt": row.get("system_prompt")}
        for key in ("tokens", "token_ids", "prompt_end"):
            if row.get(key) is not None:
                rec[key] = row[key]
    rec.setdefault("system_prompt", row.get("system_prompt"))
    written_null = not nested and all(row.get(k) is not None for k in RESPONSE_RECORD)
    for key in OPTIONAL:
        if row.get(key) is not None or (key == "prompt_note" and written_null):
            rec[key] = row.get(key)
    for key in SCORES:  # steering writers always write both, null or not
        if row.get(key) is not None or row.get("pipeline") == "steering":
            rec[key] = row.get(key)
    if turns:
        rec["turn_boundaries"] = [turn_boundary(t) for t in turns]
    if sentences:
        rec["sentence_boundaries"] = [sentence_boundary(s) for s in sentences]
    source = kit.json_value(row.get("rollout_source"))
    if source is not None:
        rec["source"] = source
    rec.update(extra)
    return rec


def _nested(row: dict, extra: dict) -> dict:
    """Legacy nested inference: prompt/response objects with text, tokens, token_ids (split at prompt_end)."""
    end = row.get("prompt_end")
    sides = {"prompt": {"text": row.get("prompt")}, "response": {"text": row.get("response")}}
    for key in ("tokens", "token_ids"):
        seq = row.get(key)
        if seq is not None:
            cut = len(seq) if end is None else end
            sides["prompt"][key] = seq[:cut]
            if seq[cut:]:  # an empty list and none read the same, but only none keeps a response n_tokens
                sides["response"][key] = seq[cut:]
    if end is not None and row.get("tokens") is None and row.get("token_ids") is None:
        sides["prompt"]["n_tokens"] = end  # the prompt's only length
    for side, obj in sides.items():
        left = extra.pop(side, None)
        if isinstance(left, dict):
            obj.update(left)
        elif left is not None:  # not from a nested record: cannot happen from ingest; keep it anyway
            extra[side] = left
    return {"prompt": sides["prompt"], "response": sides["response"]}


def turn_boundary(t: dict) -> dict:
    out = {"role": t.get("role"), "token_start": t.get("token_start"), "token_end": t.get("token_end")}
    for key in TURN_KEYS:
        if t.get(key) is not None:
            out[key] = t[key]
    out.update(kit.json_value(t.get("extra")) or {})
    return out


def sentence_boundary(s: dict) -> dict:
    out = {"sentence_num": s.get("sentence_num"), "token_start": s.get("token_start"), "token_end": s.get("token_end")}
    if s.get("cue_p") is not None:
        out["cue_p"] = s["cue_p"]
    out.update(kit.json_value(s.get("extra")) or {})
    return out
