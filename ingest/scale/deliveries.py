"""Splitting Scale files into records: one record per Turn, wherever the turn sits.

A file (``.json``: one object or an array; ``.jsonl``: one object per line) holds
Turns, lone Messages, Threads ``{id, turns, annotations, submissions}``, Tasks
``{task_id, project, status, threads, ...}``, a page of tasks ``{tasks: [...]}``, or
datasets-API tasks ``{task_id, dataset, delivery, response}`` (``datasets.py``).
Each turn is a record at its JSON path (``[2].threads[0].turns[1]``, or for JSONL
``12.threads[0].turns[1]``); the task and thread around it travel in
``Record.envelope``. A thread's own annotations are one more record, at the
thread's path, so a bad turn never takes them along into quarantine.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from warehouse.formatkit.readers import json_document_records, jsonl_records
from warehouse.formatkit.records import Record, RecordError
from warehouse.formatkit.source import SourceFile

from ..fields import json_type, preview
from .datasets import is_dataset_task

#: envelope key marking the record of a thread's own annotations
THREAD = "thread_annotations"
#: envelope key marking a datasets-API task
DATASET_TASK = "dataset_task"


def scale_records(src: SourceFile) -> Iterator[Record]:
    documents = jsonl_records(src) if src.path.lower().endswith(".jsonl") else json_document_records(src)
    for doc in documents:
        if doc.error is not None or not isinstance(doc.value, dict):
            yield doc
        else:
            yield from _expand(doc)


def _expand(doc: Record) -> Iterator[Record]:
    value, loc, index = doc.value, doc.locator, doc.index
    if "messages" in value:
        yield doc
    elif is_dataset_task(value):
        doc.envelope = {DATASET_TASK: True}
        yield doc
    elif "threads" in value or "task_id" in value:
        yield from _task(value, loc, index, None)
    elif "turns" in value:
        yield from _thread(value, loc, index, {})
    elif isinstance(value.get("tasks"), list):
        page = {k: v for k, v in value.items() if k != "tasks"} or None
        for i, task in enumerate(value["tasks"]):
            sub = f"{loc}.tasks[{i}]"
            if isinstance(task, dict) and is_dataset_task(task):
                yield Record(sub, task, index=index, envelope={DATASET_TASK: True, "page": page})
            elif isinstance(task, dict):
                yield from _task(task, sub, index, page)
            else:
                yield _bad(sub, task, index, f"expected a JSON object for the task, got {json_type(task)} {preview(task)}")
    else:
        yield doc  # a turn, a lone message, or not Scale at all: the mapping says which


def _task(task: dict, loc: str, index: int | None, page: dict | None) -> Iterator[Record]:
    threads = task.get("threads")
    own = {k: v for k, v in task.items() if k != "threads"}
    if not threads:
        yield _bad(
            loc, own, index,
            f"Scale Task {task.get('task_id')!r} has no threads (status {task.get('status')!r}): Scale delivers threads "
            "only for completed tasks, so there is nothing to ingest",
        )
        return
    if not isinstance(threads, list):
        yield _bad(loc, own, index, f"threads: expected a list, got {json_type(threads)} {preview(threads)}", ".threads")
        return
    around = {"task": own, "delivery": page}
    for j, thread in enumerate(threads):
        sub = f"{loc}.threads[{j}]"
        if isinstance(thread, dict):
            yield from _thread(thread, sub, index, around)
        else:
            yield _bad(sub, thread, index, f"expected a JSON object for the thread, got {json_type(thread)} {preview(thread)}")


def _thread(thread: dict, loc: str, index: int | None, around: dict) -> Iterator[Record]:
    turns = thread.get("turns")
    own = {k: v for k, v in thread.items() if k != "turns"}
    if not turns:
        yield _bad(loc, own, index, "thread has no turns: a Scale thread holds its conversation in `turns`; nothing to ingest")
        return
    if not isinstance(turns, list):
        yield _bad(loc, own, index, f"turns: expected a list, got {json_type(turns)} {preview(turns)}", ".turns")
        return
    if own.get("annotations") not in (None, []):
        yield Record(loc, own, index=index, envelope={**around, THREAD: True})
    context = {k: v for k, v in own.items() if k != "annotations"}
    for k, turn in enumerate(turns):
        yield Record(f"{loc}.turns[{k}]", turn, index=index, envelope={**around, "thread": context, "thread_turn_index": k})


def _bad(loc: str, value: Any, index: int | None, message: str, sub: str = "") -> Record:
    return Record(loc, value, index=index, error=RecordError(message, sub_locator=sub))
