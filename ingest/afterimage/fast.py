"""AfterImage JSONL lines, mapped a block at a time with Arrow (the fast path).

The same rows as ``row.map_row``, built column by column. It takes only rows in
the generator's current shape: the block is parsed against an explicit schema
that rejects unknown keys (so nothing could land outside ``extra`` unseen) and
mistyped values. A block it cannot parse (legacy rows, extra keys, a line that
is not JSON or not one object) is left whole to the record path (None). Rows
that parse but that the record path would read another way go there one line
at a time (``FastResult.rest``): text that is not UTF-8 (Arrow's reader does not
check it), numbers the record path refuses or reads differently (a 400-digit
integer is ``inf`` to Arrow, ``Inf`` and ``NaN`` are not JSON, ``-0`` is the
integer 0 to the record path but -0.0 to Arrow), roles AfterImage does not
have, null messages or criteria. tests/formatkit/test_fast_paths.py holds the two paths
to the same rows.
"""

from __future__ import annotations

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from warehouse.formatkit.ingestor import FastResult
from warehouse.formatkit.linescan import scan_lines
from warehouse.formatkit.readers import BOM
from warehouse.formatkit.records import stable_ids

from .conversation import ROLES

CRITERIA = ("coherence", "factuality", "grounding", "helpfulness", "relevance")
_MESSAGE = pa.struct([("role", pa.string()), ("content", pa.string()), ("reasoning_content", pa.string())])
_CRITERION = pa.struct([("score", pa.float64()), ("feedback", pa.string())])
SCHEMA = pa.schema([
    ("conversations", pa.list_(_MESSAGE)),
    ("metadata", pa.struct([
        ("context_id", pa.string()), ("context_ids", pa.list_(pa.string())), ("persona_name", pa.string()),
        ("persona_generation_depth", pa.int64()), ("instruction_index", pa.int64()),
        ("batch_id", pa.string()), ("session_id", pa.string()),
    ])),
    ("instruction_context", pa.string()),
    ("response_context", pa.string()),
    ("persona", pa.string()),
    ("evaluation", pa.struct([(c, _CRITERION) for c in CRITERIA] + [("overall_grade", pa.string())])),
    ("final_score", pa.float64()),
])
_PARSE = pj.ParseOptions(explicit_schema=SCHEMA, unexpected_field_behavior="error")
_ROLES = pa.array(ROLES)
_OPEN, _CLOSE, _CR = ord("{"), ord("}"), ord("\r")


def fast_lines(data, path: str, first_line: int) -> FastResult | None:
    """``data``: any buffer of whole lines (``bytes``, an Arrow buffer); only the buffer protocol is used."""
    spans = _line_spans(data, first_line)
    if spans is None:
        return None
    starts, ends, is_ascii = spans
    lines = len(starts)
    try:
        t = pj.read_json(pa.BufferReader(data), read_options=pj.ReadOptions(use_threads=False, block_size=max(len(data), 1 << 20)),
                         parse_options=_PARSE)
    except (pa.ArrowInvalid, UnicodeError):
        return None
    if t.num_rows != lines:
        return None  # a line holding two objects: the record path says what is wrong with it
    t = t.combine_chunks()
    checked = _left_to_records(t, data, starts, is_ascii)
    if checked is None or checked[0].all():
        return None
    left, validated = checked
    a = np.frombuffer(data, np.uint8)
    rest = [(first_line + int(i), a[0 if i == 0 else starts[i]:ends[i]].tobytes()) for i in np.flatnonzero(left)]
    line_numbers = np.arange(first_line, first_line + lines)
    if rest:
        keep = ~left
        t = t.filter(pa.array(keep)).combine_chunks()
        line_numbers = line_numbers[keep]

    conv = t.column("conversations").chunk(0)
    messages = conv.flatten()
    roles, contents = messages.field("role"), messages.field("content")
    metadata = t.column("metadata").chunk(0)
    evaluation = t.column("evaluation").chunk(0)
    evaluated = pc.is_valid(evaluation)

    n = t.num_rows
    locators = pc.cast(pa.array(line_numbers), pa.string())  # Arrow's cast: 15x numpy's astype(str)
    ids = pa.array(stable_ids(path, locators.to_pylist()), pa.string())
    offsets = conv.offsets.to_numpy()
    lengths = np.diff(offsets)
    prompt, response = _exchange(roles, contents, offsets, lengths)

    final = t.column("final_score").chunk(0)
    default_final = pc.and_kleene(pc.is_null(evaluation), pc.equal(final, 0.0)).fill_null(False)
    extra = pc.if_else(default_final, orjson.dumps({"final_score": 0.0}).decode(), pa.nulls(n, pa.string()))
    responses = pa.table({
        "response_id": ids, "record_id": ids, "source_format": pa.repeat("afterimage", n),
        "source_path": pa.repeat(path, n), "source_locator": locators,
        "record_index": pa.array(line_numbers - 1), "candidate_index": pa.repeat(pa.scalar(0, pa.int32()), n),
        "prompt": prompt, "response": response,
        "persona": t.column("persona"), "instruction_context": t.column("instruction_context"),
        "response_context": t.column("response_context"),
        **{f: metadata.field(f) for f in ("context_id", "context_ids", "persona_name", "persona_generation_depth",
                                          "instruction_index", "batch_id", "session_id")},
        "extra": extra,
    })

    owner = np.repeat(np.arange(n), lengths)
    turn_index = np.arange(len(messages)) - np.repeat(offsets[:-1], lengths)
    owner_ids = ids.take(owner)
    turns = pa.table({
        "response_id": owner_ids, "record_id": owner_ids,
        "turn_index": pa.array(turn_index, pa.int32()), "role": roles, "content": contents,
        "reasoning_content": messages.field("reasoning_content"),
        "source_path": pa.repeat(path, len(messages)),
        "source_locator": _join(locators.take(owner), ".conversations[", pc.cast(pa.array(turn_index), pa.string()), "]"),
    })

    parts = []
    for c in CRITERIA:
        criterion = evaluation.field(c)
        score = criterion.field("score")
        parts.append(_rows(evaluated, ids, locators, f".evaluation.{c}", criterion=c, score=score,
                           score_scale=pc.if_else(pc.is_valid(score), "0-1", pa.nulls(n, pa.string())),
                           feedback=criterion.field("feedback")))
    grade = evaluation.field("overall_grade")
    parts.append(_rows(pc.and_(evaluated, pc.is_valid(grade)).fill_null(False), ids, locators, ".evaluation.overall_grade",
                       criterion="overall_grade", label=grade))
    has_final = pc.and_(pc.is_valid(final), pc.invert(default_final)).fill_null(False)
    parts.append(_rows(has_final, ids, locators, ".final_score", criterion="final_score", score=final,
                       score_scale=pc.if_else(pc.greater(final, 1.0), "0-100", "0-1")))
    evaluations = pa.concat_tables([p for p in parts if p.num_rows], promote_options="default") if any(p.num_rows for p in parts) else None
    if evaluations is not None:
        evaluations = evaluations.append_column("source_path", pa.repeat(path, evaluations.num_rows))

    tables = {"responses": responses, "turns": turns}
    if evaluations is not None:
        tables["evaluations"] = evaluations
    # every string above comes from the parsed block (when it passed validation whole), from ids
    # and locators (ASCII) or from the path (a str Arrow encoded)
    return FastResult(tables, n, rest, validated=validated)


def _join(*parts) -> pa.Array:
    """Element-wise concatenation of string arrays and literals."""
    n = next(len(p) for p in parts if not isinstance(p, str))
    arrays = [pa.repeat(p, n) if isinstance(p, str) else p for p in parts]
    return pc.binary_join_element_wise(*arrays, "")


def _exchange(roles: pa.Array, contents: pa.Array, offsets: np.ndarray, lengths: np.ndarray):
    """(prompt, response) per row, as conversation.exchange: the last assistant message,
    and the last user message before it (or the last user message when there is no answer)."""
    total = len(roles)
    pos = np.arange(total)
    starts = offsets[:-1]
    is_assistant = pc.equal(roles, "assistant").to_numpy(zero_copy_only=False)
    is_user = ~is_assistant
    last_answer = _last(np.where(is_assistant, pos, -1), starts, lengths)
    cut = np.repeat(last_answer, lengths)
    before = (cut < 0) | (pos < cut)
    last_question = _last(np.where(is_user & before, pos, -1), starts, lengths)
    def take(idx: np.ndarray) -> pa.Array:
        if not total:
            return pa.nulls(len(idx), pa.string())
        return contents.take(pa.array(np.where(idx < 0, 0, idx), mask=idx < 0))

    return take(last_question), take(last_answer)


def _last(values: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Per segment, the largest value (-1 for an empty segment).

    A trailing -1 lets every start index be valid for ``reduceat`` (an empty last
    segment starts at the end) without shortening the segment before it.
    """
    if len(starts) == 0:
        return np.full(0, -1)
    out = np.maximum.reduceat(np.append(values, -1), starts)
    return np.where(lengths > 0, out, -1)


def _rows(mask, ids, locators, suffix: str, **columns) -> pa.Table:
    """The evaluation rows of the responses where ``mask`` holds.

    Filtered first, so the locators are built for the rows kept only; a mask that keeps
    every row (every response evaluated: the usual block) copies nothing."""
    mask = pa.array(mask) if not isinstance(mask, (pa.Array, pa.ChunkedArray)) else mask
    every = pc.all(mask).as_py() is not False
    if not every:
        ids, locators = ids.filter(mask), locators.filter(mask)
        columns = {k: v if isinstance(v, str) else v.filter(mask) for k, v in columns.items()}
    n = len(ids)
    data = {"response_id": ids, "record_id": ids, "source_locator": _join(locators, suffix)}
    for name, value in columns.items():
        data[name] = pa.repeat(value, n) if isinstance(value, str) else value
    return pa.table(data)


def _line_spans(data, first_line: int) -> tuple[np.ndarray, np.ndarray, bool] | None:
    """(start, end) byte offsets of the block's lines and whether the block is ASCII (one scan
    finds both), or None unless every line is
    one ``{...}`` alone (CRLF line ends too): then no JSON document can span two
    lines, and Arrow's rows are the lines, one for one, when their counts agree.
    (Arrow's reader also crashes, pyarrow 26, on a top-level null with an explicit schema.)"""
    a = np.frombuffer(data, np.uint8)
    if not len(a):
        return None
    newlines, is_ascii = scan_lines(data)
    ends = newlines if a[-1] == 10 else np.append(newlines, len(a))
    # a BOM opens line 1 only (the record path strips it there and nowhere else)
    first = len(BOM) if first_line == 1 and a[:len(BOM)].tobytes() == BOM else 0
    if first == len(a):  # a BOM and nothing else: no line to map (the record path says what it is)
        return None
    starts = np.concatenate(([first], newlines[: len(ends) - 1] + 1))
    if not (a[starts] == _OPEN).all():
        return None  # a blank line, or one that is not an object
    last = a[ends - 1]
    if not ((last == _CLOSE) | ((last == _CR) & (a[np.maximum(ends - 2, 0)] == _CLOSE))).all():
        return None
    return starts, ends, is_ascii


def _left_to_records(t: pa.Table, data, starts: np.ndarray, is_ascii: bool) -> tuple[np.ndarray, bool] | None:
    """Per row (= line), True when the record path must read it, and whether every string of
    ``t`` is valid UTF-8 (the block is ASCII, or passed Arrow's full validation whole: a lone
    surrogate escape fails the parse); None when the block cannot be split so (the record
    path reads all of it)."""
    n = t.num_rows
    left = np.zeros(n, dtype=bool)

    def rows(mask, parents=None) -> None:
        hit = np.asarray(pc.fill_null(mask, False).to_numpy(zero_copy_only=False), dtype=bool)
        left[hit if parents is None else parents[hit]] = True

    conv = t.column("conversations").chunk(0)
    rows(pc.is_null(conv))
    messages = pc.list_flatten(conv)
    owner = pc.list_parent_indices(conv).to_numpy()
    roles, contents = messages.field("role"), messages.field("content")
    rows(pc.or_kleene(pc.or_kleene(pc.is_null(messages), pc.is_null(roles)),
                      pc.or_kleene(pc.is_null(contents), pc.invert(pc.is_in(roles, _ROLES)))), owner)
    context_ids = t.column("metadata").chunk(0).field("context_ids")
    rows(pc.is_null(pc.list_flatten(context_ids)), pc.list_parent_indices(context_ids).to_numpy())
    evaluation = t.column("evaluation").chunk(0)
    evaluated = pc.is_valid(evaluation)
    scores = [t.column("final_score").chunk(0)]
    for c in CRITERIA:  # a criterion set to null would land in extra.evaluation
        rows(pc.and_(evaluated, pc.is_null(evaluation.field(c))))
        scores.append(evaluation.field(c).field("score"))
    for score in scores:  # inf, NaN, -0.0: see the module's docstring
        x = score.fill_null(1.0).to_numpy(zero_copy_only=False)
        left |= ~np.isfinite(x) | ((x == 0) & np.signbit(x))
    validated = True
    if not is_ascii:
        try:
            t.validate(full=True)
        except pa.ArrowInvalid:
            bad = _invalid_utf8(data, starts)
            if not bad:
                return None
            left[bad] = True
            validated = False  # the sink checks the rows kept (Python's decoder found the bad lines, not Arrow)
    return left, validated


def _invalid_utf8(data, starts: np.ndarray) -> list[int]:
    """Indexes of the lines whose bytes are not UTF-8 (one decoding pass over the block)."""
    bad, pos, view = [], 0, memoryview(data)
    while pos < len(data):
        try:
            str(view[pos:], "utf-8")
            break
        except UnicodeDecodeError as e:
            line = max(int(np.searchsorted(starts, pos + e.start, "right")) - 1, 0)
            bad.append(line)
            pos = int(starts[line + 1]) if line + 1 < len(starts) else len(data)
    return bad
