"""The parts of an Inspect log, in the order they are read: from a decoded log, or streamed.

A log is one object ``{version, status, eval, plan, results, stats, ..., samples: [...],
reductions: [...]}``; a ``.eval`` archive holds the same parts as members. Both readers
(``files.py``) turn a log into these parts, so one consumer makes the records:

* ``("header", key, value)``: a key of the log other than ``samples`` and ``reductions``;
* ``("sample", i, sample)``: ``samples[i]``;
* ``("reduction", i, j, head, item)``: ``reductions[i].samples[j]``, with ``head`` the keys
  of ``reductions[i]`` read before its ``samples`` (``scorer``, ``reducer``);
* ``("reductions_left", i, keys)``: keys of ``reductions[i]`` that none of its items carries
  (an element with no samples; a key written after its samples, when streamed);
* ``("bad_reduction", i, value)``: ``reductions[i]`` that is not an object.

A decoded log gives its header keys first, whatever their order. A streamed one (a
``.json`` log over the record limit, or a ``reductions.json`` member over it) is read
with ijson's events, one sample built at a time, in the file's order: Inspect writes
the eval spec before the samples and a reduction's ``scorer`` before its samples.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

_OPEN = ("start_map", "start_array")
_CLOSE = ("end_map", "end_array")

Event = tuple[str, str, Any]


def decoded_parts(log: dict) -> Iterator[tuple]:
    for key, value in log.items():
        if key not in ("samples", "reductions") or not isinstance(value, list):
            yield ("header", key, value)
    samples = log.get("samples")
    if isinstance(samples, list):
        for i, sample in enumerate(samples):
            yield ("sample", i, sample)
    reductions = log.get("reductions")
    if isinstance(reductions, list):
        yield from decoded_reductions(reductions)


def decoded_reductions(elements: list) -> Iterator[tuple]:
    for i, element in enumerate(elements):
        if not isinstance(element, dict):
            yield ("bad_reduction", i, element)
            continue
        items = element.get("samples")
        head = {k: v for k, v in element.items() if k != "samples" or not isinstance(items, list)}
        for j, item in enumerate(items if isinstance(items, list) else ()):
            yield ("reduction", i, j, head, item)
        if not (isinstance(items, list) and items):
            yield ("reductions_left", i, head)


def streamed_parts(events: Iterator[Event]) -> Iterator[tuple]:
    """The parts of a log read as ijson events (``ijson.parse``). ValueError when the log is not an object."""
    _, event, _ = next(events, ("", "end", None))
    if event != "start_map":
        raise ValueError("its top level is not a JSON object")
    for _, event, key in events:
        if event == "end_map":
            return
        first = next(events)
        if key == "samples" and first[1] == "start_array":
            for i, start in enumerate(_elements(events)):
                yield ("sample", i, value(events, start))
        elif key == "reductions" and first[1] == "start_array":
            yield from streamed_reductions(events)
        else:
            yield ("header", key, value(events, first))


def streamed_reductions(events: Iterator[Event]) -> Iterator[tuple]:
    """The parts of an array of reductions whose ``start_array`` was read."""
    for i, start in enumerate(_elements(events)):
        if start[1] != "start_map":
            yield ("bad_reduction", i, value(events, start))
            continue
        head: dict = {}
        late: dict = {}  # keys after the samples: the items already given could not carry them
        given = 0
        for _, event, key in events:
            if event == "end_map":
                break
            first = next(events)
            if key == "samples" and first[1] == "start_array":
                for j, item in enumerate(_elements(events)):
                    yield ("reduction", i, j, dict(head), value(events, item))
                    given += 1
            else:
                (late if given else head)[key] = value(events, first)
        if not given:
            yield ("reductions_left", i, head)
        elif late:
            yield ("reductions_left", i, late)


def value(events: Iterator[Event], first: Event) -> Any:
    """The JSON value whose first event is ``first``, built from the events that follow it."""
    if first[1] not in _OPEN:
        return first[2]
    import ijson

    builder = ijson.ObjectBuilder()
    builder.event(first[1], first[2])
    depth = 1
    for _, event, v in events:
        builder.event(event, v)
        if event in _OPEN:
            depth += 1
        elif event in _CLOSE:
            depth -= 1
            if depth == 0:
                return builder.value
    raise ValueError("the JSON ends inside a value")


def _elements(events: Iterator[Event]) -> Iterator[Event]:
    """After an array's ``start_array``: the first event of each element (the caller reads the
    rest of the element, with ``value``, before asking for the next)."""
    for event in events:
        if event[1] == "end_array":
            return
        yield event
