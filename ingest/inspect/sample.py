"""One Inspect sample (one epoch of it) into a ``responses`` row, its ``turns``, ``evaluations`` and
``sample_events``.

The response is the sample's conversation as run (``messages``: the input, what the solvers
added, the model's answers, tool calls and results): ``response`` is its last assistant
message, ``prompt`` the user message that message answers, ``system_prompt`` the system
messages before it (``messages.exchange``). ``inference_model`` is the log's model
(``eval.model``); the model of each message is ``turns.model``. Every score is an
``evaluations`` row (``scores.py``), every event of the transcript a ``sample_events`` row.
The sample's other fields (``output``, ``store``, ``model_usage``, ``error``, ``limit``,
``attachments``, ``events_data``, timings, ...) stay in ``extra`` as written.
"""

from __future__ import annotations

from typing import Any

from warehouse.formatkit.records import Mapped, Record, RecordContext, RecordError, key_step

from ..fields import Fields, as_fields, children, expect_object, json_type, preview
from .messages import exchange, turn_rows
from .scores import score_columns


def map_sample(record: Record, ctx: RecordContext) -> Mapped:
    sample = expect_object(record.value, "Inspect sample")
    if "input" not in sample and "messages" not in sample:
        keys = ", ".join(sorted(sample)[:8]) or "none"
        raise RecordError(f"not an Inspect sample: no input or messages (keys: {keys}); a sample is "
                          "{id, epoch, input, target, messages, output, scores, metadata, events, ...}")
    spec = (record.envelope or {}).get("eval") or {}
    f = Fields(sample)
    response_id = ctx.row_id()
    attachments = f.object("attachments") or {}
    turns = turn_rows(f.list("messages"), response_id, attachments, ctx)
    prompt, response, system_prompt = exchange(turns)
    row: dict[str, Any] = {
        "response_id": response_id,
        "candidate_index": 0,
        "prompt": prompt,
        "response": response,
        "system_prompt": system_prompt,
        "inference_model": spec.get("model"),
        "sample_id": f.id("id"),
        "epoch": f.int("epoch"),
        "task": spec.get("task"),
        "eval_id": spec.get("eval_id"),
        "run_id": spec.get("run_id"),
        "sample_uuid": f.id("uuid"),
        "input": f.raw("input"),
        "targets": _targets(f.raw("target")),
        "choices": f.texts("choices"),
        "metadata": f.raw("metadata"),
        "capture_date": f.text("completed_at"),
    }
    evaluations = _evaluations(f.object("scores"), response_id, ctx)
    events = _events(f.list("events"), response_id, ctx)
    extra = f.rest() or {}
    if "attachments" in sample:  # read to resolve references, and kept: the transcript points into them
        extra["attachments"] = sample["attachments"]
    row["extra"] = extra or None
    out: Mapped = {"responses": [row]}
    if turns:
        out["turns"] = turns
    if evaluations:
        out["evaluations"] = evaluations
    if events:
        out["sample_events"] = events
    return out


def _targets(target: Any) -> list[str] | None:
    if target is None or isinstance(target, list) and all(isinstance(t, str) for t in target):
        return target
    if isinstance(target, str):
        return [target]
    raise RecordError(f"target: expected a string or a list of strings, got {json_type(target)} {preview(target)}",
                      sub_locator=".target")


def _evaluations(scores: dict | None, response_id: str, ctx: RecordContext) -> list[dict]:
    rows = []
    for name, score in (scores or {}).items():
        sub = f".scores{key_step(name)}"
        s = as_fields(score, "score", sub)
        row = {"response_id": response_id, "criterion": name, **score_columns(s), "source_locator": ctx.locate(sub)}
        row["extra"] = s.rest()
        rows.append(row)
    return rows


def _events(events: list | None, response_id: str, ctx: RecordContext) -> list[dict]:
    return [
        {
            "response_id": response_id,
            "event_index": i,
            "event": e.text("event"),
            "timestamp": e.text("timestamp"),
            "working_start": e.float("working_start"),
            "span_id": e.text("span_id"),
            "source_locator": locator,
            "extra": e.rest(),
        }
        for i, e, locator in children(events, ".events", "event", ctx)
    ]
