"""AfterImage: every variant in tests/fixtures/afterimage, against golden rows, targeted checks and exact errors."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import warehouse
from warehouse.errors import StrictModeError
from warehouse.formatkit.declared import TABLES
from warehouse.formatkit.records import RecordContext, stable_id
from warehouse.formatkit.registry import Registry
from warehouse.formats.afterimage import AfterImage
from warehouse.formats.afterimage.row import map_row
from warehouse.run.worker import detect
from warehouse.store.writer import RowValidator

from ..conftest import FIXTURES, REPO, ingested_cleanly, write_text

INGESTORS = Registry.installed().ingestors()  # every installed format, in detection order

AI = FIXTURES / "afterimage"
GENERATED = AI / "conversations_20250304_101500.jsonl"
ORDER = "ORDER BY source_path, source_locator"


@pytest.fixture(scope="module")
def ai(tmp_path_factory):
    return ingested_cleanly(tmp_path_factory, "ai", AI)


def row(w, file: str, locator: str, columns: str = "*") -> dict:
    [r] = w.rows(f"SELECT {columns} FROM responses WHERE source_path LIKE ? AND source_locator = ?", [f"%/{file}", locator])
    return r


@pytest.mark.parametrize("table, order", [("responses", ORDER), ("turns", ORDER), ("evaluations", ORDER + ", criterion")])
def test_golden_rows(ai, golden, table, order):
    golden(f"afterimage/{table}", ai.rows(f"SELECT * FROM {table} {order}"))


def test_every_file_is_catalogued_as_afterimage_with_its_counts(ai):
    rows = ai.rows("SELECT source_path, source_format, records, records_ingested FROM sources ORDER BY 1")
    assert len(rows) == sum(1 for p in AI.rglob("*.json*"))
    assert {r["source_format"] for r in rows} == {"afterimage"}
    assert {r["source_path"].rsplit("/", 1)[1]: r["records"] for r in rows} == {
        "conversations.json": 2, "conversations_20250304_101500.jsonl": 4, "export_example.json": 1,
        "legacy.jsonl": 2, "unevaluated.jsonl": 7}


def test_ids_are_stable_and_children_point_to_their_response(ai):
    for r in ai.rows("SELECT response_id, record_id, source_path, source_locator FROM responses"):
        assert r["response_id"] == r["record_id"] == stable_id(r["source_path"], r["source_locator"])
    orphans = ai.one(
        "SELECT count(*) FROM (SELECT response_id, record_id FROM turns UNION ALL SELECT response_id, record_id FROM evaluations) c "
        "WHERE (response_id, record_id) NOT IN (SELECT (response_id, record_id) FROM responses)"
    )
    assert orphans == 0


def test_multi_turn_prompt_is_the_user_message_the_last_answer_replies_to(ai):
    r = row(ai, GENERATED.name, "3", "response_id, prompt, response, record_index")
    assert r["prompt"] == "How much cardboard?" and r["record_index"] == 2
    assert r["response"].startswith("Aim for about three parts browns")
    turns = ai.rows("SELECT turn_index, role, content, source_locator FROM turns WHERE response_id = ? ORDER BY turn_index", [r["response_id"]])
    assert [(t["turn_index"], t["role"]) for t in turns] == [(0, "user"), (1, "assistant"), (2, "user"), (3, "assistant")]
    assert turns[0]["content"] == "My compost smells like ammonia. Why?" and turns[3]["source_locator"] == "3.conversations[3]"


def test_user_only_and_empty_answers(ai):
    user_only = row(ai, "unevaluated.jsonl", "5", "response_id, prompt, response")
    assert (user_only["prompt"], user_only["response"]) == ("Hello? Anyone there?", None)
    assert ai.one("SELECT count(*) FROM turns WHERE response_id = ?", [user_only["response_id"]]) == 1
    empty = row(ai, "unevaluated.jsonl", "4", "prompt, response")
    assert (empty["prompt"], empty["response"]) == ("Say nothing.", "")


def test_unicode_escaped_and_raw(ai):
    escaped = row(ai, "unevaluated.jsonl", "6", "prompt, response, persona")
    assert escaped == {"prompt": "Gübre ile kompost arasındaki fark nedir? 🌱",
                       "response": "Kompost toprağı besler; gübre bitkiyi.\n\"Tırnak\" & <etiket> — café", "persona": "Türk bahçıvan"}
    assert "pH ≈ 2" in row(ai, GENERATED.name, "4", "response")["response"]


def test_metadata_keys_are_typed_columns_and_the_rest_goes_to_extra(ai):
    r = row(ai, GENERATED.name, "4", "context_id, context_ids, persona_name, persona_generation_depth, instruction_index, "
            "batch_id, session_id, persona, instruction_context, response_context, extra")
    assert r == {
        "context_id": "doc-compost-03", "context_ids": ["doc-compost-03"], "persona_name": "An apartment dweller with a worm bin",
        "persona_generation_depth": 2, "instruction_index": 4, "batch_id": "batch-0007", "session_id": "sess-2025-03-04",
        "persona": "An apartment dweller with a worm bin", "instruction_context": "Worm bins tolerate little acid.",
        "response_context": "Citrus is acidic; worms dislike large amounts.",
        "extra": '{"metadata":{"generator_model":"gemini-2.0-flash"},"timestamp":"2025-03-04T10:15:02"}',
    }
    # an empty list is kept as written; a key the row lacks is NULL
    assert row(ai, "unevaluated.jsonl", "1", "context_ids")["context_ids"] == []
    assert row(ai, "unevaluated.jsonl", "3", "context_ids, persona_name, extra") == {"context_ids": None, "persona_name": None, "extra": None}


def test_reasoning_content_lands_in_turns(ai):
    rid = row(ai, GENERATED.name, "1", "response_id")["response_id"]
    turns = ai.rows("SELECT role, reasoning_content FROM turns WHERE response_id = ? ORDER BY turn_index", [rid])
    assert turns[0] == {"role": "user", "reasoning_content": None}
    assert turns[1]["reasoning_content"].startswith("The user asks about turning frequency.")


def test_one_evaluation_row_per_criterion_grade_and_final_score(ai):
    rid = row(ai, GENERATED.name, "1", "response_id")["response_id"]
    rows = ai.rows("SELECT criterion, score, score_scale, label, feedback, turn_index FROM evaluations WHERE response_id = ? ORDER BY criterion", [rid])
    assert [(r["criterion"], r["score"], r["score_scale"], r["label"], r["feedback"]) for r in rows] == [
        ("coherence", 0.93, "0-1", None, "Flows well."),
        ("factuality", 0.9, "0-1", None, "Correct."),
        ("final_score", 0.914, "0-1", None, None),
        ("grounding", 0.88, "0-1", None, "Matches the context."),
        ("helpfulness", 0.91, "0-1", None, "Actionable."),
        ("overall_grade", None, None, "perfect", None),
        ("relevance", 0.95, "0-1", None, "On topic."),
    ]
    assert {r["turn_index"] for r in rows} == {None}  # about the whole conversation


def test_unevaluated_rows_have_no_evaluations_and_a_default_zero_is_not_a_score(ai):
    unevaluated = ai.rows("SELECT source_locator FROM evaluations WHERE source_path LIKE '%unevaluated.jsonl'")
    assert unevaluated == []
    assert row(ai, "unevaluated.jsonl", "7", "extra")["extra"] == '{"final_score":0.0}'


def test_legacy_rows_keep_their_scale(ai):
    first = row(ai, "legacy.jsonl", "1", "response_id, context, instruction_context, persona")
    assert first["context"].startswith("Hot composting") and first["instruction_context"] is None
    scores = {r["criterion"]: (r["score"], r["score_scale"], r["feedback"]) for r in ai.rows(
        "SELECT criterion, score, score_scale, feedback FROM evaluations WHERE response_id = ?", [first["response_id"]])}
    assert scores["final_score"] == (64.0, "0-100", None)
    assert scores["correctness"] == (2.0, "points", "Right.")  # the first judge's criteria and its `comment`
    assert set(scores) == {"relevance", "grounding", "correctness", "completeness", "coherence", "usefulness", "overall_grade", "final_score"}
    # null metadata and a 0-1 final score copied inside evaluation (an intermediate writer)
    second = row(ai, "legacy.jsonl", "2", "response_id, context_id, prompt, response, extra")
    assert (second["context_id"], second["prompt"], second["response"], second["extra"]) == (None, "With what?", "A tarp or a layer of straw.", None)
    assert ai.one("SELECT score_scale FROM evaluations WHERE response_id = ? AND criterion = 'final_score'", [second["response_id"]]) == "0-1"
    assert ai.one("SELECT count(*) FROM evaluations WHERE score_scale = '0-100'") == 1


def test_server_wrapper_gives_every_row_its_system_prompt(ai):
    rows = ai.rows("SELECT source_locator, record_index, system_prompt, persona, persona_name, extra FROM responses "
                   "WHERE source_path LIKE '%conversations.json' ORDER BY source_locator")
    assert [(r["source_locator"], r["record_index"]) for r in rows] == [(".conversations[0]", 0), (".conversations[1]", 1)]
    assert {r["system_prompt"] for r in rows} == {"You are a master gardener. Answer questions about home composting."}
    assert json.loads(rows[1]["extra"]) == {"system_prompt_parts": ["You are a master gardener.", "Answer questions about home composting."]}
    assert (rows[1]["persona"], rows[1]["persona_name"]) == ("A busy parent", None)  # the server's rows without metadata


def test_a_single_row_json_file(ai):
    r = row(ai, "export_example.json", "", "record_index, prompt, instruction_index, batch_id, session_id, context_ids")
    assert r == {"record_index": None, "prompt": "What is vermicompost?", "instruction_index": 2, "batch_id": "batch-xyz",
                 "session_id": "sess-001", "context_ids": ["doc-worms", "doc-bins"]}


def test_dpo_pairs_answer_the_same_conversation_and_differ_in_grade(ai):
    pairs = ai.rows("SELECT * EXCLUDE (chosen_response_id, rejected_response_id, conversation_key) FROM dpo_pairs")
    assert pairs == [{
        "first_user_message": "How often should I turn a compost pile?",
        "prompt": "How often should I turn a compost pile?",
        "chosen_response": row(ai, GENERATED.name, "1", "response")["response"],
        "rejected_response": "Whenever you remember, it does not matter much.",
        "chosen_grade": "perfect", "rejected_grade": "needs_improvement",
        "chosen_final_score": 0.914, "chosen_final_score_scale": "0-1",
        "rejected_final_score": 0.556, "rejected_final_score_scale": "0-1", "paired_by": "overall_grade",
    }]


def graded(conversation: list[str], grade: str) -> str:
    turns = [{"role": ("user", "assistant")[i % 2], "content": text} for i, text in enumerate(conversation)]
    return json.dumps({"conversations": turns, "metadata": {}, "evaluation": {"overall_grade": grade}}) + "\n"


def test_dpo_pairs_need_the_whole_conversation_not_the_first_question(wh, tmp_path):
    rows = [
        graded(["Q1", "A1", "Q2", "good answer to Q2"], "good"),
        graded(["Q1", "A1", "Q2", "bad answer to Q2"], "bad"),
        graded(["Q1", "A1", "Q3", "bad answer to Q3"], "bad"),  # another last question
        graded(["Q1", "other A1", "Q2", "bad answer after another A1"], "not_acceptable"),  # another earlier answer
    ]
    write_text(tmp_path / "in" / "rows.jsonl", "".join(rows))
    wh.ingest(tmp_path / "in")
    pairs = wh.rows("SELECT first_user_message, chosen_response, rejected_response FROM dpo_pairs")
    assert pairs == [{"first_user_message": "Q1", "chosen_response": "good answer to Q2", "rejected_response": "bad answer to Q2"}]
    assert wh.one("SELECT prompt FROM dpo_pairs") == "Q2"


def test_dpo_pairs_grow_with_the_answers_not_their_square(wh, tmp_path):
    """AfterImage regenerates and re-grades answers: one conversation may have thousands. Every differently
    graded pair is quadratic (a read of the view ran out of memory); the best answer against each worse
    one is linear, and holds AfterImage's own best-versus-worst pair."""
    grades = ["perfect", "good", "needs_improvement", "bad", "not_acceptable"]
    scores = {"perfect": 0.9, "good": 0.8, "needs_improvement": 0.6, "bad": 0.4, "not_acceptable": 0.2}
    lines = []
    for i in range(200):
        grade = grades[i % 5]
        row = {"conversations": [{"role": "user", "content": "Name a compost ingredient."},
                                 {"role": "assistant", "content": f"answer {i}"}],
               "metadata": {}, "evaluation": {"overall_grade": grade}, "final_score": scores[grade] + i / 10_000}
        lines.append(json.dumps(row) + "\n")
    write_text(tmp_path / "in" / "regraded.jsonl", "".join(lines))
    wh.ingest(tmp_path / "in")
    pairs = warehouse.read(wh.root, "dpo_pairs")
    assert pairs.height == 160  # the 40 answers of the best grade are not rejected; the others once each
    assert set(pairs["chosen_response"]) == {"answer 195"}  # the best grade's highest final score
    assert sorted(pairs["rejected_response"]) == sorted(f"answer {i}" for i in range(200) if i % 5)
    assert ("answer 195", "answer 4") in set(zip(pairs["chosen_response"], pairs["rejected_response"]))  # AfterImage's pair


def test_response_grades_join_responses_for_grade_and_persona_filters(ai):
    rows = ai.rows("SELECT persona, overall_grade, grade_rank, final_score, final_score_scale FROM responses "
                   "JOIN response_grades USING (response_id) WHERE persona LIKE 'A retired%' ORDER BY grade_rank")
    assert rows == [
        {"persona": "A retired teacher who keeps chickens", "overall_grade": "needs_improvement", "grade_rank": 3, "final_score": 0.556, "final_score_scale": "0-1"},
        {"persona": "A retired teacher who keeps chickens", "overall_grade": "good", "grade_rank": 4, "final_score": 0.798, "final_score_scale": "0-1"},
    ]
    assert ai.one("SELECT count(*) FROM response_grades") == 7


def test_the_mapping_page_queries_run(ai):
    doc = (REPO / "docs" / "formats" / "afterimage.md").read_text()
    queries = re.findall(r"```sql\n(.*?)```", doc, re.S)
    assert len(queries) == 4
    results = [ai.rows(q) for q in queries]
    assert all(results)
    assert [r["prompt"] for r in results[-1]] == ["How often should I turn a compost pile?"]  # best vs worst per prompt


# --- detection -----------------------------------------------------------------------------


def test_every_fixture_is_detected_as_its_own_format():
    for path in FIXTURES.rglob("*.json*"):
        head = path.read_bytes()[:65536]
        folder = path.relative_to(FIXTURES).parts[0]  # the fixtures folder is named after the format
        if folder == "near_misses":  # the formats' near misses: of none (tests/formatkit/test_errors.py)
            assert detect(str(path), head, INGESTORS) is None, path
            continue
        expected = max((i.name for i in INGESTORS if folder == i.name or folder.startswith(i.name + "_")), key=len)
        assert detect(str(path), head, INGESTORS).name == expected, path
        assert AfterImage().sniff(str(path), head) == (expected == "afterimage"), path


@pytest.mark.parametrize("text", [
    '{"conversations": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "hello"}]}\n',  # ShareGPT export
    '{"messages": [{"role": "user", "content": "hi"}]}\n',  # OpenAI chat
    '{"prompt": "p", "response": "r"}\n',
])
def test_other_conversation_files_are_not_claimed(text):
    assert not AfterImage().sniff("/x/data.jsonl", text.encode())


# --- other containers ------------------------------------------------------------------------


def test_a_wrapper_without_system_prompt_parts_and_an_array_of_rows(wh, tmp_path):
    rows = [{"conversations": [{"role": "user", "content": f"q{i}"}, {"role": "assistant", "content": f"a{i}"}]} for i in range(2)]
    wrapped = write_text(tmp_path / "in" / "wrapped.json", json.dumps({"conversations": rows, "job": "j1"}))
    array = write_text(tmp_path / "in" / "array.json", json.dumps(rows))
    wh.ingest(wrapped, array)
    got = wh.rows("SELECT source_path, source_locator, prompt, system_prompt, extra FROM responses ORDER BY 1, 2")
    assert [(r["source_path"].rsplit("/", 1)[1], r["source_locator"], r["prompt"], r["system_prompt"], r["extra"]) for r in got] == [
        ("array.json", "[0]", "q0", None, None),
        ("array.json", "[1]", "q1", None, None),
        ("wrapped.json", ".conversations[0]", "q0", None, '{"wrapper":{"job":"j1"}}'),
        ("wrapped.json", ".conversations[1]", "q1", None, '{"wrapper":{"job":"j1"}}'),
    ]


# --- bad lines -----------------------------------------------------------------------------------

GOOD = '{"conversations": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]}'


def quarantine(wh):
    return wh.rows("SELECT locator, stage, error, raw FROM quarantine ORDER BY try_cast(locator AS INTEGER), locator")


def test_bad_lines_are_quarantined_with_their_line_and_the_rest_ingest(wh, tmp_path):
    lines = [
        GOOD,
        '{"conversations": [{"role": "user", "content": "q"}',
        '{"metadata": {}, "persona": "p"}',
        '{"conversations": [{"role": "system", "content": "be nice"}, {"role": "user", "content": "q"}]}',
        '{"conversations": [{"role": "user", "content": "q"}, {"role": "assistant", "content": 42}]}',
        '',
        GOOD,
    ]
    path = write_text(tmp_path / "in" / "rows.jsonl", "\n".join(lines) + "\n")
    s = wh.ingest(path)
    assert (s.records_ingested, s.records_quarantined) == (2, 4)
    assert [(q["locator"], q["stage"], q["error"]) for q in quarantine(wh)] == [
        ("2", "decode", "invalid JSON: unexpected end of data: line 1 column 52 (char 51)"),
        ("3", "map", "not an AfterImage row: no 'conversations' key (keys: metadata, persona); "
                     "each row needs a 'conversations' list of {role, content} messages"),
        ("4", "map", "conversations[0].role: expected 'user' or 'assistant', got string 'system' "
                     "(AfterImage conversations hold only user and assistant messages)"),
        ("5", "map", "conversations[1].content: expected a string, got number 42"),
    ]
    assert quarantine(wh)[2]["raw"] == lines[3]
    assert [r["source_locator"] for r in wh.rows("SELECT source_locator FROM responses ORDER BY 1")] == ["1", "7"]
    assert wh.one("SELECT count(*) FROM turns") == 4  # a quarantined row keeps none of its rows
    assert wh.one("SELECT records || '=' || records_ingested || '+' || records_quarantined FROM sources") == "6=2+4"


@pytest.mark.parametrize("line, error", [
    ('[1, 2]', "expected a JSON object for the AfterImage row, got array [1, 2]"),
    ('{"conversations": "hi"}', "conversations: expected a list of messages, got string 'hi'"),
    ('{"conversations": ["hi"]}', "conversations[0]: expected a JSON object for the message, got string 'hi'"),
    ('{"conversations": [{"content": "q"}]}', "conversations[0].role: missing; every message needs a role, 'user' or 'assistant'"),
    ('{"conversations": [{"role": "user"}]}', "conversations[0].content: missing; every message needs its text as a string"),
    ('{"conversations": [{"role": "user", "content": null}]}', "conversations[0].content: expected a string, got null None"),
    ('{"conversations": [{"role": "tool", "content": "x"}]}',
     "conversations[0].role: expected 'user' or 'assistant', got string 'tool' (AfterImage conversations hold only user and assistant messages)"),
    ('{"conversations": [{"role": "user", "content": "q", "reasoning_content": 1}]}',
     "conversations[0].reasoning_content: expected a string, got number 1"),
    ('{"conversations": [], "metadata": "none"}', "metadata: expected an object, got string 'none'"),
    ('{"conversations": [], "metadata": {"persona_generation_depth": "deep"}}',
     "metadata.persona_generation_depth: expected an integer, got string 'deep'"),
    ('{"conversations": [], "metadata": {"context_ids": "doc1"}}', "metadata.context_ids: expected a list of strings, got string 'doc1'"),
    ('{"conversations": [], "persona": ["a"]}', "persona: expected a string, got array ['a']"),
    ('{"conversations": [], "evaluation": {"coherence": {"score": "high"}}}', "evaluation.coherence.score: expected a number, got string 'high'"),
    ('{"conversations": [], "evaluation": {"overall_grade": 4}}', "evaluation.overall_grade: expected a string, got number 4"),
    ('{"conversations": [], "final_score": "0.9"}', "final_score: expected a number, got string '0.9'"),
])
def test_wrong_shapes_name_the_field_in_the_message(wh, tmp_path, line, error):
    path = write_text(tmp_path / "in" / "rows.jsonl", GOOD + "\n" + line + "\n")
    s = wh.ingest(path)
    assert (s.records_ingested, s.records_quarantined) == (1, 1)
    [q] = quarantine(wh)
    assert (q["locator"], q["stage"], q["error"]) == ("2", "map", error)


def test_a_bad_row_of_the_server_wrapper_is_named_by_its_place(wh, tmp_path):
    path = write_text(tmp_path / "in" / "conversations.json", json.dumps(
        {"system_prompt_parts": ["You help."], "conversations": [json.loads(GOOD), {"conversations": [{"role": "bot", "content": "x"}]}]}))
    wh.ingest(path)
    [q] = quarantine(wh)
    assert (q["locator"], q["error"]) == (
        ".conversations[1]",
        "conversations[0].role: expected 'user' or 'assistant', got string 'bot' (AfterImage conversations hold only user and assistant messages)")


def test_strict_stops_at_the_first_bad_line_with_file_and_line(wh, tmp_path):
    path = write_text(tmp_path / "in" / "rows.jsonl", GOOD + "\n" + '{"persona": "p"}' + "\n")
    with pytest.raises(StrictModeError) as e:
        wh.ingest(path, strict=True)
    assert str(e.value) == (
        f"{path}:2: map: not an AfterImage row: no 'conversations' key (keys: persona); "
        "each row needs a 'conversations' list of {role, content} messages")
    assert not wh.root.exists()  # the run changed nothing: no warehouse was made


# --- property: the mapping keeps every field ------------------------------------------------------

_text = st.text(max_size=10)
_scalar = st.one_of(st.none(), st.booleans(), st.integers(-1000, 1000), _text)
_json = st.recursive(_scalar, lambda inner: st.one_of(st.lists(inner, max_size=2), st.dictionaries(_text, inner, max_size=2)), max_leaves=4)


def _unknown(known):
    return st.dictionaries(st.text(min_size=1, max_size=8).filter(lambda k: k not in known), _json, max_size=2)


_message = st.builds(
    lambda role, content, reasoning, extra: {"role": role, "content": content, **reasoning, **extra},
    st.sampled_from(["user", "assistant"]), _text,
    st.one_of(st.just({}), st.builds(lambda r: {"reasoning_content": r}, st.one_of(st.none(), _text))),
    _unknown({"role", "content", "reasoning_content"}),
)
_METADATA = {"context_id": _text, "context_ids": st.lists(_text, max_size=3), "persona_name": _text,
             "persona_generation_depth": st.integers(0, 5), "instruction_index": st.integers(0, 10**6),
             "batch_id": _text, "session_id": _text}
_metadata = st.builds(lambda known, extra: {**known, **extra},
                      st.fixed_dictionaries({}, optional=_METADATA), _unknown(set(_METADATA)))
_entry = st.builds(lambda score, feedback, extra: {"score": score, "feedback": feedback, **extra},
                   st.floats(0, 1), _text, _unknown({"score", "feedback", "comment"}))
_CRITERIA = ["coherence", "factuality", "grounding", "helpfulness", "relevance"]
_evaluation = st.builds(
    lambda entries, grade: {**entries, "overall_grade": grade},
    st.fixed_dictionaries({c: _entry for c in _CRITERIA}),
    st.sampled_from(["perfect", "good", "needs_improvement", "bad", "not_acceptable"]),
)
_TOP = {"persona": _text, "instruction_context": _text, "response_context": _text, "context": _text,
        "metadata": _metadata, "evaluation": _evaluation, "final_score": st.floats(0.01, 1)}
_row = st.builds(lambda conversations, known, extra: {"conversations": conversations, **known, **extra},
                 st.lists(_message, max_size=5), st.fixed_dictionaries({}, optional=_TOP),
                 _unknown(set(_TOP) | {"conversations"}))


def _rebuild(out: dict) -> dict:
    """The source row, put back together from the mapped rows alone."""
    [resp] = out["responses"]
    extra = dict(resp["extra"] or {})
    row: dict = {"conversations": [
        {"role": t["role"], "content": t["content"], **({"reasoning_content": t["reasoning_content"]} if t["reasoning_content"] is not None else {}),
         **(t["extra"] or {})}
        for t in sorted(out.get("turns", []), key=lambda t: t["turn_index"])
    ]}
    for key in ("persona", "instruction_context", "response_context", "context"):
        if resp[key] is not None:
            row[key] = resp[key]
    metadata = {k: resp[k] for k in _METADATA if resp.get(k) is not None}
    if "context_id" in resp:  # the mapping sets the metadata columns (NULL or not) only for a metadata object
        row["metadata"] = {**metadata, **extra.pop("metadata", {})}
    evaluation = {}
    for e in out.get("evaluations", []):
        if e["criterion"] == "final_score":
            row["final_score"] = e["score"]
        elif e["criterion"] == "overall_grade":
            evaluation["overall_grade"] = e["label"]
        else:
            evaluation[e["criterion"]] = {"score": e["score"], "feedback": e["feedback"], **(e["extra"] or {})}
    if evaluation:
        row["evaluation"] = evaluation
    row.update(extra)
    return row


def _normal(row: dict) -> dict:
    """Nulls the mapping cannot tell from absence (an unset reasoning_content) are dropped."""
    row = dict(row, conversations=[{k: v for k, v in m.items() if not (k == "reasoning_content" and v is None)} for m in row["conversations"]])
    return row


@settings(max_examples=200, deadline=None)
@given(source=_row)
def test_afterimage_mapping_keeps_every_field(source):
    ctx = RecordContext("/x/rows.jsonl", "7", 6, "afterimage")
    out = map_row(json.loads(json.dumps(source)), None, ctx)
    assert _rebuild(out) == _normal(source)
    [resp] = out["responses"]
    messages = source["conversations"]
    answers = [i for i, m in enumerate(messages) if m["role"] == "assistant"]
    before = messages[: answers[-1]] if answers else messages
    users = [m["content"] for m in before if m["role"] == "user"]
    assert resp["response"] == (messages[answers[-1]]["content"] if answers else None)
    assert resp["prompt"] == (users[-1] if users else None)
    assert {e["score_scale"] for e in out.get("evaluations", []) if e.get("score") is not None} <= {"0-1"}
    for table, rows in out.items():  # and every row fits its table's declared types
        for r in rows:
            RowValidator(TABLES[table]).values(dict(r, source_path="/x", source_locator="7"))


def test_the_fast_paths_ids_of_a_block_are_the_record_paths_ids():
    """`stable_ids` hashes the path once for a block's lines; every id is `stable_id`'s."""
    from warehouse.formatkit.records import stable_id, stable_ids

    for path in ("/data/conversations.jsonl", "/données/é.jsonl", "/bad/\udcff.jsonl"):
        locators = ["1", "2", "10", "3.conversations[1]", ""]
        assert stable_ids(path, locators) == [stable_id(path, loc) for loc in locators]
