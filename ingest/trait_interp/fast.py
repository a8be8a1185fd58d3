"""Many whole inference files mapped at once (the document path, ``Ingestor.fast_documents``).

A run of 20,000 inference files spent most of its worker time on Python objects: orjson
building ~400 token strings per file, the per-record machinery around ``map_response``
(``Fields``, a row dict, provenance) and Arrow converting those objects back. Most
inference files have one flat shape: the keys of ``_KEYS``, each of the type the record
path keeps as written. Such files are parsed here together by pyarrow's JSON reader into
the declared column types (``_arrow``), which refuses whatever the record path would
convert, refuse or keep in ``extra`` (another key, a float or boolean where an integer
belongs, a duplicate key, an object, a top-level array, invalid JSON or UTF-8). A group it
refuses is looked at file by file with orjson (``response_record``): the files of the flat
shape are mapped from their objects (``_from_values``), the others left to
``map_response``, which maps or quarantines them exactly.
tests/formatkit/test_fast_documents.py holds these rows to the record path's.
"""

from __future__ import annotations

from array import array
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from warehouse.formatkit.declared import TABLES
from warehouse.formatkit.ingestor import FastResult
from warehouse.formatkit.records import Record, stable_id
from warehouse.store.writer import CONVERSION_ERRORS

from .responses import _tokens_suspect

#: string-or-null keys, integer-or-null keys, list-of-strings-or-null keys
_TEXT = ("prompt", "response", "system_prompt", "inference_model", "prompt_note", "capture_date")
_INT = ("prompt_end", "prefill_end")
_TEXTS = ("tokens", "tags")
#: every key the record path maps to a column of its own with none left for ``extra``
_KEYS = frozenset((*_TEXT, *_INT, *_TEXTS, "token_ids"))
_INT64 = (-(2**63), 2**63)
#: a key the record path needs one of (else the record is not a response); with the colon it
#: cannot be a string value, and no other object may hold it in this shape
_NEEDED = (b'"prompt":', b'"response":')


def takes(data: bytes) -> bool:
    """Whether a whole inference file (no BOM) may go the document path: one JSON object with a
    prompt or response key, as far as a look at its bytes tells (``documents`` checks the rest)."""
    return data.lstrip()[:1] == b"{" and (_NEEDED[0] in data or _NEEDED[1] in data)


def documents(docs: list[tuple[str, bytes]], fmt: str) -> FastResult | None:
    """``responses`` rows of files ``takes`` took, one per file; ``rest``: the indices of the files
    left to the record path. None: every file goes the record path."""
    table = _arrow(docs, fmt)
    if table is not None:
        return FastResult({"responses": table}, len(docs), validated=True)
    taken, rest = [], []
    for i, (path, data) in enumerate(docs):
        record = response_record(data)
        if record is None:
            rest.append(i)
        else:
            taken.append((path, record.value))
    if not taken:
        return FastResult({}, 0, rest)
    table = _from_values(taken, fmt)
    return None if table is None else FastResult({"responses": table}, len(taken), rest, validated=True)


# --- all at once: pyarrow's JSON reader -------------------------------------------------------


def _schema() -> pa.Schema:
    declared = TABLES["responses"].arrow_schema
    return pa.schema([declared.field(k) for k in (*_TEXT, *_INT, *_TEXTS, "token_ids")])


_READ = pj.ReadOptions(use_threads=False, block_size=1 << 30)  # a worker is one of --jobs processes


def _arrow(docs: list[tuple[str, bytes]], fmt: str) -> pa.Table | None:
    """The group's rows parsed by pyarrow straight into the declared types; None when it refuses any
    file, or when what it read is not exactly one row per file of valid text without null items."""
    options = pj.ParseOptions(explicit_schema=_schema(), unexpected_field_behavior="error", newlines_in_values=True)
    try:
        parsed = pj.read_json(pa.py_buffer(b"\n".join(data for _, data in docs)), read_options=_READ,
                              parse_options=options)
        if parsed.num_rows != len(docs):  # a file held two objects (each file starts with one)
            return None
        parsed = parsed.combine_chunks()
        for column in parsed.columns:
            column.validate(full=True)  # UTF-8: the reader does not check it, orjson does
        columns = {name: parsed.column(name).chunk(0) if parsed.column(name).num_chunks else
                   pa.nulls(0, parsed.schema.field(name).type) for name in parsed.column_names}
    except (pa.ArrowException, ValueError):
        return None
    for key in (*_TEXTS, "token_ids"):
        if pc.list_flatten(columns[key]).null_count:  # ["a", null]: the record path refuses it
            return None
    return _table(docs, fmt, columns, _suspect(columns["tokens"], columns["token_ids"]))


def _suspect(tokens: pa.Array, token_ids: pa.Array) -> pa.Array:
    """``responses._tokens_suspect`` of every row: null without tokens; true when the lists' lengths
    differ or a token holds ", "."""
    n = len(tokens)
    parents = pc.list_parent_indices(tokens).to_numpy(zero_copy_only=False)
    comma = np.zeros(n, bool)
    comma[parents[_holding_comma_space(pc.list_flatten(tokens))]] = True
    lengths = pc.list_value_length(tokens).fill_null(0).to_numpy(zero_copy_only=False)
    id_lengths = pc.list_value_length(token_ids)
    differ = (pc.is_valid(token_ids).to_numpy(zero_copy_only=False)
              & (id_lengths.fill_null(0).to_numpy(zero_copy_only=False) != lengths))
    return pa.array(comma | differ, mask=~pc.is_valid(tokens).to_numpy(zero_copy_only=False), type=pa.bool_())


def _holding_comma_space(strings: pa.StringArray) -> np.ndarray:
    """The indices of the strings that hold ", ", found in their bytes all at once: every ", " of
    the data buffer, kept where both bytes lie in one string (the buffer runs the strings together:
    "," then " b" is no hit). ~5x cheaper than ``pc.match_substring``, which looks at each string
    on its own (400 tokens a file)."""
    offsets = np.frombuffer(strings.buffers()[1], np.int32)[strings.offset:strings.offset + len(strings) + 1]
    if not len(strings) or offsets[0] == offsets[-1]:
        return np.zeros(0, np.int64)
    data = np.frombuffer(strings.buffers()[2], np.uint8)[offsets[0]:offsets[-1]]
    comma = np.flatnonzero(data[:-1] == 0x2C)
    at = comma[data[comma + 1] == 0x20] + offsets[0]  # where each ", " starts
    which = np.searchsorted(offsets, at, side="right") - 1  # the string its comma is in
    return which[at + 2 <= offsets[which + 1]]  # its space too


def _table(docs: list[tuple[str, Any]], fmt: str, columns: dict, suspect) -> pa.Table:
    paths = [path for path, _ in docs]
    n = len(docs)
    ids = pa.array([stable_id(path, "") for path in paths], pa.string())  # the record's and its response's
    return pa.table({
        "response_id": ids,
        "record_id": ids,
        "source_format": pa.array([fmt] * n, pa.string()),
        "source_path": pa.array(paths, pa.string()),
        "source_locator": pa.array([""] * n, pa.string()),
        "record_index": pa.nulls(n, pa.int64()),  # a whole-object file: no index
        "candidate_index": pa.array(np.zeros(n, np.int32)),
        **columns,
        "tokens_suspect": suspect,
    })


# --- file by file: orjson -------------------------------------------------------------------------


def response_record(data: bytes) -> Record | None:
    """The record of a whole inference file (no BOM) when ``_from_values`` maps it exactly
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


def _from_values(docs: list[tuple[str, dict]], fmt: str) -> pa.Table | None:
    """Rows of objects ``response_record`` took; None when Arrow refuses one of their values (a
    boolean token id: the worker then maps each record on its own)."""
    values = [value for _, value in docs]
    schema = _schema()
    try:
        columns = {key: pa.array([v.get(key) for v in values], type=schema.field(key).type) for key in schema.names}
    except CONVERSION_ERRORS:
        return None
    suspect = pa.array([_tokens_suspect(v.get("tokens"), v.get("token_ids")) for v in values], pa.bool_())
    return _table(docs, fmt, columns, suspect)
