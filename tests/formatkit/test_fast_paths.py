"""Fast paths give exactly the record path's rows.

A fast path maps what it can; it leaves a line it cannot map exactly to the
record path (``FastResult.rest``), and a block it cannot split into lines
(None) whole. Each test says which it expects, so a comparison can never
quietly become the record path against itself.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from warehouse.formats.afterimage import fast

from ..conftest import FIXTURES, REPO, batch_rows

TABLES = ("responses", "turns", "evaluations", "quarantine")
#: the fast path left the whole block to the record path
DECLINED = "declined"


def ingest_batch(path: Path, root: Path, fast_paths: bool) -> dict[str, list[str]]:
    """Every table's rows, as canonical JSON text (so -0.0 differs from 0.0, and NaN equals NaN)."""
    return batch_rows([path], root, fast_paths, TABLES)[0]


def fast_outcome(path: Path):
    """DECLINED, or the numbers of the lines the fast path left to the record path."""
    result = fast.fast_lines(path.read_bytes(), str(path), 1)
    return DECLINED if result is None else tuple(n for n, _ in result.rest)


def assert_same(path: Path, tmp_path: Path, expected) -> None:
    outcome = fast_outcome(path)
    assert outcome == expected, f"the fast path gave {outcome!r} for {path.name}, expected {expected!r}"
    assert ingest_batch(path, tmp_path / "fast", True) == ingest_batch(path, tmp_path / "slow", False)


#: what the fast path does with each AfterImage fixture and sample: () = it maps every line
EXPECTED = {
    "tests/fixtures/afterimage/conversations_20250304_101500.jsonl": DECLINED,  # line 4 has keys the generator never wrote
    "tests/fixtures/afterimage/legacy.jsonl": DECLINED,  # the first judge's shape (context, comment, ...)
    "tests/fixtures/afterimage/unevaluated.jsonl": (),
    "samples/afterimage/conversations_20260112_101500.jsonl": (),
    "samples/afterimage/conversations_20260113_090000.jsonl": (),
}


def test_every_afterimage_jsonl_file_has_an_expectation():
    found = {str(p.relative_to(REPO)) for d in (FIXTURES / "afterimage", REPO / "samples" / "afterimage")
             for p in d.glob("*.jsonl")}
    assert found == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED), ids=lambda n: Path(n).name)
def test_afterimage_files_give_the_same_rows_either_way(name, tmp_path):
    assert_same(REPO / name, tmp_path, EXPECTED[name])


GOOD = '{"conversations": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]}'
C = '"conversations": [{"role": "user", "content": "q"}]'


@pytest.mark.parametrize("line, expected, why", [pytest.param(*case, id=case[2]) for case in [
    # lines the fast path leaves to the record path (line 1 is GOOD, and stays on the fast path)
    (b'{"conversations": [{"role": "user", "content": "caf\xe9"}]}', (2,), "latin-1 text (issue 13.1)"),
    (b'{"conversations": [{"role": "user", "content": "\xc0\x80"}]}', (2,), "an overlong encoding"),
    (b'{"conversations": [{"role": "user", "content": "\xed\xa0\x80"}]}', (2,), "an encoded surrogate"),
    (b'{"conversations": [{"role": "user", "content": "ok"}], "persona": "\xff"}', (2,), "a stray byte in another field"),
    (b'{' + C.encode() + b', "final_score": 1' + b'0' * 399 + b'}', (2,), "a 400-digit number (issue 14.11)"),
    (b'{' + C.encode() + b', "final_score": -0.0}', (2,), "-0.0 (issue 14.11)"),
    (b'{' + C.encode() + b', "final_score": -0}', (2,), "-0, the integer 0 to the record path"),
    (b'{' + C.encode() + b', "final_score": Inf}', (2,), "Inf, not JSON"),
    (b'{' + C.encode() + b', "final_score": -Inf}', (2,), "-Inf, not JSON"),
    (b'{' + C.encode() + b', "final_score": NaN}', (2,), "NaN, read by the record path"),
    (b'{"conversations": [], "evaluation": {"coherence": {"score": Infinity, "feedback": "f"}}}', (2,), "Infinity in a criterion"),
    (b'{"conversations": [{"role": "system", "content": "q"}]}', (2,), "a role AfterImage does not have"),
    (b'{"conversations": [{"role": "user", "content": null}]}', (2,), "content null"),
    (b'{"conversations": [null]}', (2,), "a null message"),
    (b'{"conversations": null}', (2,), "conversations null"),
    (b'{"persona": "p"}', (2,), "no conversations"),
    (b'{"conversations": [], "metadata": {"context_ids": ["a", null]}}', (2,), "a null context id"),
    (b'{"conversations": [], "evaluation": {"coherence": null}}', (2,), "a criterion set to null"),
    # blocks it leaves whole
    (b'', DECLINED, "a blank line"),
    (b'{"conversations": [{"role": "user", "content": 3}]}', DECLINED, "content that is not a string"),
    (b'{"conversations": [{"role": "user", "content": "q"}], "context": "legacy"}', DECLINED, "a legacy key"),
    (b'{"conversations": [], "metadata": {"custom": 1}}', DECLINED, "an unknown metadata key"),
    (b'null', DECLINED, "a line that is not an object"),
    (b'{' + C.encode() + b', "final_score": 1e400}', DECLINED, "an exponent past a double"),
    (b'{' + C.encode() + b', "persona": "\\ud800"}', DECLINED, "a lone surrogate escape"),
    (b'{' + C.encode() + b', "persona": "a\tb"}', DECLINED, "a raw control character"),
    (b'{' + C.encode() + b'} ', DECLINED, "a trailing space"),
    (b'{' + C.encode() + b'}{' + C.encode() + b'}', DECLINED, "two objects on one line"),
    (b'{"conversations": [\n{"role": "user", "content": "x"}]}\n{' + C.encode() + b'}{' + C.encode() + b'}',
     DECLINED, "a document over two lines, made up for by two on one"),
]])
def test_a_line_the_fast_path_cannot_map_exactly_is_read_by_the_record_path(tmp_path, line, expected, why):
    path = tmp_path / "rows.jsonl"
    path.write_bytes(GOOD.encode() + b"\n" + line + b"\n")
    assert_same(path, tmp_path, expected)


@pytest.mark.parametrize("score", ["1" + "0" * 399, "-0.0", "-0", "Inf", "1e400", "NaN", "0.25"])
def test_a_row_gives_the_same_answer_as_a_jsonl_line_and_as_a_json_file(tmp_path, score):
    """Issue 14.11: a 400-digit final_score was inf through .jsonl and quarantined through .json."""
    row = b'{' + C.encode() + b', "final_score": ' + score.encode() + b'}'
    answers = []
    for name in ("rows.jsonl", "row.json"):
        path = tmp_path / name
        path.write_bytes(row + b"\n")
        out = ingest_batch(path, tmp_path / name.replace(".", "_"), True)
        answers.append(json.dumps({  # as text: -0.0 is not 0.0
            "extra": [json.loads(r)["extra"] for r in out["responses"]],
            "scores": [json.loads(r)["score"] for r in out["evaluations"]],
            "quarantine": [(q := json.loads(r))["stage"] + ": " + q["error"] for r in out["quarantine"]]}))
    assert answers[0] == answers[1]


@pytest.mark.parametrize("data", [b"\xef\xbb\xbf", b"\xef\xbb\xbf\n", b"\xef\xbb\xbf\r\n"], ids=["bom", "bom-lf", "bom-crlf"])
def test_a_file_that_is_only_a_byte_order_mark_is_declined_not_a_crash(tmp_path, data):
    """Found by the garbage fuzz (tests/formatkit/test_conservation.py): the line scan indexed past the end
    of a block holding nothing but a BOM."""
    path = tmp_path / "rows.jsonl"
    path.write_bytes(data)
    assert_same(path, tmp_path, DECLINED)


def test_crlf_line_ends_stay_on_the_fast_path(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_bytes((GOOD + "\r\n").encode() * 3)
    assert_same(path, tmp_path, ())


# --- generated rows, written as hostile JSON text ----------------------------------------------

class Lit(str):
    """JSON text written as it is (a number literal, or NaN/Infinity/Inf)."""


class Text:
    """A string, written in one of JSON's ways; ``parts`` may hold raw bytes (not UTF-8)."""

    def __init__(self, parts: list, style: str):
        self.parts, self.style = parts, style


def encode(v) -> bytes:
    if isinstance(v, Lit):
        return v.encode()
    if isinstance(v, Text):
        return b'"' + b"".join(p if isinstance(p, bytes) else _escape(p, v.style) for p in v.parts) + b'"'
    if isinstance(v, dict):
        return b"{" + b", ".join(encode(Text([k], "plain")) + b": " + encode(x) for k, x in v.items()) + b"}"
    if isinstance(v, list):
        return b"[" + b", ".join(encode(x) for x in v) + b"]"
    return json.dumps(v).encode()


def _escape(s: str, style: str) -> bytes:
    if style == "ascii":  # \uXXXX for every non-ASCII character; lone surrogates as escapes
        return json.dumps(s)[1:-1].encode()
    if style == "all":  # every character escaped, astral ones as surrogate pairs
        units = s.encode("utf-16-be", "surrogatepass")
        return "".join(f"\\u{units[i]:02x}{units[i + 1]:02x}" for i in range(0, len(units), 2)).encode()
    text = json.dumps(s, ensure_ascii=False)[1:-1]
    if style == "slash":
        text = text.replace("/", "\\/")
    return text.encode("utf-8", "surrogatepass")  # a lone surrogate written raw: not UTF-8


#: NaN-like text, escapes, non-ASCII (astral too), lone surrogates
chars = st.one_of(
    st.characters(blacklist_categories=("Cs",)),
    st.sampled_from(["NaN", ", NaN", ": Infinity", "-Inf", "\n", "\t", '"', "\\", "/", "\x00", "é", "€", "𝄞", "😀"]),
)
lone_surrogate = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)
raw_bytes = st.sampled_from([b"\xe9", b"\xc0\x80", b"\xed\xa0\x80", b"\xff", b"\xf0\x9f\x98"])  # never UTF-8
hostile_text = st.builds(
    Text,
    st.lists(st.one_of(st.lists(chars, max_size=6).map("".join), st.lists(chars, max_size=6).map("".join),
                       raw_bytes, lone_surrogate), max_size=3).map(lambda parts: parts or [""]),
    st.sampled_from(["plain", "ascii", "all", "slash"]),
)
clean_text = st.builds(Text, st.lists(st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=20),
                                      min_size=1, max_size=1), st.sampled_from(["plain", "ascii", "slash"]))
digits = st.integers(300, 420).map(lambda n: "1" + "7" * n)
special_number = st.sampled_from(["-0", "-0.0", "0", "0.0", "-0e0", "0E+0", "1e-400", "4.9e-324",
                                  "1.7976931348623157e308", "NaN", "Infinity", "-Infinity", "Inf", "-Inf"])
hostile_number = st.one_of(
    special_number, special_number, special_number,
    st.integers(-(10**30), 10**30).map(str),
    digits, digits.map(lambda d: "-" + d),
    st.tuples(st.integers(-999, 999), st.integers(0, 99), st.integers(-420, 420), st.sampled_from("eE")).map(
        lambda t: f"{t[0]}.{t[1]}{t[3]}{t[2]:+d}"),
).map(Lit)
plain_number = st.one_of(st.floats(0, 1), st.integers(0, 100), st.floats(allow_nan=False, allow_infinity=False).map(repr).map(Lit))
hostile_integer = st.sampled_from(["9223372036854775808", "-0", "2.0", "1e2"]).map(Lit)


def rows_of(text, number, integer):
    """AfterImage rows whose strings, scores and integers are drawn from these."""
    maybe_text = st.one_of(st.none(), text)
    score = st.one_of(st.none(), number)
    message = st.fixed_dictionaries(
        {"role": st.sampled_from(["user", "assistant"]), "content": text}, optional={"reasoning_content": maybe_text})
    criterion = st.fixed_dictionaries({}, optional={"score": score, "feedback": maybe_text})
    evaluation = st.fixed_dictionaries({c: criterion for c in fast.CRITERIA}, optional={
        "overall_grade": st.one_of(st.none(), st.sampled_from(["perfect", "good", "bad", "not_acceptable"]), text)})
    metadata = st.one_of(st.none(), st.fixed_dictionaries({}, optional={
        "context_id": maybe_text, "context_ids": st.one_of(st.none(), st.lists(text, max_size=3)),
        "persona_name": maybe_text, "persona_generation_depth": st.one_of(st.none(), integer),
        "instruction_index": st.one_of(st.none(), integer), "batch_id": maybe_text, "session_id": maybe_text,
    }))
    return st.fixed_dictionaries({"conversations": st.lists(message, max_size=6)}, optional={
        "metadata": metadata, "persona": maybe_text, "instruction_context": maybe_text, "response_context": maybe_text,
        # (0.0 without an evaluation is the generator's default for "not judged": kept in extra)
        "evaluation": st.one_of(st.none(), evaluation),
        "final_score": st.one_of(st.none(), st.sampled_from(["0.0", "-0.0", "0", "-0"]).map(Lit), number),
    })


# Most rows hold values the fast path maps (so most blocks compare it with the record path);
# a row hostile in one way leaves its line, or the whole block, to the record path.
clean_row = rows_of(clean_text, plain_number, st.integers(0, 9))
row = st.one_of(
    clean_row, clean_row,
    rows_of(st.one_of(clean_text, hostile_text), plain_number, st.integers(0, 9)),
    rows_of(clean_text, st.one_of(plain_number, hostile_number), st.integers(0, 9)),
    rows_of(clean_text, plain_number, st.one_of(st.integers(0, 9), hostile_integer)),
)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))  # (generation speed: not tested here)
@given(rows=st.lists(row, min_size=1, max_size=8))
def test_generated_afterimage_rows_give_the_same_rows_either_way(tmp_path, rows):
    path = tmp_path / "rows.jsonl"
    path.write_bytes(b"".join(encode(r) + b"\n" for r in rows))
    assert ingest_batch(path, tmp_path / "fast", True) == ingest_batch(path, tmp_path / "slow", False)


def test_the_generated_rows_reach_the_fast_path():
    """The property above compares the two paths only where the fast path maps lines: the
    generated blocks must often be mapped whole, often in part, and sometimes declined."""
    outcomes = []

    @settings(max_examples=200, database=None, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck))
    @given(rows=st.lists(row, min_size=1, max_size=8))
    def sample(rows):
        result = fast.fast_lines(b"".join(encode(r) + b"\n" for r in rows), "/x.jsonl", 1)
        outcomes.append(DECLINED if result is None else "partly" if result.rest else "whole")

    sample()
    shares = {k: outcomes.count(k) / len(outcomes) for k in ("whole", "partly", DECLINED)}
    assert min(shares.values()) >= 0.05 and shares["whole"] + shares["partly"] >= 0.5, shares


def test_a_piece_of_a_large_file_keeps_its_line_numbers(tmp_path):
    rows = [{"conversations": [{"role": "user", "content": f"q{i}"}, {"role": "assistant", "content": f"a{i}"}]} for i in range(5)]
    data = "".join(json.dumps(r) + "\n" for r in rows).encode()
    result = fast.fast_lines(data, "/x.jsonl", 101)
    responses = result.tables["responses"]
    assert responses.column("source_locator").to_pylist() == ["101", "102", "103", "104", "105"]
    assert responses.column("record_index").to_pylist() == [100, 101, 102, 103, 104]
    turns = result.tables["turns"]
    assert turns.column("source_locator").to_pylist()[:2] == ["101.conversations[0]", "101.conversations[1]"]
    assert isinstance(turns.column("turn_index"), pa.ChunkedArray)


def test_lines_left_to_the_record_path_keep_their_numbers_in_a_piece(tmp_path):
    rows = [json.dumps({"conversations": [{"role": "user", "content": f"q{i}"}]}).encode() for i in range(4)]
    rows[2] = b'{"conversations": [{"role": "user", "content": "caf\xe9"}]}'
    result = fast.fast_lines(b"\n".join(rows) + b"\n", "/x.jsonl", 101)
    assert result.rest == [(103, rows[2])]
    assert result.tables["responses"].column("source_locator").to_pylist() == ["101", "102", "104"]


@pytest.mark.parametrize("bom", [b"", b"\xef\xbb\xbf"])
def test_a_piece_read_into_arrow_memory_maps_as_its_bytes(tmp_path, bom):
    """A worker reads a piece of a large file into Arrow's memory (``opening.read_piece``), not into
    ``bytes``: the fast path takes that buffer and gives the rows, and the lines it leaves (not UTF-8,
    a role AfterImage does not have), that the same bytes give; the record path still gets ``bytes``."""
    from warehouse.formatkit.source import SourceFile

    rows = [json.dumps({"conversations": [{"role": "user", "content": f"q{i} caf\u00e9"},
                                          {"role": "assistant", "content": f"a{i}"}]}).encode() for i in range(6)]
    rows[2] = b'{"conversations": [{"role": "user", "content": "caf\xe9"}]}'
    rows[4] = b'{"conversations": [{"role": "wizard", "content": "x"}]}'
    head = b"" if bom else b'{"conversations": []}\n'  # a BOM opens line 1 only
    first = 1 if bom else 2
    data = bom + b"\r\n".join(rows) + b"\r\n"
    path = tmp_path / "big.jsonl"
    path.write_bytes(head + data)
    with SourceFile(str(path), chunk=(len(head), len(head) + len(data), first)) as src:
        assert isinstance(src.buffer(), pa.Buffer) and src.head == data and src.size == len(data)
        from_buffer, from_bytes = fast.fast_lines(src.buffer(), str(path), first), fast.fast_lines(data, str(path), first)
        assert from_buffer.rest == from_bytes.rest and [n for n, _ in from_buffer.rest] == [first + 2, first + 4]
        assert all(type(line) is bytes for _, line in from_buffer.rest)
        for name, table in from_bytes.tables.items():
            assert from_buffer.tables[name].equals(table), name
        assert from_buffer.validated == from_bytes.validated is False
        assert src.data() == data and type(src.data()) is bytes


def test_a_piece_cut_short_by_the_file_is_what_the_file_holds(tmp_path):
    from warehouse.formatkit.source import SourceFile

    path = tmp_path / "short.jsonl"
    path.write_bytes(b'{"a": 1}\n{"a": 2}\n')
    with SourceFile(str(path), chunk=(9, 100, 2)) as src:  # the file shrank after the pass cut it
        assert src.size == 9 and src.data() == b'{"a": 2}\n'
