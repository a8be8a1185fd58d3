"""One trait-interp response record into responses, turns, sentence_boundaries and evaluations.

Handles every shape the project's writers have produced:

* the flat schema (docs/response_schema.md): inference, extraction, steering, rollouts;
* pre-2026 legacy: nested inference ``{"prompt": {text, tokens, token_ids, n_tokens},
  "response": {...}, "metadata": {...}}``, the flat-with-``metadata``-wrapper form,
  extraction's ``scenario_idx``/``full_text``/token counts (kept in ``extra``), and
  steering's ``question`` for ``prompt``.

``dump_compact`` corrupts token strings that contain commas (NOTES.md): ``tokens``
is kept as written and flagged with ``tokens_suspect``; ``token_ids`` is trusted.
"""

from __future__ import annotations

from typing import Any

from warehouse.formatkit.records import Mapped, RecordContext, RecordError

from ..fields import Fields, as_fields, children, expect_object, json_type

#: fields of the metadata wrapper that the migration moved to the top level
_METADATA_FIELDS = ("inference_model", "prompt_note", "capture_date", "tags")
#: turn_boundaries entry keys that have columns of their own
_TURN_FIELDS = ("role", "token_start", "token_end", "has_thinking", "has_tool_calls", "tool_names", "tool_call_id", "tool_name")
_SCORES = ("trait_score", "coherence_score")


def map_response(value: Any, ctx: RecordContext) -> Mapped:
    obj = expect_object(value, "response record")
    f = Fields(obj)
    if "prompt" not in obj and "question" not in obj and "response" not in obj:
        keys = ", ".join(sorted(obj)[:8]) or "none"
        raise RecordError(
            f"not a trait-interp response: no prompt, question or response key (keys: {keys}); "
            "pass --format to read it as another format"
        )
    response_id = ctx.row_id()
    row: dict[str, Any] = {"response_id": response_id, "candidate_index": 0}
    extra: dict[str, Any] = {}

    if isinstance(obj.get("prompt"), dict) or isinstance(obj.get("response"), dict):
        _nested(f, row, extra)
    else:
        if "prompt" in obj:
            row["prompt"] = f.text("prompt")
            if "question" in obj:  # both present: keep the question, it is not ours to drop
                extra["question"] = f.raw("question")
        else:
            row["prompt"] = f.text("question")  # legacy steering
        row["response"] = f.text("response")
        row["tokens"] = f.texts("tokens")
        row["token_ids"] = f.ints("token_ids")
        row["prompt_end"] = f.int("prompt_end")

    row["system_prompt"] = f.text("system_prompt")
    row["prefill_end"] = f.int("prefill_end")
    for key in _METADATA_FIELDS:
        if key in obj:
            row[key] = getattr(f, "texts" if key == "tags" else "text")(key)
    wrapper = f.object("metadata")
    if wrapper is not None:
        _flatten_metadata(wrapper, row, extra)
    for key in _SCORES:
        row[key] = f.float(key)
    row["rollout_source"] = f.object("source")
    row["tokens_suspect"] = _tokens_suspect(row.get("tokens"), row.get("token_ids"))

    turns = _turns(f.list("turn_boundaries"), response_id, ctx)
    sentences = _sentences(f.list("sentence_boundaries"), response_id, ctx)
    rest = f.rest()
    if rest:
        extra.update(rest)
    row["extra"] = extra or None

    out: Mapped = {"responses": [row]}
    if turns:
        out["turns"] = turns
    if sentences:
        out["sentence_boundaries"] = sentences
    evaluations = [
        {"response_id": response_id, "criterion": key, "score": row[key]} for key in _SCORES if row.get(key) is not None
    ]
    if evaluations:
        out["evaluations"] = evaluations
    return out


_SIDE_KEYS = ("text", "tokens", "token_ids")


def _nested(f: Fields, row: dict, extra: dict) -> None:
    """Legacy nested inference: prompt/response are objects with text, tokens, token_ids, n_tokens."""
    objects = [f.obj[side] for side in ("prompt", "response") if isinstance(f.obj.get(side), dict)]
    if not any(k in o for o in objects for k in _SIDE_KEYS):
        keys = ", ".join(sorted({k for o in objects for k in o})[:8]) or "none"
        raise RecordError(
            "not a trait-interp response: the legacy nested form {\"prompt\": {\"text\", \"tokens\", ...}, "
            f"\"response\": {{\"text\", ...}}}} needs text, tokens or token_ids in its objects (keys there: {keys}); "
            "pass --format to read it as another format"
        )
    sides = {}
    for side in ("prompt", "response"):
        v = f.raw(side)
        sides[side] = as_fields({} if v is None else v, side, f".{side}")
    p, r = sides["prompt"], sides["response"]
    row["prompt"], row["response"] = p.text("text"), r.text("text")
    p_tokens, r_tokens = p.texts("tokens"), r.texts("tokens")
    p_ids, r_ids = p.ints("token_ids"), r.ints("token_ids")
    if p_tokens is not None:
        row["tokens"] = p_tokens + (r_tokens or [])
    if p_ids is not None:
        row["token_ids"] = p_ids + (r_ids or [])
    p_count = p.int("n_tokens")
    r.int("n_tokens")
    known = p_ids if p_ids is not None else p_tokens
    row["prompt_end"] = len(known) if known is not None else p_count
    for side, part in sides.items():
        left = part.rest() or {}
        n = part.obj.get("n_tokens")
        if n is not None:  # kept as written, even where the token lists tell it: nothing of the source is dropped
            left["n_tokens"] = n
        if left:
            extra[side] = left


def _flatten_metadata(wrapper: dict, row: dict, extra: dict) -> None:
    m = Fields(wrapper, ".metadata")
    for key in _METADATA_FIELDS:
        if key in wrapper and row.get(key) is None:
            row[key] = m.texts(key) if key == "tags" else m.text(key)
    left = m.rest()
    if left:
        extra["metadata"] = left


def _tokens_suspect(tokens: list[str] | None, token_ids: list[int] | None) -> bool | None:
    if tokens is None:
        return None
    if token_ids is not None and len(tokens) != len(token_ids):
        return True
    # dump_compact splits inlined arrays on "," and re-joins with ", ": every token
    # it touched now holds ", ". Tokens without it are exactly as written. (Joined with
    # a separator no token holds, so ", " cannot form across two tokens.)
    return ", " in "\x00".join(tokens)


def _turns(entries: list | None, response_id: str, ctx: RecordContext) -> list[dict]:
    rows = []
    for i, t, locator in children(entries, ".turn_boundaries", "turn boundary", ctx):
        rows.append(
            {
                "response_id": response_id,
                "turn_index": i,
                "role": t.text("role"),
                "token_start": t.int("token_start"),
                "token_end": t.int("token_end"),
                "has_thinking": t.bool("has_thinking"),
                "has_tool_calls": t.bool("has_tool_calls"),
                "tool_names": t.texts("tool_names"),
                "tool_call_id": t.text("tool_call_id"),
                "tool_name": t.text("tool_name"),
                "content": t.text("content"),
                "reasoning_content": t.text("reasoning_content"),
                "source_locator": locator,
                "extra": t.rest(),
            }
        )
    return rows


def _sentences(entries: list | None, response_id: str, ctx: RecordContext) -> list[dict]:
    rows = []
    for i, s, locator in children(entries, ".sentence_boundaries", "sentence boundary", ctx):
        num = s.int("sentence_num")
        rows.append(
            {
                "response_id": response_id,
                "sentence_num": i if num is None else num,
                "token_start": s.int("token_start"),
                "token_end": s.int("token_end"),
                "cue_p": s.float("cue_p"),
                "source_locator": locator,
                "extra": s.rest(),
            }
        )
    return rows


__all__ = ["map_response", "json_type"]
