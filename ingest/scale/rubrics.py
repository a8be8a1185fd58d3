"""Scale rubrics: criteria defined on a turn, and messages scored against them.

* ``turn.rubrics[r] = {criteria_definitions: [{id, criterion, weight, annotations}], max_total_score}``
  gives one ``rubric_criteria`` row per criterion; its annotations are turn-level.
* ``message.rubric_evaluations[r] = {criteria_evaluations: [{criterion_definition_id, score,
  annotations}], annotations, total_score, percentage}`` gives one ``evaluations`` row per
  criterion (criterion = the criterion's id, score unweighted), plus ``rubric_total_score``
  and ``rubric_percentage`` rows; its annotations are message-level.
"""

from __future__ import annotations

from warehouse.formatkit.records import Mapped, RecordContext

from ..fields import Fields, children
from .annotations import Target, fmt_number, map_annotations

TOTAL = "rubric_total_score"
PERCENTAGE = "rubric_percentage"


def map_rubrics(items: list | None, turn: Target, ctx: RecordContext, out: Mapped) -> list[float | None]:
    """Rows for a turn's ``rubrics``; returns each rubric's max_total_score (scales of the totals)."""
    maxima = []
    for r, f, _ in children(items, ".rubrics", "rubric"):
        maximum = f.float("max_total_score")
        maxima.append(maximum)
        definitions = f.list("criteria_definitions") or []
        rubric_rest = f.rest()
        for c, d, locator in children(definitions, f.sub + ".criteria_definitions", "criterion definition", ctx):
            target = Target("turn", d.sub, turn.response_id, None, turn.thread_id)
            map_annotations(d.raw("annotations"), d.sub + ".annotations", target, ctx, out)
            row = {
                "rubric_index": r,
                "criterion_index": c,
                "criterion_id": d.id("id"),
                "criterion": d.text("criterion"),
                "weight": d.float("weight"),
                "max_total_score": maximum,
                "source_locator": locator,
                "extra": d.rest(),
            }
            if rubric_rest:
                row["extra"] = dict(row["extra"] or {}, rubric=rubric_rest)
            out.setdefault("rubric_criteria", []).append(row)
    return maxima


def map_rubric_evaluations(
    items: list | None, sub: str, message: Target, maxima: list[float | None], ctx: RecordContext, out: Mapped
) -> list | None:
    """Rows for a message's ``rubric_evaluations`` at ``sub``; returns leftover keys per evaluation (or None)."""
    leftovers, any_left = [], False
    for _, e, locator in children(items, sub, "rubric evaluation", ctx):
        criteria = e.list("criteria_evaluations")
        for _, c, at in children(criteria, e.sub + ".criteria_evaluations", "criterion evaluation", ctx):
            _criterion(c, at, message, ctx, out)
        map_annotations(e.raw("annotations"), e.sub + ".annotations", Target("message", e.sub, *_links(message)), ctx, out)
        # A total is on the scale of its rubric when the turn has exactly that one rubric.
        maximum = maxima[0] if len(maxima) == 1 else None
        totals = (
            (TOTAL, e.float("total_score"), f"0-{fmt_number(maximum)}" if maximum is not None else None, ".total_score"),
            (PERCENTAGE, e.float("percentage"), "0-100", ".percentage"),
        )
        for name, score, scale, key in totals:
            if score is not None:
                out.setdefault("evaluations", []).append(
                    {**_eval_links(message), "criterion": name, "score": score, "score_scale": scale,
                     "source_locator": locator + key}
                )
        rest = e.rest()
        leftovers.append(rest)
        any_left = any_left or rest is not None
    return leftovers if any_left else None


def _criterion(c: Fields, locator: str, message: Target, ctx: RecordContext, out: Mapped) -> None:
    map_annotations(c.raw("annotations"), c.sub + ".annotations", Target("message", c.sub, *_links(message)), ctx, out)
    out.setdefault("evaluations", []).append(
        {
            **_eval_links(message),
            "criterion": c.id("criterion_definition_id"),
            "score": c.float("score"),
            "source_locator": locator,
            "extra": c.rest(),
        }
    )


def _links(message: Target) -> tuple:
    return message.response_id, message.turn_index, message.thread_id


def _eval_links(message: Target) -> dict:
    return {"response_id": message.response_id, "turn_index": message.turn_index}
