"""An Inspect score (``Score``: value, answer, explanation, metadata) into the columns of an
``evaluations`` row, or of a ``score_reductions`` row.

``value`` is kept as written (``value``); ``score`` and ``label`` read it: a number is the score; a
boolean is 1 or 0; text is the label, and a letter grade (Inspect's ``CORRECT`` C, ``PARTIAL`` P,
``INCORRECT`` I, ``NOANSWER`` N) is also the score Inspect's own metrics give it (1, 0.5, 0, 0:
``value_to_float``), on a ``0-1`` scale. A list or an object (several values of one scorer) is kept
in ``value`` alone.
"""

from __future__ import annotations

from typing import Any

from ..fields import Fields

#: Inspect's letter grades, as its metrics read them (inspect_ai.scorer.value_to_float)
LETTERS = {"C": 1.0, "P": 0.5, "I": 0.0, "N": 0.0}


def score_columns(s: Fields) -> dict[str, Any]:
    value = s.raw("value")
    score = scale = label = None
    if isinstance(value, bool):
        score, scale = float(value), "0-1"
    elif isinstance(value, (int, float)):
        score = float(value)
    elif isinstance(value, str):
        label = value
        if value in LETTERS:
            score, scale = LETTERS[value], "0-1"
    return {
        "score": score,
        "score_scale": scale,
        "label": label,
        "value": value,
        "answer": s.text("answer"),
        "feedback": s.text("explanation"),
        "metadata": s.raw("metadata"),
    }
