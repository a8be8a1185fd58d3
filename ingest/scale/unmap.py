"""Rows back into Scale JSON: the mapping of docs/formats/scale.md in reverse (every format's is its ``unmap``).

Every row the ingest wrote knows where it came from: ``source_locator`` is its
JSON path (``[2].threads[0].turns[1].messages[3].annotations[0]``). Rebuilding
a top-level document (a Task, a page of tasks, a Thread, a Turn or a lone
Message) is putting each row's object back at its path. The path says which
task, thread, turn, message or content list an object belongs to, and where
in that list it goes. Lists are closed up at the end, so a subset (one of two
candidates) still gives dense lists.
"""

from __future__ import annotations

import re
from typing import Any

#: the top-level position a locator starts with: ``[3]`` (array element) or ``12`` (JSONL line)
_TOP = re.compile(r"\[\d+\]|\d+")
_STEP = re.compile(r"\.([A-Za-z_]\w*)|\[(\d+)\]")
_MESSAGE = re.compile(r"\.messages\[\d+\]$")

Path = tuple  # of str (object keys) and int (list positions)


def path_of(locator: str) -> Path:
    """The path of a locator inside its top-level document: ``[2].messages[1]`` -> ``("messages", 1)``."""
    top = _TOP.match(locator)
    pos, steps = (top.end() if top else 0), []
    while pos < len(locator):
        step = _STEP.match(locator, pos)
        if step is None:
            raise ValueError(f"scale export: cannot read the locator {locator!r} at {locator[pos:]!r}; "
                             "expected steps like .messages[1] (was the row ingested by the scale format?)")
        steps.append(step[1] if step[1] is not None else int(step[2]))
        pos = step.end()
    return tuple(steps)


# --- placing objects at their paths ------------------------------------------------------------


class Slots(dict):
    """A JSON list being filled: position -> item. Closed up into a list by ``finish``."""


def place(doc: dict, path: Path, value: Any) -> None:
    """Put ``value`` at ``path``; an object already there keeps its keys and gains the new ones."""
    node = doc
    for step, following in zip(path, path[1:]):
        child = node.get(step)
        if child is None:
            child = node[step] = Slots() if isinstance(following, int) else {}
        node = child
    there = node.get(path[-1]) if path else doc  # an empty path: the document itself (a whole-file message)
    if there is None:
        node[path[-1]] = value
    elif isinstance(there, dict) and isinstance(value, dict):
        for k, v in value.items():
            there.setdefault(k, v)


def finish(value: Any) -> Any:
    if isinstance(value, Slots):
        return [finish(v) for _, v in sorted(value.items())]
    if isinstance(value, dict):
        return {k: finish(v) for k, v in value.items()}
    return value


def number(x: float | None) -> float | int | None:
    """A whole DOUBLE as a JSON integer: Scale writes scores as integers (``max_total_score`` must be one)."""
    if isinstance(x, float) and x.is_integer() and abs(x) < 2**53:
        return int(x)
    return x


def known(**fields: Any) -> dict:
    """The fields that have a value (NULL columns are left out of the JSON)."""
    return {k: v for k, v in fields.items() if v is not None}


def with_extra(obj: dict, extra: dict | None) -> dict:
    """``obj`` plus the keys the ingest kept in ``extra`` (never over a mapped field)."""
    for k, v in (extra or {}).items():
        obj.setdefault(k, v)
    return obj


# --- one document -------------------------------------------------------------------------------


def rebuild(rows: dict[str, list[dict]]) -> dict:
    """One top-level document from its rows, by table (the rows of ``export.PARTS``)."""
    doc: dict = {}
    messages = {r["source_locator"] for r in rows.get("turns", ())}
    for r in rows.get("responses", ()):
        place_turn(doc, r, messages)
    for r in rows.get("turns", ()):
        place(doc, path_of(r["source_locator"]), message(r))
    for r in rows.get("rubric_criteria", ()):
        path = path_of(r["source_locator"])
        extra = dict(r["extra"] or {})
        rubric = known(criteria_definitions=Slots(), max_total_score=number(r["max_total_score"]))
        place(doc, path[:-2], with_extra(rubric, extra.pop("rubric", None)))
        place(doc, path, with_extra(known(id=r["criterion_id"], criterion=r["criterion"], weight=number(r["weight"]),
                                          annotations=Slots()), extra))
    for r in rows.get("reference_texts", ()):
        place(doc, path_of(r["source_locator"]), with_extra(known(content=r["content"], category=r["category"], url=r["url"]), r["extra"]))
    files: dict[str, list[tuple[Path, str]]] = {}
    for r in rows.get("attachments", ()):
        if r["annotation_id"] is None:
            place(doc, path_of(r["source_locator"]), attachment(r))
        elif r["content"] is not None:
            files.setdefault(r["annotation_id"], []).append((path_of(r["source_locator"]), r["content"]))
    for r in rows.get("chunks", ()):
        place(doc, path_of(r["source_locator"]), with_extra(known(type=r["chunk_type"], text=r["text"], annotations=Slots()), r["extra"]))
    for r in rows.get("evaluations", ()):
        path = path_of(r["source_locator"])
        if path[-1] in ("total_score", "percentage"):
            place(doc, path, number(r["score"]))
        else:  # a criterion evaluation
            place(doc, path, with_extra(known(criterion_definition_id=r["criterion"], score=number(r["score"]),
                                              annotations=Slots()), r["extra"]))
    for r in rows.get("annotations", ()):
        place(doc, path_of(r["source_locator"]), annotation(r, files.get(r["annotation_id"], ())))
    return finish(doc)


def place_turn(doc: dict, r: dict, messages: set[str]) -> None:
    """A turn's own fields, and those of the thread, task and page around it (``responses.extra``)."""
    record = _MESSAGE.sub("", r["source_locator"])
    turn = path_of(record)
    extra = dict(r["extra"] or {})
    thread = _inside(turn, "turns")
    if r["task_id"] is not None and thread is None:  # a datasets-API task: its keys are all in extra
        page = _inside(turn, "tasks")
        if page is not None:
            place(doc, page, with_extra({"tasks": Slots()}, extra.pop("page", None)))
        place(doc, turn, with_extra(known(task_id=r["task_id"]), extra))
        return
    task = _inside(thread, "threads")
    page = _inside(task, "tasks")
    # outermost first, so that each object's own keys come before its lists
    if page is not None:
        place(doc, page, with_extra({"tasks": Slots()}, extra.pop("delivery", None)))
    if task is not None:
        own = with_extra(known(task_id=r["task_id"]), extra.pop("task", None))
        place(doc, task, with_extra(own, {"threads": Slots()}))
    if thread is not None:
        own = with_extra(known(id=r["thread_id"], turns=Slots()), extra.pop("thread", None))
        place(doc, thread, with_extra(own, {"annotations": Slots()}))
    if record in messages:  # a lone message: its turns row is the whole record
        return
    place(doc, turn, with_extra(known(id=r["turn_id"], messages=Slots(), annotations=Slots()), extra))


def _inside(path: Path | None, key: str) -> Path | None:
    """The path of the object whose ``key`` list holds ``path`` (``.threads[0].turns[2]``, turns -> ``.threads[0]``)."""
    if path is None or path[-2:-1] != (key,):
        return None
    return path[:-2]


def message(r: dict) -> dict:
    extra = dict(r["extra"] or {})
    content_extra = dict(extra.pop("content", None) or {})
    reasoning = content_extra.pop("reasoning", None)  # the parts as written, when joining them lost something
    if reasoning is None and r["reasoning_content"] is not None:
        reasoning = [{"content": r["reasoning_content"]}]
    content = with_extra(known(text=r["content"], reasoning=reasoning), content_extra)
    parameters = with_extra(
        known(model=r["model"], temperature=number(r["temperature"]), max_completion_tokens=r["max_completion_tokens"],
              top_p=number(r["top_p"]), top_k=r["top_k"]),
        extra.pop("model_parameters", None),
    )
    m = known(role=r["role"], content=content, source_id=r["source_id"], model_parameters=parameters or None,
              annotations=Slots())
    leftovers = extra.pop("rubric_evaluations", None)  # the keys of each evaluation that have no row, by position
    if leftovers:
        m["rubric_evaluations"] = Slots({i: dict(left or {}) for i, left in enumerate(leftovers)})
    return with_extra(m, extra)


def annotation(r: dict, files: Any = ()) -> dict:
    value = r["value"]
    for path, content in files:  # a file annotation: its base64 contents live in attachments
        value = _with_content(value, path, content)
    a = known(
        id=r["source_annotation_id"], key=r["key"], type=r["annotation_type"], title=r["title"],
        description=r["description"], labels=r["labels"], not_applicable=r["not_applicable"],
        cannot_assess=r["cannot_assess"], metadata=r["metadata"], justification=r["note"], value=value,
        possible_values=r["possible_values"],
    )
    return with_extra(a, r["extra"])


def _with_content(value: Any, path: Path, content: str) -> Any:
    if path[-1] == "value" and isinstance(value, dict):
        return {"content": content, **value}
    k = path[-1]
    if isinstance(k, int) and isinstance(value, list) and k < len(value) and isinstance(value[k], dict):
        return [*value[:k], {"content": content, **value[k]}, *value[k + 1:]]
    return value


def attachment(r: dict) -> dict:
    f = known(
        content=r["content"], mime_type=r["mime_type"], scale_url=r["scale_url"], url=r["url"], name=r["name"],
        file_size_in_bytes=r["size_bytes"], duration=number(r["duration"]), transcript=r["transcript"],
        transcript_url=r["transcript_url"], transcript_start=number(r["transcript_start"]),
        transcript_end=number(r["transcript_end"]),
    )
    return with_extra(f, r["extra"])
