"""Scale GenAI Turns: every variant in tests/fixtures/scale, golden rows, targeted checks, bad input, properties."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from warehouse.formatkit.declared import TABLES
from warehouse.formatkit.records import Record, RecordContext, stable_id
from warehouse.formats.scale import Scale
from warehouse.formats.scale.turn import map_turn
from warehouse.store.writer import RowValidator

from ..conftest import FIXTURES, REALDATA, ingested_cleanly, write_text

SC = FIXTURES / "scale"
ORDER = "ORDER BY source_path, source_locator"
#: the annotation types of Scale's v2 API (annotation_type.py), workspace_container included
TYPES = {
    "integer", "boolean", "text", "category", "category_multiple", "file", "labeled_text",
    "ranked_choices", "ranked_groups", "rubric_criteria", "rubric_rating", "workspace_container",
}


@pytest.fixture(scope="module")
def sc(tmp_path_factory):
    return ingested_cleanly(tmp_path_factory, "sc", SC)


def path_of(name: str) -> str:
    return str(SC / name)


@pytest.mark.parametrize(
    "table", ["responses", "turns", "annotations", "evaluations", "attachments", "chunks", "reference_texts", "rubric_criteria"]
)
def test_golden_rows(sc, golden, table):
    golden(f"scale/{table}", sc.rows(f"SELECT * FROM {table} {ORDER}"))


def test_every_file_is_catalogued_with_its_records(sc):
    rows = sc.rows("SELECT source_path, source_format, records, records_ingested FROM sources ORDER BY 1")
    got = {r["source_path"].removeprefix(str(SC) + "/"): r["records"] for r in rows}
    assert {r["source_format"] for r in rows} == {"scale"}
    assert all(r["records"] == r["records_ingested"] for r in rows)
    assert got == {
        "core/turn_full.json": 1,
        "delivery/page.json": 1,
        "delivery/task.json": 3,  # the thread's own annotations, and two turns
        "delivery/tasks.jsonl": 3,  # task 2: one turn; task 3: thread annotations and one turn
        "delivery/thread.json": 1,
        "messages/instruction.json": 1,
        "messages/model_responses.json": 2,
        "rlhf/turns.json": 2,
        "rubrics/turn.json": 1,
        "sft/batch.jsonl": 3,
    }


def test_fixtures_cover_every_annotation_type(sc):
    types = {r["annotation_type"] for r in sc.rows("SELECT DISTINCT annotation_type FROM annotations")}
    assert TYPES <= types
    # the doc quirks: a `<string>` type placeholder, and the abbreviated {key, value} form without one
    assert {"<string>", None} <= types


def test_candidates_share_the_prompt_and_the_record(sc):
    path = path_of("rlhf/turns.json")
    rows = sc.rows(f"SELECT * FROM responses WHERE source_path = ? {ORDER}", [path])
    first = [r for r in rows if r["turn_id"] == "turn_rlhf_001"]
    assert [(r["candidate_index"], r["source_id"], r["inference_model"]) for r in first] == [
        (0, "model_1", "acme-chat-7b"), (1, "model_2", "acme-chat-13b")]
    assert {r["prompt"] for r in first} == {"Explain why the sky is blue in two sentences."}
    for r in first:
        assert r["response_id"] == stable_id(path, r["source_locator"])
        assert r["record_id"] == stable_id(path, "[0]")
    turns = sc.rows("SELECT turn_index, role, response_id, record_id FROM turns WHERE source_path = ? AND source_locator LIKE '[0]%' "
                    "ORDER BY turn_index", [path])
    assert [t["response_id"] for t in turns] == [None, first[0]["response_id"], first[1]["response_id"]]
    assert {t["record_id"] for t in turns} == {stable_id(path, "[0]")}
    second = [r for r in rows if r["turn_id"] == "turn_rlhf_002"]
    assert {(r["prompt"], r["system_prompt"]) for r in second} == {("What is 7 times 8?", "Answer briefly.")}


def test_a_turn_without_an_assistant_message_still_gives_one_row(sc):
    path = path_of("sft/batch.jsonl")
    [r] = sc.rows("SELECT * FROM responses WHERE source_path = ? AND source_locator = '3'", [path])
    assert (r["prompt"], r["response"], r["candidate_index"], r["source_id"]) == ("Write a haiku about autumn.", None, None, None)
    assert r["response_id"] == r["record_id"] == stable_id(path, "3")
    assert sc.one("SELECT response_id FROM turns WHERE source_path = ? AND source_locator = '3.messages[0]'", [path]) is None


def test_a_prompt_is_read_before_the_run_of_candidates(sc):
    rows = sc.rows("SELECT source_locator, candidate_index, prompt, response FROM responses "
                   f"WHERE source_path = ? AND turn_id = 'turn_sft_003' {ORDER}", [path_of("sft/batch.jsonl")])
    # a tool exchange: the second answer follows a function message, the user question is still its prompt
    assert [(r["source_locator"], r["candidate_index"], r["prompt"]) for r in rows] == [
        ("4.messages[1]", 0, "What's the weather in Paris?"), ("4.messages[3]", 1, "What's the weather in Paris?")]
    roles = sc.rows("SELECT role, source_id FROM turns WHERE source_path = ? AND source_locator LIKE '4.%' ORDER BY turn_index",
                    [path_of("sft/batch.jsonl")])
    assert [r["role"] for r in roles] == ["user", "assistant", "function", "assistant"]


def test_lone_messages_are_one_message_turns(sc):
    [user] = sc.rows("SELECT * FROM responses WHERE source_path = ?", [path_of("messages/instruction.json")])
    assert (user["prompt"], user["response"], user["source_locator"]) == ("Write a limerick about a cat.", None, "")
    rows = sc.rows(f"SELECT * FROM responses WHERE source_path = ? {ORDER}", [path_of("messages/model_responses.json")])
    assert [(r["source_locator"], r["prompt"], r["response"], r["source_id"], r["candidate_index"]) for r in rows] == [
        ("[0]", None, "A cat with a hat sat flat.", "model_1", 0),
        ("[1]", None, "There once was a cat from Peru...", "model_2", 0),
    ]
    levels = sc.rows("SELECT level, target, turn_index, response_id FROM annotations WHERE source_path = ? "
                     f"{ORDER}", [path_of("messages/model_responses.json")])
    assert [(a["level"], a["target"], a["turn_index"]) for a in levels] == [("message", "[0]", 0), ("message", "[0]", 0), ("message", "[1]", 0)]
    assert levels[0]["response_id"] == rows[0]["response_id"]


def test_model_parameters_are_typed_columns(sc):
    t = sc.rows("SELECT model, temperature, max_completion_tokens, top_p, top_k, extra FROM turns "
                "WHERE source_path = ? AND turn_index = 2", [path_of("core/turn_full.json")])[0]
    assert (t["model"], t["temperature"], t["max_completion_tokens"], t["top_p"], t["top_k"]) == ("acme-chat-7b", 0.7, 512, 0.95, 40)
    extra = json.loads(t["extra"])
    assert extra["model_parameters"] == {"seed": 11} and extra["latency_ms"] == 840


def test_reasoning_is_joined_and_its_parts_kept(sc):
    t = sc.rows("SELECT reasoning_content, extra FROM turns WHERE source_path = ? AND turn_index = 2", [path_of("core/turn_full.json")])[0]
    assert t["reasoning_content"] == "The notes give two figures.\n\nThe chart shows the same trend."
    assert json.loads(t["extra"])["content"]["reasoning"] == [
        {"content": "The notes give two figures."}, {"content": "The chart shows the same trend."}]
    one = sc.rows("SELECT reasoning_content, extra FROM turns WHERE source_locator = '1.messages[2]'")[0]
    assert one == {"reasoning_content": "Give the textbook definition.", "extra": None}


def test_annotation_levels_targets_and_links(sc):
    rows = sc.rows("SELECT level, target, turn_index, response_id, record_id FROM annotations WHERE source_path = ? "
                   f"{ORDER}", [path_of("core/turn_full.json")])
    assert [(r["level"], r["target"], r["turn_index"]) for r in rows] == [
        ("turn", "", None), ("message", ".messages[2]", 2), ("chunk", ".messages[2].content.chunks[0]", 2)]
    candidate = stable_id(path_of("core/turn_full.json"), ".messages[2]")
    # one candidate: a turn-level annotation is about it; message and chunk annotations are about their message
    assert {r["response_id"] for r in rows} == {candidate}
    several = sc.rows("SELECT DISTINCT response_id FROM annotations WHERE source_path = ? AND level = 'turn'", [path_of("rlhf/turns.json")])
    assert several == [{"response_id": None}]  # two candidates: about the whole turn (join on record_id)


def test_labels_follow_possible_values_flat_or_nested(sc):
    rows = sc.rows("SELECT source_locator, value, label, possible_values FROM annotations WHERE source_path = ? "
                   f"{ORDER}", [path_of("core/turn_full.json")])
    assert [(r["value"], r["label"]) for r in rows] == [("3", "No Issues"), ("3", "No Issues"), ("2", "Minor Issues")]
    assert json.loads(rows[0]["possible_values"]) == [[1, 2, 3]]  # kept nested, as written
    labelled = {(r["key"], r["label"]) for r in sc.rows(
        "SELECT key, label FROM annotations WHERE source_path = ? AND label IS NOT NULL", [path_of("rlhf/turns.json")])}
    assert labelled == {("helpfulness", "Excellent"), ("helpfulness", "Poor"), ("tone", "neutral"), ("likert_value", "Much")}


def test_values_keep_their_json_and_typed_copies(sc):
    rows = {r["key"]: r for r in sc.rows(
        "SELECT key, value, value_number, value_text FROM annotations WHERE source_locator LIKE '[0].messages[1].annotations%'")}
    assert (rows["helpfulness"]["value"], rows["helpfulness"]["value_number"]) == ("5", 5.0)
    assert (rows["contains_errors"]["value"], rows["contains_errors"]["value_number"]) == ("false", 0.0)
    assert rows["tone"]["value_text"] == "neutral"
    assert json.loads(rows["issues"]["value"]) == ["vague"] and rows["issues"]["value_number"] is None
    assert json.loads(rows["claims"]["value"]) == [{"label": "correct", "text": "blue light scatters most"}]
    flags = sc.rows("SELECT key, not_applicable, cannot_assess, note, value FROM annotations "
                    "WHERE source_locator LIKE '[0].messages[2].annotations%' ORDER BY source_locator")
    assert [(f["key"], f["not_applicable"], f["cannot_assess"], f["note"], f["value"]) for f in flags] == [
        ("helpfulness", False, False, "A common myth.", "2"), ("contains_errors", None, None, None, "true"),
        ("evidence", None, None, None, flags[2]["value"]), ("tone", None, True, None, None)]


def test_numeric_ratings_are_evaluations_joined_to_the_messages_they_rate(sc):
    rows = sc.rows(
        "SELECT t.source_id, t.content, e.score, e.score_scale, e.label, e.feedback FROM evaluations e "
        "JOIN turns t USING (record_id, turn_index) WHERE e.criterion = 'helpfulness' AND e.source_path = ? ORDER BY t.source_id",
        [path_of("rlhf/turns.json")])
    assert [(r["source_id"], r["score"], r["score_scale"], r["label"], r["feedback"]) for r in rows] == [
        ("model_1", 5.0, "1-5", "Excellent", "Clear and complete."), ("model_2", 2.0, "1-5", "Poor", "A common myth.")]
    # every evaluation from an annotation sits at that annotation's place: they join on it
    orphans = sc.one("SELECT count(*) FROM evaluations e WHERE e.criterion NOT LIKE 'rubric_%' AND e.criterion NOT LIKE 'crit_%' "
                     "AND NOT EXISTS (SELECT 1 FROM annotations a WHERE a.source_path = e.source_path "
                     "AND a.source_locator = e.source_locator AND a.key = e.criterion)")
    assert orphans == 0
    # booleans and text are not ratings
    assert sc.one("SELECT count(*) FROM evaluations WHERE criterion IN ('contains_errors', 'tone', 'rewrite')") == 0


def test_the_preferred_candidate_is_found_from_the_turn_annotation(sc):
    rows = sc.rows(
        "SELECT r.turn_id, r.response FROM annotations a JOIN responses r ON r.record_id = a.record_id "
        "AND r.source_id = a.value_text WHERE a.key = 'selected_model_id' ORDER BY r.turn_id")
    assert rows == [
        {"turn_id": "turn_rlhf_001", "response": "Sunlight scatters off air molecules, and blue light scatters most. "
                                                 "So we see blue from every direction."},
        {"turn_id": "turn_rlhf_002", "response": "56"},
    ]


def test_deliveries_keep_task_and_thread_context(sc):
    rows = sc.rows("SELECT source_locator, task_id, thread_id, thread_turn_index, turn_id, extra->'task'->>'project' project, "
                   f"extra->'thread'->'submissions'->0->>'contributor_id' contributor FROM responses WHERE source_path = ? {ORDER}",
                   [path_of("delivery/task.json")])
    assert [(r["source_locator"], r["thread_turn_index"], r["turn_id"]) for r in rows] == [
        (".threads[0].turns[0].messages[1]", 0, "turn_t1"), (".threads[0].turns[0].messages[2]", 0, "turn_t1"),
        (".threads[0].turns[1].messages[1]", 1, "turn_t2")]
    assert {(r["task_id"], r["thread_id"], r["project"], r["contributor"]) for r in rows} == {
        ("task_001", "thread_001", "proj_rlhf", "c_77")}
    jsonl = sc.rows(f"SELECT source_locator, task_id FROM responses WHERE source_path = ? {ORDER}", [path_of("delivery/tasks.jsonl")])
    assert [r["source_locator"] for r in jsonl] == ["1.threads[0].turns[0].messages[1]", "1.threads[0].turns[0].messages[2]",
                                                    "2.threads[0].turns[0].messages[1]"]
    page = sc.rows("SELECT task_id, extra->'delivery'->>'next_token' token FROM responses WHERE source_path = ?", [path_of("delivery/page.json")])
    assert page == [{"task_id": "task_004", "token": "tok_2"}]


def test_thread_annotations_join_their_turns_by_thread_id(sc):
    rows = sc.rows(
        "SELECT a.key, a.value, a.level, a.target, count(DISTINCT r.turn_id) turns FROM annotations a "
        "JOIN responses r USING (thread_id) WHERE a.level = 'thread' GROUP BY ALL ORDER BY a.target, a.key")
    assert [(r["key"], r["value"], r["target"], r["turns"]) for r in rows] == [
        ("conversation_comment", '"Stayed on topic."', ".threads[0]", 2),
        ("conversation_quality", "6", ".threads[0]", 2),
        ("conversation_quality", "3", "2.threads[0]", 1),
    ]
    assert sc.one("SELECT score_scale FROM evaluations WHERE criterion = 'conversation_quality' AND source_path LIKE '%task.json'") == "1-7"


def test_attachments_keep_their_bytes_outside_turns(sc):
    rows = sc.rows(f"SELECT * FROM attachments {ORDER}")
    by_name = {r["name"]: r for r in rows}
    assert by_name["notes.txt"]["content"] == "UTMgbm90ZXM6IHJldmVudWUgKzEyJQ=="
    assert (by_name["chart.png"]["mime_type"], by_name["chart.png"]["size_bytes"]) == ("image/png", 48213)
    audio = next(r for r in rows if r["mime_type"] == "audio/wav")
    assert (audio["duration"], audio["transcript"], audio["transcript_start"], audio["transcript_end"]) == (
        12.5, "Revenue is up, churn is down.", 0.5, 11.0)
    assert sc.one("SELECT CAST(from_base64(content) AS VARCHAR) FROM attachments WHERE name = 'notes.txt'") == "Q3 notes: revenue +12%"
    # no column of turns holds attachment bytes
    assert sc.one("SELECT count(*) FROM turns WHERE CAST(extra AS VARCHAR) LIKE '%UTMgbm90%' OR content LIKE '%UTMgbm90%'") == 0
    # a file annotation's bytes move to attachments; its value keeps the rest of the file
    evidence = sc.rows("SELECT annotation_id, value FROM annotations WHERE key = 'evidence'")[0]
    assert json.loads(evidence["value"]) == [{"mime_type": "text/plain", "name": "myth.txt", "url": "https://example.com/myth.txt",
                                              "scale_url": "https://scale.example/files/myth.txt"}]
    assert by_name["myth.txt"]["annotation_id"] == evidence["annotation_id"] and by_name["myth.txt"]["content"] == "VGhlIG9jZWFuIG15dGg="


def test_chunks_and_reference_texts_are_queryable_per_message(sc):
    chunks = sc.rows("SELECT c.chunk_index, c.text, t.role, count(a.annotation_id) annotations FROM chunks c "
                     "JOIN turns t USING (record_id, turn_index) LEFT JOIN annotations a ON a.level = 'chunk' "
                     "AND a.target = c.source_locator AND a.source_path = c.source_path GROUP BY ALL ORDER BY 1")
    assert chunks == [{"chunk_index": 0, "text": "Revenue grew 12%", "role": "assistant", "annotations": 1},
                      {"chunk_index": 1, "text": "churn fell to 2.1%", "role": "assistant", "annotations": 0}]
    refs = sc.rows("SELECT reference_index, content, category, url, extra FROM reference_texts ORDER BY 1")
    assert [(r["category"], r["url"]) for r in refs] == [("finance", "https://example.com/q3"), ("retention", None)]
    assert refs[1]["extra"] == '{"retrieved_by":"bm25"}'


def test_rubrics_criteria_and_their_scores(sc):
    crits = sc.rows("SELECT criterion_id, criterion, weight, max_total_score, extra FROM rubric_criteria ORDER BY criterion_index")
    assert [(c["criterion_id"], c["weight"], c["max_total_score"]) for c in crits] == [("crit_accuracy", 3.0, 10.0), ("crit_units", 2.0, 10.0)]
    assert crits[0]["extra"] == '{"rubric":{"version":2}}'
    scored = sc.rows("SELECT c.criterion_id, e.score, c.weight FROM evaluations e JOIN rubric_criteria c "
                     "ON c.record_id = e.record_id AND c.criterion_id = e.criterion ORDER BY 1")
    assert [(s["criterion_id"], s["score"] * s["weight"]) for s in scored] == [("crit_accuracy", 6.0), ("crit_units", 2.0)]
    totals = sc.rows("SELECT criterion, score, score_scale FROM evaluations WHERE criterion LIKE 'rubric_%' ORDER BY 1")
    assert totals == [{"criterion": "rubric_percentage", "score": 80.0, "score_scale": "0-100"},
                      {"criterion": "rubric_total_score", "score": 8.0, "score_scale": "0-10"}]
    rating = sc.rows("SELECT score, feedback, extra FROM evaluations WHERE criterion = 'accuracy_rating'")[0]
    assert rating == {"score": 2.0, "feedback": "Correct value.", "extra": '{"color":"green"}'}
    left = sc.one("SELECT extra FROM turns WHERE source_path = ? AND turn_index = 1", [path_of("rubrics/turn.json")])
    assert json.loads(left) == {"rubric_evaluations": [{"grader": "rater_17"}]}


# --- detection ---------------------------------------------------------------------------------


def _head(path) -> bytes:
    return path.read_bytes()[: 64 * 1024]


def test_sniff_claims_every_scale_fixture_and_no_other_format():
    scale = Scale()
    for p in sorted(SC.rglob("*.json*")):
        assert scale.sniff(str(p), _head(p)), p
    for p in sorted((FIXTURES / "trait_interp").rglob("*.json*")):
        assert not scale.sniff(str(p), _head(p)), p
    if REALDATA.is_dir():
        for p in sorted(REALDATA.rglob("*.json*")):
            assert scale.sniff(str(p), _head(p)) == ("scale-turn" in p.parts), p


def test_a_message_whose_source_id_is_past_the_head_is_still_detected():
    big = {"role": "user", "content": {"text": "hi", "attachments": [{"content": "A" * 70000}]}, "source_id": "u"}
    head = json.dumps(big).encode()[: 64 * 1024]
    assert b'"source_id"' not in head and Scale().sniff("m.json", head)


# --- bad input ------------------------------------------------------------------------------------


def quarantine(wh):
    return [(q["locator"], q["stage"], q["error"]) for q in
            wh.rows("SELECT locator, stage, error FROM quarantine ORDER BY source_path, locator")]


def test_bad_turns_are_quarantined_at_their_json_path(wh, tmp_path):
    good = {"role": "user", "content": {"text": "ok"}, "source_id": "u", "annotations": []}
    turns = [
        {"id": "t0", "messages": [good]},
        {"id": "t1", "messages": [good, "hi"]},
        {"id": "t2", "messages": [{"content": {"text": "x"}, "source_id": "u"}]},
        {"id": "t3", "messages": [dict(good, model_parameters={"temperature": "hot"})]},
        {"id": "t4", "messages": [good], "annotations": {"key": "a", "value": 1}},
        {"id": "t5", "messages": [dict(good, annotations=[{"key": "ok", "value": 1}, {"value": 2}])]},
        {"id": "t6", "messages": [dict(good, annotations=[{"key": "q", "labels": [1, 2], "value": 1}])]},
        {"id": "t7", "messages": [dict(good, content=42)]},
        {"id": "t8", "messages": [dict(good, content={"attachments": ["x.png"]})]},
        {"foo": 1},
        {"id": "t10", "messages": {"role": "user"}},
    ]
    path = write_text(tmp_path / "in" / "turns.json", json.dumps(turns))
    s = wh.ingest(path)
    assert (s.records_ingested, s.records_quarantined) == (1, 10)
    assert quarantine(wh) == [
        ("[10].messages", "map", "messages: expected a list, got object {'role': 'user'}"),
        ("[1].messages[1]", "map", "expected a JSON object for the message, got string 'hi'"),
        ("[2].messages[0].role", "map", "message without a role: expected system, user, assistant or function"),
        ("[3].messages[0].model_parameters.temperature", "map", "temperature: expected a number, got string 'hot'"),
        ("[4].annotations", "map", "annotations: expected a list, got object {'key': 'a', 'value': 1}"),
        ("[5].messages[0].annotations[1]", "map",
         "annotation without a key: Scale names every question in `key`; add it or remove the annotation"),
        ("[6].messages[0].annotations[0].labels", "map", "labels: expected a list of strings, got array [1, 2]"),
        ("[7].messages[0].content", "map", "content: expected an object {text, attachments, ...}, got number 42"),
        ("[8].messages[0].content.attachments[0]", "map", "expected a JSON object for the file, got string 'x.png'"),
        ("[9]", "map", "not a Scale record: no messages, role or content key (keys: foo); expected a Turn {id, messages, "
                       "annotations}, a Message {role, content, source_id}, a Thread {turns} or a Task {threads}; pass --format "
                       "to read it as another format"),
    ]
    # a quarantined record keeps none of its rows; the good one keeps all of its own
    assert wh.one("SELECT count(*) FROM turns") == 1 and wh.one("SELECT count(*) FROM annotations") == 0


NOT_SCALE = ("not a Scale turn: no message has a source_id or a content object {text, ...} (Scale writes both); "
             "expected a Turn {id, messages: [{role, content: {text}, source_id}]}. A chat row of "
             "{role, content: string} messages is a Hugging Face / OpenAI chat row: read it with --format hf_chat")


def test_an_openai_chat_jsonl_forced_as_scale_is_refused_naming_the_expected_shape(wh, tmp_path):
    """A chat file of {"messages": [{role, content: string}]} lines read as Scale turns gave a turn per line,
    silently: a turn must show that it is Scale's (a source_id, a content object)."""
    lines = [{"messages": [{"role": "system", "content": "Be kind."}, {"role": "user", "content": f"Q{i}"},
                           {"role": "assistant", "content": f"A{i}"}]} for i in range(40)]
    lines.append({"role": "user", "content": "a lone message of another format"})
    path = write_text(tmp_path / "in" / "chat.jsonl", "".join(json.dumps(line) + "\n" for line in lines))
    s = wh.ingest(path, source_format="scale")
    assert (s.records_ingested, s.records_quarantined) == (0, 41)
    assert {error for _, _, error in quarantine(wh)} == {NOT_SCALE}
    assert wh.one("SELECT count(*) FROM responses") == 0


def test_bad_jsonl_lines_name_the_line_and_the_path_inside(wh, tmp_path):
    good = {"id": "t", "messages": [{"role": "user", "content": {"text": "q"}, "source_id": "u", "annotations": []}]}
    bad = {"id": "t", "messages": [{"role": "assistant", "content": {"text": "a"}, "source_id": "m",
                                    "model_parameters": {"top_k": 0.5}, "annotations": []}]}
    path = write_text(tmp_path / "in" / "turns.jsonl", json.dumps(good) + "\n{oops\n" + json.dumps(bad) + "\n")
    wh.ingest(path)
    assert quarantine(wh) == [
        ("2", "decode", "invalid JSON: unexpected character, expected a string key: line 1 column 2 (char 1)"),
        ("3.messages[0].model_parameters.top_k", "map", "top_k: expected an integer, got number 0.5"),
    ]
    assert wh.one("SELECT records || '=' || records_ingested || '+' || records_quarantined FROM sources") == "3=1+2"


def test_a_bad_turn_of_a_task_leaves_its_siblings_and_the_thread_annotations(wh, tmp_path):
    turn = {"id": "t", "messages": [{"role": "user", "content": {"text": "q"}, "source_id": "u", "annotations": []}]}
    tasks = [
        {"task_id": "ok", "status": "completed", "threads": [{"id": "th", "annotations": [{"key": "q", "value": 1}],
                                                            "turns": [turn, {"id": "bad", "messages": [7]}]}]},
        {"task_id": "task_p", "status": "pending", "threads": []},
        {"task_id": "task_e", "status": "completed", "threads": [{"id": "th2", "turns": [], "annotations": []}]},
        {"task_id": "task_x", "threads": "none"},
    ]
    path = write_text(tmp_path / "in" / "tasks.json", json.dumps(tasks))
    s = wh.ingest(path)
    assert (s.records_ingested, s.records_quarantined) == (2, 4)
    assert quarantine(wh) == [
        ("[0].threads[0].turns[1].messages[0]", "map", "expected a JSON object for the message, got number 7"),
        ("[1]", "map", "Scale Task 'task_p' has no threads (status 'pending'): Scale delivers threads only for completed tasks, "
                       "so there is nothing to ingest"),
        ("[2].threads[0]", "map", "thread has no turns: a Scale thread holds its conversation in `turns`; nothing to ingest"),
        ("[3].threads", "map", "threads: expected a list, got string 'none'"),
    ]
    assert wh.rows("SELECT level, thread_id FROM annotations") == [{"level": "thread", "thread_id": "th"}]
    raw = wh.one("SELECT raw FROM quarantine WHERE locator = '[1]'")
    assert json.loads(raw) == {"task_id": "task_p", "status": "pending"}


# --- shapes around a turn: datasets-API tasks, tasks without threads, near misses -----------------------------


def test_a_datasets_api_task_is_a_response(wh):
    """{task_id, dataset, delivery, response: {prompt, answer}}: scaleapi's DatasetTask, read as a response."""
    s = wh.ingest(FIXTURES / "scale_datasets")
    assert (s.records_ingested, s.records_quarantined) == (3, 0)
    rows = wh.rows("SELECT source_format, source_locator, task_id, prompt, response, extra FROM responses ORDER BY task_id")
    assert [(r["source_format"], r["source_locator"], r["task_id"], r["prompt"], r["response"]) for r in rows] == [
        ("scale", "", "dtask_1", "What is 2+2?", "4"),
        ("scale", ".tasks[0]", "dtask_2", "What is 3*3?", "9"),
        ("scale", ".tasks[1]", "dtask_3", "Name a prime above 10.", None),
    ]
    assert json.loads(rows[0]["extra"]) == {"dataset": "dataset_1", "delivery": "ddel_1",
                                            "response": {"prompt": "What is 2+2?", "answer": "4"}}
    assert json.loads(rows[1]["extra"])["page"] == {"next_token": "tok_2"}


def test_a_task_without_threads_is_quarantined_saying_so(wh, tmp_path):
    """scaleapi serialises a Task that is not completed without a threads key at all."""
    task = {"task_id": "task_9", "project": "proj", "batch": "b1", "status": "pending", "created_at": "2026-01-01T00:00:00Z"}
    wh.ingest(write_text(tmp_path / "in" / "task.json", json.dumps(task)))
    assert wh.rows("SELECT source_format, locator, error FROM quarantine") == [{
        "source_format": "scale", "locator": "",
        "error": "Scale Task 'task_9' has no threads (status 'pending'): Scale delivers threads only for completed "
                 "tasks, so there is nothing to ingest"}]


@pytest.mark.parametrize("task, locator, error", [
    ({"task_id": "d", "dataset": "s", "delivery": "v", "response": {"rating": 3}}, ".response",
     "a Scale dataset task {task_id, dataset, delivery, response: {prompt, answer}}: its response holds neither a "
     "prompt nor an answer text (keys: rating); nothing to read as a response"),
    ({"task_id": "d", "dataset": "s", "delivery": "v"}, ".response",
     "a Scale dataset task {task_id, dataset, delivery, response: {prompt, answer}} needs a response object; got none"),
    ({"task_id": "d", "dataset": "s", "response": {"prompt": 5}}, ".response.prompt", "prompt: expected a string, got number 5"),
])
def test_a_near_miss_of_a_dataset_task_names_the_shape_and_what_is_missing(wh, tmp_path, task, locator, error):
    wh.ingest(write_text(tmp_path / "in" / "task.json", json.dumps(task)))
    assert wh.rows("SELECT source_format, locator, error FROM quarantine") == [
        {"source_format": "scale", "locator": locator, "error": error}]
    assert wh.one("SELECT count(*) FROM responses") == 0


# --- properties --------------------------------------------------------------------------------------

json_scalar = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6), st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=8))
json_value = st.recursive(json_scalar, lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)), max_leaves=6)
TURN_KEYS = {"id", "messages", "annotations", "rubrics"}
MESSAGE_KEYS = {"role", "content", "source_id", "model_parameters", "annotations", "rubric_evaluations"}
CONTENT_KEYS = {"text", "reference_texts", "attachments", "chunks", "reasoning"}
ANNOTATION_KEYS = {"id", "key", "type", "title", "description", "labels", "not_applicable", "cannot_assess", "metadata",
                   "justification", "value", "possible_values"}


def extras(known):
    return st.dictionaries(st.text(min_size=1, max_size=8).filter(lambda k: k not in known), json_value, max_size=3)


annotation = st.fixed_dictionaries(
    {"key": st.text(min_size=1, max_size=8), "value": json_value},
    optional={"type": st.sampled_from(sorted(TYPES - {"file"}) + ["<string>"]), "title": st.text(max_size=8),
              "labels": st.lists(st.text(max_size=4), max_size=3), "possible_values": json_value},
).flatmap(lambda a: extras(ANNOTATION_KEYS).map(lambda e: {**e, **a}))
message = st.fixed_dictionaries(
    {"role": st.sampled_from(["system", "user", "assistant", "function"]), "source_id": st.text(max_size=6),
     "content": st.fixed_dictionaries({"text": st.one_of(st.none(), st.text(max_size=20))}).flatmap(
         lambda c: extras(CONTENT_KEYS).map(lambda e: {**e, **c})),
     "annotations": st.lists(annotation, max_size=3)},
).flatmap(lambda m: extras(MESSAGE_KEYS).map(lambda e: {**e, **m}))
turn = st.fixed_dictionaries({"id": st.text(max_size=6), "messages": st.lists(message, max_size=5),
                              "annotations": st.lists(annotation, max_size=2)}).flatmap(
    lambda t: extras(TURN_KEYS).map(lambda e: {**e, **t}))


@settings(max_examples=80, deadline=None)
@given(turn=turn)
def test_the_mapping_keeps_every_field(turn):
    value = json.loads(json.dumps(turn))
    ctx = RecordContext("/x/turns.json", "[0]", 0, "scale")
    out = map_turn(Record("[0]", value, index=0), ctx)
    messages = value["messages"]
    assistants = [m for m in messages if m["role"] == "assistant"]
    assert len(out["responses"]) == max(1, len(assistants))
    assert [r["response"] for r in out["responses"] if r.get("candidate_index") is not None] == [m["content"]["text"] for m in assistants]
    turn_extra = {k: v for k, v in value.items() if k not in TURN_KEYS}
    assert all((r["extra"] or {}) == turn_extra for r in out["responses"])
    assert len(out["turns"]) == len(messages)
    for row, m in zip(out["turns"], messages):
        assert (row["role"], row["content"], row["source_id"]) == (m["role"], m["content"]["text"], m["source_id"])
        expected = {k: v for k, v in m.items() if k not in MESSAGE_KEYS}
        content_left = {k: v for k, v in m["content"].items() if k not in CONTENT_KEYS}
        if content_left:
            expected["content"] = content_left
        assert (row["extra"] or {}) == expected
    annotations = value["annotations"] + [a for m in messages for a in m["annotations"]]
    kept = sorted(json.dumps([r["key"], r["value"], r["possible_values"], r["extra"] or {}], sort_keys=True)
                  for r in out.get("annotations", []))
    assert kept == sorted(json.dumps([a["key"], a["value"], a.get("possible_values"),
                                      {k: v for k, v in a.items() if k not in ANNOTATION_KEYS}], sort_keys=True) for a in annotations)
    for table, table_rows in out.items():  # every row fits its table's declared types
        for row in table_rows:
            RowValidator(TABLES[table]).values(dict(row, source_path="/x", source_locator=row.get("source_locator", "[0]")))
