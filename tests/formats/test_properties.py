"""Property tests: readers agree with themselves in every mode; mappings lose no field."""

from __future__ import annotations

import io
import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import warehouse.formatkit.readers as readers
from warehouse.formatkit.declared import TABLES
from warehouse.formatkit.records import RecordContext
from warehouse.formats.trait_interp.responses import map_response
from warehouse.store.writer import RowValidator

line = st.binary(max_size=40).map(lambda b: b.replace(b"\n", b""))


class FakeSource:
    """A SourceFile stand-in over bytes, whole or streamed."""

    def __init__(self, data: bytes, whole: bool, limit: int):
        self._data, self.whole, self.max_record_bytes = data, whole, limit

    def data(self):
        return self._data

    def stream(self):
        return io.BytesIO(self._data)


@settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(line, max_size=12), trailing=st.booleans(), chunk=st.integers(1, 17), limit=st.integers(1, 50))
def test_streamed_lines_match_whole_file_lines(monkeypatch, lines, trailing, chunk, limit):
    data = b"\n".join(lines) + (b"\n" if trailing and lines else b"")
    monkeypatch.setattr(readers, "CHUNK", chunk)
    whole = list(readers.iter_lines(FakeSource(data, True, limit)))
    streamed = list(readers.iter_lines(FakeSource(data, False, limit)))
    # whole-file reading has no limit of its own (the file fits); streaming cuts long lines
    expected = [(n, (b if len(b) <= limit else None), size) for n, b, size in whole]
    assert streamed == expected
    # and the lines are the file's: joined back they give the data (minus one final newline)
    assert b"\n".join(b for _, b, _ in whole) == (data[:-1] if data.endswith(b"\n") else data)


json_scalar = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6), st.text(max_size=8))
json_value = st.recursive(json_scalar, lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)), max_leaves=6)
KNOWN = {
    "prompt", "response", "question", "system_prompt", "tokens", "token_ids", "prompt_end", "prefill_end",
    "inference_model", "prompt_note", "capture_date", "tags", "trait_score", "coherence_score", "metadata",
    "source", "turn_boundaries", "sentence_boundaries",
}


@settings(max_examples=200)
@given(
    prompt=st.text(max_size=30),
    response=st.one_of(st.none(), st.text(max_size=30)),
    tokens=st.one_of(st.none(), st.lists(st.text(max_size=4), max_size=6)),
    score=st.one_of(st.none(), st.floats(allow_nan=False, allow_infinity=False, width=32)),
    extra=st.dictionaries(st.text(min_size=1, max_size=10).filter(lambda k: k not in KNOWN), json_value, max_size=4),
)
def test_trait_interp_mapping_keeps_every_field(prompt, response, tokens, score, extra):
    record = {"prompt": prompt, "response": response, "trait_score": score, **extra}
    if tokens is not None:
        record["tokens"] = tokens
        record["token_ids"] = list(range(len(tokens)))
    ctx = RecordContext("/x/responses.json", "[0]", 0, "trait_interp")
    out = map_response(json.loads(json.dumps(record)), ctx)
    [row] = out["responses"]
    assert row["prompt"] == prompt and row["response"] == response and row["trait_score"] == score
    assert row.get("tokens") == tokens
    assert (row["extra"] or {}) == extra
    assert row["tokens_suspect"] == (None if tokens is None else any(", " in t for t in tokens))
    RowValidator(TABLES["responses"]).values(dict(row, source_path="/x", source_locator="[0]"))  # types fit the table
    assert ("evaluations" in out) == (score is not None)
