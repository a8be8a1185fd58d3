"""Splitting AfterImage files into rows.

* ``.jsonl`` (``JSONLStorage``): one row per line, locator = line number.
* ``.json`` from the server's ``ResultStore``: ``{"system_prompt_parts": [...]?,
  "conversations": [row, ...]}``; one record per row (``.conversations[3]``),
  the wrapper's other keys travel in the envelope to every row.
* ``.json`` holding one row (the docs' example) or an array of rows.
"""

from __future__ import annotations

from collections.abc import Iterator

from warehouse.formatkit.readers import json_document_records, jsonl_records
from warehouse.formatkit.records import Record
from warehouse.formatkit.source import SourceFile


def row_records(src: SourceFile) -> Iterator[Record]:
    if src.path.lower().endswith(".jsonl"):
        yield from jsonl_records(src)
        return
    for doc in json_document_records(src):
        if doc.error is None and not doc.locator and _is_wrapper(doc.value):
            envelope = {k: v for k, v in doc.value.items() if k != "conversations"}
            for i, row in enumerate(doc.value["conversations"]):
                yield Record(f".conversations[{i}]", row, index=i, envelope=envelope)
        else:
            yield doc  # a decode error, an element of a top-level array, or a single row


def _is_wrapper(value) -> bool:
    """A row's "conversations" holds messages; the wrapper's holds rows, which have their own."""
    if not isinstance(value, dict) or not isinstance(value.get("conversations"), list):
        return False
    if "system_prompt_parts" in value:
        return True
    return any(isinstance(e, dict) and "conversations" in e for e in value["conversations"])
