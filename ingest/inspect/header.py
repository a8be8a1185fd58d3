"""The log itself into an ``eval_logs`` row, and its reduced scores into ``score_reductions`` rows.

The header (``version``, ``status``, ``eval``, ``plan``, ``results``, ``stats``, ``error``, ...)
is one row per log, not repeated on its samples: they carry its ``eval_id`` (and ``run_id``,
``task``, the model) to join it. The spec's, results' and stats' fields that are columns
are taken out of them; the rest of each is kept in its JSON column, and the log's other keys
(``invalidated``, ``tags``, ``metadata``, ``log_updates``, ...) in ``extra``.
"""

from __future__ import annotations

from warehouse.formatkit.records import Mapped, Record, RecordContext

from ..fields import Fields, as_fields
from .files import not_a_log
from .scores import score_columns


def map_log(record: Record, ctx: RecordContext) -> Mapped:
    log = record.value
    if not isinstance(log, dict) or not isinstance(log.get("eval"), dict):
        raise not_a_log(log)
    f = Fields(log)
    spec = Fields(f.object("eval"), ".eval")
    results = as_fields(f.raw("results") or {}, "results", ".results")
    stats = as_fields(f.raw("stats") or {}, "stats", ".stats")
    row = {
        "eval_id": spec.id("eval_id"),
        "run_id": spec.id("run_id"),
        "task": spec.text("task"),
        "task_id": spec.id("task_id"),
        "task_version": spec.id("task_version"),
        "model": spec.text("model"),
        "created": spec.text("created"),
        "status": f.text("status"),
        "log_version": f.int("version"),
        "started_at": stats.text("started_at"),
        "completed_at": stats.text("completed_at"),
        "total_samples": results.int("total_samples"),
        "completed_samples": results.int("completed_samples"),
        "spec": spec.rest(),
        "plan": f.raw("plan"),
        "results": results.rest() if "results" in log else None,
        "stats": stats.rest() if "stats" in log else None,
        "eval_error": f.raw("error"),
    }
    extra = f.rest() or {}
    envelope = record.envelope or {}
    for key in ("journal_start", "members", "reductions"):  # what the archive or the reductions add (files.py)
        if key in envelope:
            extra[key] = envelope[key]
    row["extra"] = extra or None
    return {"eval_logs": [row]}


def map_reduction(record: Record, ctx: RecordContext) -> Mapped:
    """``reductions[i].samples[j]``: one sample's score of one scorer, reduced over its epochs."""
    item = as_fields(record.value, "reduced score")
    envelope = record.envelope or {}
    head = Fields(dict(envelope.get("head") or {}))
    row = {
        "eval_id": (envelope.get("eval") or {}).get("eval_id"),
        "sample_id": item.id("sample_id"),
        "scorer": head.text("scorer"),
        "reducer": head.text("reducer"),
        **score_columns(item),
    }
    extra = item.rest() or {}
    if head.rest():
        extra["reduction"] = head.rest()
    row["extra"] = extra or None
    return {"score_reductions": [row]}
