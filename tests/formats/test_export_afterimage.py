"""Export back to AfterImage JSONL: round trips, loading with afterimage itself, other formats, notes."""

from __future__ import annotations

import json

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import warehouse
from warehouse.formatkit.records import RecordContext
from warehouse.formats.afterimage.row import map_row
from warehouse.formats.afterimage.unmap import afterimage_row, fits_current_types

from ..conftest import FIXTURES, REPO, Warehouse, write_json, write_text

AI = FIXTURES / "afterimage"
SAMPLES = REPO / "samples" / "afterimage"
#: where the rows are: the export is one JSONL file, so these depend on the layout, not on the data
PLACE = {"source_path", "response_id", "record_id", "annotation_id", "source_locator", "record_index"}
TABLES = ("responses", "turns", "evaluations")


def export_lines(w: Warehouse, out, where: str | None = "source_format = 'afterimage'") -> list[dict]:
    warehouse.export(w.root, where, "afterimage", out, progress=False)
    return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]


def table_rows(w: Warehouse) -> dict[str, list[dict]]:
    """The afterimage rows of every table the format fills, in file order, without what depends on the layout.

    A child's locator is kept relative to its record's (`.conversations[1]`, `.evaluation.coherence`)."""
    responses = w.rows("SELECT * FROM responses WHERE source_format = 'afterimage' "
                       "ORDER BY source_path, record_index NULLS FIRST, candidate_index, source_locator")
    place = {r["response_id"]: (i, r["source_locator"]) for i, r in enumerate(responses)}
    out = {"responses": [_strip(r) for r in responses]}
    for table in ("turns", "evaluations"):
        rows = [r for r in w.rows(f"SELECT * FROM {table}") if r["response_id"] in place]
        for r in rows:
            i, locator = place[r["response_id"]]
            assert r["source_locator"].startswith(locator)
            r["at"] = (i, r["source_locator"][len(locator):])
        out[table] = [_strip(r) for r in sorted(rows, key=lambda r: r["at"])]
    return out


def _strip(row: dict) -> dict:
    return {k: (json.loads(v) if k == "extra" and v is not None else v) for k, v in row.items() if k not in PLACE}


@pytest.fixture(scope="module")
def original(tmp_path_factory):
    """Every AfterImage shape the fixtures hold (legacy, unevaluated, wrapper, single row) and the samples."""
    w = Warehouse(tmp_path_factory.mktemp("ai-export") / "wh")
    w.ingest(AI, SAMPLES)
    assert w.one("SELECT count(*) FROM quarantine") == 0
    return w


@pytest.fixture(scope="module")
def exported(original, tmp_path_factory):
    out = tmp_path_factory.mktemp("ai-out") / "rows.jsonl"
    lines = export_lines(original, out)
    return out, lines


# --- round trip ---------------------------------------------------------------------------------------


def test_ingest_export_ingest_gives_the_same_rows(original, exported, tmp_path):
    out, lines = exported
    again = Warehouse(tmp_path / "wh")
    summary = again.ingest(out)
    assert summary.records_quarantined == 0
    before, after = table_rows(original), table_rows(again)
    for table in TABLES:
        assert after[table] == before[table], table
    assert len(lines) == len(before["responses"]) == original.one("SELECT count(*) FROM responses")
    # what does change: one file, rows numbered by line
    assert again.rows("SELECT source_path, records, records_ingested FROM sources") == [
        {"source_path": str(out), "records": len(lines), "records_ingested": len(lines)}]
    assert [r["source_locator"] for r in again.rows("SELECT source_locator FROM responses ORDER BY record_index")] == [
        str(n) for n in range(1, len(lines) + 1)]


def test_small_windows_write_the_same_file_and_report_progress(original, exported, tmp_path, monkeypatch):
    from warehouse import exports
    from warehouse.exports import kit
    from warehouse.formats.afterimage import export as module

    monkeypatch.setattr(kit, "BATCH", 2)  # children of a response never split from it at a window's edge
    con = warehouse.connect(original.root)
    total = exports.select(con, "source_format = 'afterimage'")
    done: list[int] = []
    ctx = exports.ExportContext(con, str(tmp_path / "small.jsonl"), total, done.append)
    assert module.write(ctx) == total
    con.close()
    assert (tmp_path / "small.jsonl").read_bytes() == exported[0].read_bytes()
    assert done == [*range(2, total, 2), total]


def test_wrapper_rows_come_back_as_plain_rows_with_their_parts_inline(exported):
    _, lines = exported
    wrapped = [line for line in lines if "system_prompt_parts" in line]
    assert len(wrapped) == 4  # two in the fixture's wrapper, two in the sample's
    gardener = [line for line in wrapped if line["persona"] == "A busy parent"]
    assert [line["system_prompt_parts"] for line in gardener] == [
        ["You are a master gardener.", "Answer questions about home composting."]] * 2
    assert list(gardener[1]) == ["conversations", "metadata", "instruction_context", "response_context", "persona",
                                "system_prompt_parts"]
    assert gardener[1]["metadata"] == {}  # the server's row had no metadata


def test_legacy_and_default_scores_are_written_as_they_were_read(exported):
    _, lines = exported
    [points] = [line for line in lines if "context" in line]
    [feedback] = [line for line in lines if line["conversations"][0]["content"] == "Should compost be covered?"]
    assert points["evaluation"]["relevance"] == {"score": 3.0, "comment": "On point."}  # the first judge's shape
    assert points["final_score"] == 64.0 and "final_score" not in points["evaluation"]  # the equal copy is not kept
    assert feedback["final_score"] == 0.71 and feedback["evaluation"]["coherence"] == {"score": 0.7, "feedback": "Fine."}
    unjudged = [line for line in lines if line["conversations"][0]["content"] == "Why is my pile cold?"]
    assert [(u["final_score"], "evaluation" in u) for u in unjudged] == [(0.0, False)]


def test_metadata_keeps_the_generators_keys_and_the_others(exported):
    _, lines = exported
    [citrus] = [line for line in lines if line["persona"] == "An apartment dweller with a worm bin"]
    assert citrus["metadata"] == {
        "context_id": "doc-compost-03", "context_ids": ["doc-compost-03"], "persona_name": "An apartment dweller with a worm bin",
        "persona_generation_depth": 2, "instruction_index": 4, "batch_id": "batch-0007", "session_id": "sess-2025-03-04",
        "generator_model": "gemini-2.0-flash"}
    assert citrus["timestamp"] == "2025-03-04T10:15:02"  # an unknown top-level key goes back to the top
    [turkish] = [line for line in lines if line["persona"] == "Türk bahçıvan"]
    assert turkish["metadata"] == {"context_id": None, "persona_name": "Türk bahçıvan", "persona_generation_depth": 0}


# --- property: any row the ingest reads comes back to the same rows ---------------------------------------

_text = st.text(max_size=8)
_scalar = st.one_of(st.none(), st.booleans(), st.integers(-1000, 1000), _text)
_json = st.recursive(_scalar, lambda inner: st.one_of(st.lists(inner, max_size=2), st.dictionaries(_text, inner, max_size=2)),
                     max_leaves=4)


def _unknown(known, max_size=2):
    return st.dictionaries(st.text(min_size=1, max_size=8).filter(lambda k: k not in known), _json, max_size=max_size)


def _opt(value):
    return st.one_of(st.none(), value)


_message = st.builds(
    lambda role, content, reasoning, extra: {"role": role, "content": content, **reasoning, **extra},
    st.sampled_from(["user", "assistant"]), _text,
    st.one_of(st.just({}), st.builds(lambda r: {"reasoning_content": r}, _opt(_text))),
    _unknown({"role", "content", "reasoning_content"}),
)
_id = st.one_of(_text, st.integers(0, 99))
_METADATA = {"context_id": _opt(_id), "context_ids": _opt(st.lists(_text, max_size=3)), "persona_name": _opt(_text),
             "persona_generation_depth": _opt(st.integers(0, 5)), "instruction_index": _opt(st.integers(0, 10**6)),
             "batch_id": _opt(_id), "session_id": _opt(_id)}
_metadata = st.one_of(st.none(), st.builds(lambda known, extra: {**known, **extra},
                                           st.fixed_dictionaries({}, optional=_METADATA), _unknown(set(_METADATA))))
# criteria as the current judge writes them (feedback) or the first one (comment, integer points), and odd ones
_entry = st.builds(
    lambda score, words, extra: {**score, **words, **extra},
    st.one_of(st.just({}), st.builds(lambda s: {"score": s}, st.one_of(st.none(), st.floats(0, 1), st.integers(-3, 3)))),
    st.one_of(st.just({}), st.builds(lambda f: {"feedback": f}, _opt(_text)), st.builds(lambda c: {"comment": c}, _opt(_text)),
              st.builds(lambda f, c: {"feedback": f, "comment": c}, _opt(_text), _text)),
    _unknown({"score", "feedback", "comment"}, 1),
)
_CRITERIA = ["coherence", "factuality", "grounding", "helpfulness", "relevance", "correctness", "usefulness"]
_evaluation = st.builds(
    lambda entries, known, extra: {**entries, **known, **extra},
    st.dictionaries(st.sampled_from(_CRITERIA), _entry, max_size=4),
    st.fixed_dictionaries({}, optional={"overall_grade": _opt(st.sampled_from(["perfect", "good", "bad", "meh"])),
                                        "final_score": _opt(st.one_of(st.floats(0, 1), st.integers(0, 100)))}),
    st.dictionaries(st.sampled_from(["notes", "relevance_note"]), _scalar, max_size=1),
)
# the current judge's complete verdict, the one shape afterimage's types accept
_current = st.builds(
    lambda entries, grade: {**entries, "overall_grade": grade},
    st.fixed_dictionaries({c: st.builds(lambda s, f, x: {"score": s, "feedback": f, **x}, st.floats(0, 1), _text,
                                        _unknown({"score", "feedback", "comment"}, 1)) for c in _CRITERIA[:5]}),
    st.sampled_from(["perfect", "good", "needs_improvement", "bad", "not_acceptable"]),
)
_TOP = {"persona": _opt(_text), "instruction_context": _opt(_text), "response_context": _opt(_text), "context": _opt(_text),
        "metadata": _metadata, "evaluation": st.one_of(st.none(), _evaluation, _current),
        "final_score": _opt(st.one_of(st.just(0.0), st.floats(0, 1), st.integers(0, 100)))}
_row = st.builds(lambda conversations, known, extra: {"conversations": conversations, **known, **extra},
                 st.lists(_message, max_size=4), st.fixed_dictionaries({}, optional=_TOP),
                 _unknown(set(_TOP) | {"conversations", "system_prompt_parts"}))
_envelope = st.one_of(st.none(), st.builds(lambda parts, extra: {**parts, **extra},
                                           st.fixed_dictionaries({}, optional={"system_prompt_parts": st.lists(_text, max_size=3)}),
                                           _unknown({"system_prompt_parts", "conversations"}, 1)))


def _selected(out: dict) -> dict:
    """One row of the export's query, from mapped rows: what the warehouse hands the reverse mapping."""
    def text(value):
        return None if value is None else orjson.dumps(value).decode()

    [resp] = out["responses"]
    return {**{k: resp.get(k) for k in ("persona", "instruction_context", "response_context", "context", "context_id",
                                        "context_ids", "persona_name", "persona_generation_depth", "instruction_index",
                                        "batch_id", "session_id")},
            "extra": text(resp["extra"]),
            "turns": [dict(t, extra=text(t["extra"])) for t in out.get("turns", [])],
            "evaluations": sorted(({"score": None, "score_scale": None, "label": None, "feedback": None, **e,
                                    "extra": text(e.get("extra"))} for e in out.get("evaluations", [])),
                                  key=lambda e: e["source_locator"])}


def _stored(out: dict) -> dict:
    """Rows as the warehouse stores them: a column the mapping left unset is NULL, rows are a set (by locator)."""
    return {table: sorted(({k: v for k, v in row.items() if v is not None} for row in rows), key=lambda r: r.get("source_locator", ""))
            for table, rows in out.items()}


@settings(max_examples=300, deadline=None)
@given(source=_row, envelope=_envelope)
def test_any_row_comes_back_to_the_same_rows(source, envelope):
    ctx = RecordContext("/x/rows.jsonl", "7", 6, "afterimage")
    first = map_row(json.loads(json.dumps(source)), envelope, ctx)
    written = afterimage_row(_selected(first))
    line = json.dumps(written, ensure_ascii=False)
    again = map_row(json.loads(line), None, ctx)  # read back as a JSONL line, as its own row
    assert _stored(again) == _stored(first)
    if envelope and "system_prompt_parts" in envelope:
        assert written["system_prompt_parts"] == envelope["system_prompt_parts"]


# --- loading with afterimage itself -----------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(source=_row, envelope=_envelope)
def test_the_exporter_knows_which_rows_afterimages_types_accept(source, envelope):
    from afterimage.types import EvaluatedConversationWithContext
    from pydantic import ValidationError

    written = afterimage_row(_selected(map_row(json.loads(json.dumps(source)), envelope, RecordContext("/x/r.jsonl", "1", 0, "afterimage"))))
    try:
        EvaluatedConversationWithContext(**json.loads(json.dumps(written)))
        accepted = True
    except ValidationError:
        accepted = False
    assert fits_current_types(written) == accepted


def test_every_exported_row_loads_with_afterimages_types_except_the_legacy_judges(exported):
    from afterimage.types import EvaluatedConversationWithContext
    from pydantic import ValidationError

    _, lines = exported
    rejected = []
    for i, line in enumerate(lines):
        try:
            row = EvaluatedConversationWithContext(**line)
        except ValidationError as e:
            rejected.append((i, sorted((".".join(map(str, err["loc"])), err["type"]) for err in e.errors())))
            assert not fits_current_types(line)
            continue
        assert fits_current_types(line)
        assert [m.content for m in row.conversations] == [m["content"] for m in line["conversations"]]
        assert row.model_dump()["metadata"] == line["metadata"]
    # only the first judge's row (points, "comment", its own criteria): the original line is rejected the same way
    [(i, errors)] = rejected
    assert lines[i]["final_score"] == 64.0
    assert errors == [
        ("evaluation.coherence.feedback", "missing"), ("evaluation.factuality", "missing"),
        ("evaluation.grounding.feedback", "missing"), ("evaluation.helpfulness", "missing"),
        ("evaluation.relevance.feedback", "missing")]
    original = json.loads((AI / "legacy.jsonl").read_text().splitlines()[0])
    with pytest.raises(ValidationError) as e:
        EvaluatedConversationWithContext(**original)
    assert sorted((".".join(map(str, err["loc"])), err["type"]) for err in e.value.errors()) == errors


def test_afterimages_jsonl_loader_and_analyzer_read_the_export(original, tmp_path):
    from afterimage.analytics.analyzer import DatasetAnalyzer
    from afterimage.storage import JSONLStorage

    out = tmp_path / "rows.jsonl"
    where = "source_format = 'afterimage' AND response_id NOT IN (SELECT response_id FROM evaluations WHERE score_scale = 'points')"
    lines = export_lines(original, out, where)
    loaded = JSONLStorage(conversations_path=out).load_conversations()
    assert len(loaded) == len(lines) == original.one(f"SELECT count(*) FROM responses WHERE {where}")
    assert sum(c.evaluation is not None for c in loaded) == original.one(
        f"SELECT count(DISTINCT response_id) FROM evaluations WHERE criterion = 'overall_grade' AND response_id IN "
        f"(SELECT response_id FROM responses WHERE {where})")
    report = DatasetAnalyzer.from_jsonl(out)
    assert report.summary.total_conversations == len(lines)
    assert report.quality.grade_counts == {r["label"]: r["n"] for r in original.rows(
        f"SELECT label, count(*) AS n FROM evaluations WHERE criterion = 'overall_grade' AND response_id IN "
        f"(SELECT response_id FROM responses WHERE {where}) GROUP BY label")}
    assert {c.final_score for c in loaded} >= {0.914, 0.0}


# --- other formats, notes --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def everything(samples_wh):
    return samples_wh


def test_other_formats_get_the_minimal_mapping_and_load_too(everything, tmp_path):
    from afterimage.types import EvaluatedConversationWithContext

    out = tmp_path / "all.jsonl"
    summary = warehouse.export(everything.root, None, "afterimage", out, progress=False)
    lines = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    assert summary.written == len(lines) == everything.one("SELECT count(*) FROM responses")
    for line in lines:
        EvaluatedConversationWithContext(**line)
    foreign = [line for line in lines if "source_format" in line["metadata"]]
    assert {line["metadata"]["source_format"] for line in foreign} == {"trait_interp", "scale", "dataloop"}
    # trait-interp inference: the raw prompt of its prompt set, the system prompt as its parts
    [photo] = [line for line in foreign if line["conversations"][0]["content"] == "What is photosynthesis?"]
    assert [m["role"] for m in photo["conversations"]] == ["user", "assistant"]
    assert all({m["role"] for m in line["conversations"]} <= {"user", "assistant"} for line in lines)
    with_system = everything.one("SELECT count(*) FROM responses WHERE source_format <> 'afterimage' AND system_prompt IS NOT NULL")
    assert sum("system_prompt_parts" in line for line in foreign) >= with_system
    assert summary.notes[0].startswith(
        "173 responses of other formats (dataloop 18, scale 26, trait_interp 129) written with the minimal mapping: "
        "user and assistant messages as conversations, system prompts as system_prompt_parts; their ")
    assert summary.notes[1:] == [
        "media part: 2 left out (in other formats' conversations; AfterImage messages are user or assistant text)",
        "tool call: 1 left out (in other formats' conversations; AfterImage messages are user or assistant text)",
        "tool message: 1 left out (in other formats' conversations; AfterImage messages are user or assistant text)"]
    # and ingested back they are AfterImage rows with the same prompts and answers
    again = Warehouse(tmp_path / "wh")
    again.ingest(out)
    assert again.rows("SELECT prompt, response FROM responses ORDER BY record_index") == [
        {"prompt": line_prompt(line), "response": line_response(line)} for line in lines]


def line_prompt(line):
    answers = [i for i, m in enumerate(line["conversations"]) if m["role"] == "assistant"]
    before = line["conversations"][: answers[-1]] if answers else line["conversations"]
    return next((m["content"] for m in reversed(before) if m["role"] == "user"), None)


def line_response(line):
    return next((m["content"] for m in reversed(line["conversations"]) if m["role"] == "assistant"), None)


def test_a_response_with_no_text_is_left_out_and_counted(wh, tmp_path):
    from warehouse.formats.afterimage.foreign import foreign_row

    write_json(tmp_path / "experiments" / "e" / "inference" / "responses" / "s" / "1.json", {"prompt": "", "response": None})
    write_json(tmp_path / "experiments" / "e" / "inference" / "responses" / "s" / "2.json", {"prompt": "Q?", "response": None})
    wh.ingest(tmp_path / "experiments")
    s = warehouse.export(wh.root, None, "afterimage", tmp_path / "o.jsonl", progress=False)
    assert (s.selected, s.written) == (2, 1)
    assert s.notes == [
        "1 response of other formats (trait_interp 1) written with the minimal mapping: user and assistant messages "
        "as conversations, system prompts as system_prompt_parts",
        "1 response of other formats (trait_interp 1) had no user or assistant text and were left out"]
    [line] = [json.loads(x) for x in (tmp_path / "o.jsonl").read_text().splitlines()]
    assert line["conversations"] == [{"role": "user", "content": "Q?", "reasoning_content": None}]  # asked, not answered
    unanswered = {"response_id": "r", "source_format": "dataloop", "prompt": "Q", "response": None, "system_prompt": "S", "turns": None}
    assert foreign_row(unanswered)[0]["system_prompt_parts"] == ["S"]


def test_the_legacy_note_says_how_to_leave_those_rows_out(original, tmp_path):
    s = warehouse.export(original.root, "source_format = 'afterimage'", "afterimage", tmp_path / "o.jsonl", progress=False)
    assert s.notes == [
        "1 row kept an evaluation afterimage's current types reject (a legacy judge's points and comments, or not the "
        "five current criteria and a grade), as in its source; leave the first judge's rows out with "
        "--where \"response_id NOT IN (SELECT response_id FROM evaluations WHERE score_scale = 'points')\""]


def test_the_cli_writes_one_jsonl_file(original, tmp_path, capsys):
    from warehouse.cli import main

    out = tmp_path / "x.jsonl"
    assert main(["export", "--root", str(original.root), "--where", "persona = 'A busy parent'", "--format", "afterimage",
                 "--out", str(out), "--quiet"]) == 0
    assert capsys.readouterr().out == ""
    assert [json.loads(x)["conversations"][0]["content"] for x in out.read_text().splitlines()] == [
        "How long until compost is ready?", "Can I use it on houseplants?"]


def test_an_empty_selection_writes_an_empty_file(original, tmp_path):
    s = warehouse.export(original.root, "false", "afterimage", tmp_path / "o.jsonl", progress=False)
    assert (s.written, (tmp_path / "o.jsonl").read_text(), s.notes) == (0, "", [])


def test_a_row_of_its_own_with_system_prompt_parts_reads_as_a_wrapper_row(wh, tmp_path):
    line = {"conversations": [{"role": "user", "content": "q"}], "system_prompt_parts": ["A.", "B."], "wrapper": {"job": "j"}}
    wh.ingest(write_text(tmp_path / "in" / "rows.jsonl", json.dumps(line) + "\n"))
    assert wh.rows("SELECT system_prompt, extra FROM responses") == [
        {"system_prompt": "A. B.", "extra": '{"system_prompt_parts":["A.","B."],"wrapper":{"job":"j"}}'}]


@pytest.mark.realdata
def test_real_afterimage_files_round_trip_and_load(realdata, tmp_path):
    from afterimage.types import EvaluatedConversationWithContext

    first = Warehouse(tmp_path / "first")
    first.ingest(realdata / "afterimage-jsonl")
    out = tmp_path / "real.jsonl"
    lines = export_lines(first, out)
    assert lines
    for line in lines:
        EvaluatedConversationWithContext(**line)
    again = Warehouse(tmp_path / "again")
    again.ingest(out)
    before, after = table_rows(first), table_rows(again)
    for table in TABLES:
        assert after[table] == before[table], table
