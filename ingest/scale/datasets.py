"""Scale datasets-API tasks (``GET /v2/datasets/tasks``): ``{task_id, dataset, delivery, response}``.

``DatasetTask`` in scaleapi's generated models: ``response`` is a free-form
object, the answer a dataset project delivers. When it holds a ``prompt`` or an
``answer`` text (the common prompt/answer shape) the task is a response: one
``responses`` row with ``task_id``, ``prompt`` = ``response.prompt`` and
``response`` = ``response.answer``. The task's other keys (``dataset``,
``delivery``, an expanded Dataset or Delivery object) go to ``extra``,
``response`` is kept there verbatim too, so the export writes the task back as
it was, and the keys of a page of tasks around it (``next_token``) to
``extra.page``. A task whose ``response`` holds neither text is a near miss: quarantined,
saying so.
"""

from __future__ import annotations

from typing import Any

from warehouse.formatkit.records import Mapped, RecordContext, RecordError

from ..fields import as_fields, as_text, json_type, preview

#: the keys of a DatasetTask that a Task {task_id, project, batch, status, threads} never has
MARKERS = ("dataset", "delivery")


def is_dataset_task(value: dict) -> bool:
    return "task_id" in value and "threads" not in value and any(k in value for k in MARKERS)


def map_dataset_task(value: Any, page: dict | None, ctx: RecordContext) -> Mapped:
    """``page``: the other keys of the page of tasks the task was delivered in (``next_token``)."""
    f = as_fields(value, "Scale dataset task")
    task_id = f.id("task_id")
    response = f.raw("response")
    shape = "a Scale dataset task {task_id, dataset, delivery, response: {prompt, answer}}"
    if not isinstance(response, dict):
        got = "none" if response is None else f"{json_type(response)} {preview(response)}"
        raise RecordError(f"{shape} needs a response object; got {got}", sub_locator=".response")
    prompt = as_text(response.get("prompt"), "prompt", ".response.prompt")
    answer = as_text(response.get("answer"), "answer", ".response.answer")
    if prompt is None and answer is None:
        keys = ", ".join(sorted(response)[:8]) or "none"
        raise RecordError(
            f"{shape}: its response holds neither a prompt nor an answer text (keys: {keys}); "
            "nothing to read as a response",
            sub_locator=".response",
        )
    row = {
        "response_id": ctx.row_id(),
        "candidate_index": 0,
        "task_id": task_id,
        "prompt": prompt,
        "response": answer,
        # the response object as written (its prompt and answer are also the columns above)
        "extra": dict(f.rest() or {}, response=response),
    }
    if page:
        row["extra"]["page"] = page
    return {"responses": [row]}
