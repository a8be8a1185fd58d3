"""The ingest mapping in reverse (every format's is its ``unmap``): warehouse rows back into AfterImage rows.

``afterimage_row`` rebuilds a row the afterimage ingest read: every column goes
back to the field it came from and every ``extra`` key to the place the
mapping took it from, so ingesting the row again gives the same rows.
Responses of other formats get a minimal mapping instead (``foreign.py``).
docs/formats/afterimage.md#export
"""

from __future__ import annotations

from typing import Any

from warehouse.exports import kit

from .evaluation import FINAL, GRADE

#: the keys ``build_conversation_row`` always writes in ``metadata``, null or not
GENERATOR_METADATA = ("context_id", "context_ids", "persona_name", "persona_generation_depth")
#: declared by ``GenerationMetadata`` but not written by the generator: written back only when set
OPTIONAL_METADATA = ("instruction_index", "batch_id", "session_id")
CRITERIA = ("coherence", "factuality", "grounding", "helpfulness", "relevance")
GRADES = ("perfect", "good", "needs_improvement", "bad", "not_acceptable")


def afterimage_row(r: dict) -> dict:
    """An AfterImage row from a response the afterimage ingest wrote, with its turns and evaluations."""
    extra = dict(kit.json_value(r["extra"]) or {})
    row: dict[str, Any] = {
        "conversations": [_message(t) for t in r["turns"] or ()],
        "metadata": _metadata(r, extra.pop("metadata", None)),
        "instruction_context": r["instruction_context"],
        "response_context": r["response_context"],
        "persona": r["persona"],
    }
    if r["context"] is not None:
        row["context"] = r["context"]
    evaluation, final = _evaluation(r["evaluations"] or (), extra.pop("evaluation", None))
    if evaluation is not None:
        row["evaluation"] = evaluation
    if final is not None:
        row["final_score"] = final
    elif FINAL in extra:  # the model's 0.0 default on a row no judge saw
        row["final_score"] = extra.pop(FINAL)
    # the rest at the top: the row's other keys, and a wrapper row's system_prompt_parts (the ingest
    # reads a row's own as the wrapper's) and its other wrapper keys (under "wrapper")
    row.update(extra)
    return row


def _message(t: dict) -> dict:
    return {"role": t["role"], "content": t["content"], "reasoning_content": t["reasoning_content"],
            **(kit.json_value(t["extra"]) or {})}


def _metadata(r: dict, rest: dict | None) -> dict:
    """The metadata columns and the other metadata keys; ``{}`` when there were none (or metadata was null)."""
    if rest is None and all(r[k] is None for k in GENERATOR_METADATA + OPTIONAL_METADATA):
        return {}
    metadata = {k: r[k] for k in GENERATOR_METADATA if k != "context_ids" or r[k] is not None}
    metadata.update({k: r[k] for k in OPTIONAL_METADATA if r[k] is not None})
    metadata.update(rest or {})
    return metadata


def _evaluation(rows, rest: dict | None) -> tuple[dict | None, float | None]:
    """(``evaluation``, top-level ``final_score``) from the evaluations rows of one response."""
    criteria = [e for e in rows if e["criterion"] not in (GRADE, FINAL)]
    grade = next((e for e in rows if e["criterion"] == GRADE), None)
    final = next((e for e in rows if e["criterion"] == FINAL), None)
    # the first judge's rows: criteria scored in points, each with a "comment" instead of "feedback";
    # the ingest recognises them by that key, so it is written back
    points = any(e["score_scale"] == "points" for e in criteria) or (
        final is not None and final["score_scale"] == "0-100" and not final["score"] > 1)
    evaluation: dict[str, Any] = {}
    for e in criteria:
        entry_extra = kit.json_value(e["extra"]) or {}
        key = "comment" if points and "comment" not in entry_extra else "feedback"
        evaluation[e["criterion"]] = {"score": e["score"], key: e["feedback"], **entry_extra}
    if grade is not None:
        evaluation[GRADE] = grade["label"]
    evaluation.update(rest or {})
    top = None
    if final is not None:
        if final["source_locator"].endswith(f".evaluation.{FINAL}"):
            evaluation[FINAL] = final["score"]  # only the copy inside evaluation was there
        else:
            top = final["score"]
            inner = (kit.json_value(final["extra"]) or {}).get(f"evaluation.{FINAL}")
            if inner is not None:
                evaluation[FINAL] = inner
    if not evaluation:
        # a judge's 0.0 with an empty evaluation is a score; with no evaluation it would read as the default
        return ({} if top == 0.0 else None), top
    return evaluation, top


def fits_current_types(row: dict) -> bool:
    """Whether afterimage's current ``EvaluatedConversationWithContext`` accepts the row.

    Conversations and metadata always fit; an evaluation fits with the five
    current criteria (score and text feedback each) and one of the five grades.
    Legacy judges' evaluations (points and ``comment``, other criteria) do not.
    """
    evaluation = row.get("evaluation")
    if evaluation is None:
        return True
    if evaluation.get(GRADE) not in GRADES:
        return False
    for c in CRITERIA:
        entry = evaluation.get(c)
        if not isinstance(entry, dict) or not isinstance(entry.get("feedback"), str):
            return False
        if not isinstance(entry.get("score"), (int, float)) or isinstance(entry.get("score"), bool):
            return False
    return True
