"""A row's judge verdict: ``evaluation`` and ``final_score`` into ``evaluations`` rows.

One row per criterion (score + feedback), one for ``overall_grade`` (label) and
one for ``final_score`` (score). Every score carries its ``score_scale``:

* the current judge (``ConversationJudge``/``CompositeEvaluator``) writes 0-1
  criterion scores and a 0-1 final score;
* the first judge (Gemini ``SyntheticDatasetEvaluator``) wrote integer points
  with a ``comment`` per criterion and ``final_score = 50 + sum(points)``,
  copied inside ``evaluation`` too: criterion scores ``points``, final ``0-100``.

A final score above 1 is on the 0-100 scale whatever the shape: no 0-1 writer
can produce it.
"""

from __future__ import annotations

from warehouse.formatkit.records import RecordContext

from ..fields import Fields

GRADE = "overall_grade"
FINAL = "final_score"


def evaluation_rows(f: Fields, response_id: str, ctx: RecordContext, extra: dict) -> list[dict]:
    evaluation = f.object("evaluation")
    final = f.float(FINAL)
    rows: list[dict] = []
    inner_final = None
    points = False
    if evaluation is not None:
        e = Fields(evaluation, ".evaluation")
        points = any(isinstance(v, dict) and "comment" in v and "feedback" not in v for v in evaluation.values())
        for name, value in evaluation.items():
            if name not in (GRADE, FINAL) and isinstance(value, dict):
                e.raw(name)
                rows.append(_criterion(name, value, "points" if points else "0-1", response_id, ctx))
        grade = e.text(GRADE)
        if grade is not None:
            rows.append(_row(response_id, ctx, f".evaluation.{GRADE}", criterion=GRADE, label=grade))
        inner_final = e.float(FINAL)
        left = e.rest()
        if left:
            extra["evaluation"] = left
    at = f".{FINAL}"
    if final is None and inner_final is not None:
        final, at = inner_final, f".evaluation.{FINAL}"
    if final is None:
        return rows
    if evaluation is None and final == 0.0:
        # EvaluatedConversationWithContext's default for a row no judge saw: not a score of 0.
        extra[FINAL] = final
        return rows
    row = _row(response_id, ctx, at, criterion=FINAL, score=final, score_scale="0-100" if points or final > 1 else "0-1")
    if inner_final is not None and inner_final != final:
        row["extra"] = {"evaluation.final_score": inner_final}
    rows.append(row)
    return rows


def _criterion(name: str, value: dict, scale: str, response_id: str, ctx: RecordContext) -> dict:
    sub = f".evaluation.{name}"
    c = Fields(value, sub)
    score = c.float("score")
    feedback = c.text("feedback")
    if feedback is None and "comment" in value:  # the first judge's name for it
        feedback = c.text("comment")
    row = _row(response_id, ctx, sub, criterion=name, score=score, feedback=feedback)
    row["score_scale"] = scale if score is not None else None
    row["extra"] = c.rest()
    return row


def _row(response_id: str, ctx: RecordContext, sub: str, **values) -> dict:
    return {"response_id": response_id, "source_locator": ctx.locate(sub), **values}
