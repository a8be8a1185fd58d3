"""Many whole inference files mapped at once (the document path, ``Ingestor.fast_documents``).

A run of 20,000 inference files spent about half of its worker time in the per-record
machinery around ``map_response`` (``Fields``, a row dict per record, provenance, rows
turned to Arrow one dict at a time). Most inference files have one flat shape: the keys of
``_KEYS``, each of the type the record path accepts without converting it. Such a file is
taken here (``response_record``) and its row built column by column with the others of
its batch (``response_tables``); any other file (another key, a float where an integer
belongs, a nested legacy object, a top-level array, invalid JSON, a BOM) is left to
``map_response``, which maps or quarantines it exactly. tests/test_fast_documents.py holds
these rows to the record path's.
"""

from __future__ import annotations

from array import array
from typing import Any

import orjson
import pyarrow as pa

from warehouse.records import Record, stable_id
from warehouse.tables import TABLES
from warehouse.writer import CONVERSION_ERRORS

from .responses import _tokens_suspect

#: string-or-null keys, integer-or-null keys, list-of-strings-or-null keys
_TEXT = ("prompt", "response", "system_prompt", "inference_model", "prompt_note", "capture_date")
_INT = ("prompt_end", "prefill_end")
_TEXTS = ("tokens", "tags")
#: every key the record path maps to a column of its own with none left for ``extra``
_KEYS = frozenset((*_TEXT, *_INT, *_TEXTS, "token_ids"))
_INT64 = (-(2**63), 2**63)


def response_record(data: bytes) -> Record | None:
    """The record of a whole inference file (no BOM) when ``response_tables`` maps it exactly
    as ``map_response`` would, else None (the record path reads it)."""
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    if type(value) is not dict or not value.keys() <= _KEYS or ("prompt" not in value and "response" not in value):
        return None
    get = value.get
    for key in _TEXT:
        v = get(key)
        if v is not None and type(v) is not str:
            return None
    for key in _INT:  # the record path turns 45.0 into 45 and refuses booleans: left to it
        v = get(key)
        if v is not None and (type(v) is not int or not _INT64[0] <= v < _INT64[1]):
            return None
    for key in _TEXTS:
        if not _texts(get(key)):
            return None
    ids = get("token_ids")
    if ids is not None:
        if type(ids) is not list:
            return None
        try:
            array("q", ids)  # the record path's own check (fields.as_int_list): kept as written when it passes
        except (TypeError, OverflowError):
            return None
    return Record("", value)


def _texts(v: Any) -> bool:
    if v is None:
        return True
    if type(v) is not list:
        return False
    try:
        "".join(v)  # the record path's own check (fields.as_text_list)
    except TypeError:
        return False
    return True


def response_tables(docs: list[tuple[str, Record]], fmt: str) -> dict[str, pa.Table] | None:
    """``responses`` rows of records ``response_record`` took, one per file, in order; None when
    Arrow refuses one of their values (the worker then maps each record on its own)."""
    paths = [path for path, _ in docs]
    values = [record.value for _, record in docs]
    n = len(docs)
    ids = [stable_id(path, "") for path in paths]  # the record's id and its response's: both at locator ""

    def column(key: str) -> list:
        return [v.get(key) for v in values]

    tokens, token_ids = column("tokens"), column("token_ids")
    columns = {
        "response_id": ids,
        "record_id": ids,
        "source_format": [fmt] * n,
        "source_path": paths,
        "source_locator": [""] * n,
        "record_index": [None] * n,  # a whole-object file: no index
        "candidate_index": [0] * n,
        **{key: column(key) for key in (*_TEXT, *_INT, *_TEXTS)},
        "token_ids": token_ids,
        "tokens_suspect": [_tokens_suspect(t, i) for t, i in zip(tokens, token_ids)],
    }
    schema = TABLES["responses"].arrow_schema
    try:
        arrays = {key: pa.array(values, type=schema.field(key).type) for key, values in columns.items()}
    except CONVERSION_ERRORS:  # a value Arrow refuses (a boolean token id): each record goes through map
        return None
    return {"responses": pa.table(arrays)}
