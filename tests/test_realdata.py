"""The real files under ../shared/realdata, ingested in place (never copied into the repository)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.realdata


@pytest.fixture(scope="module")
def real(tmp_path_factory, request):
    from .conftest import REALDATA, Warehouse

    if not REALDATA.is_dir():
        pytest.skip(f"{REALDATA} is absent: the real-file tests read ../shared/realdata beside the repository")
    w = Warehouse(tmp_path_factory.mktemp("real") / "wh")
    w.summary = w.ingest(REALDATA)
    w.base = REALDATA
    return w


def test_every_real_file_is_catalogued_and_conserved(real):
    files = sorted(str(p) for p in real.base.rglob("*.json*"))
    rows = real.rows("SELECT source_path, records, records_ingested, records_quarantined FROM sources ORDER BY 1")
    assert [r["source_path"] for r in rows] == files
    assert all(r["records"] == r["records_ingested"] + r["records_quarantined"] for r in rows)


def test_trait_interp_prompt_sets(real):
    sets = sorted((real.base / "response-schema").rglob("datasets/**/*.json"))
    assert len(sets) == 6
    for path in sets:
        doc = json.loads(path.read_text())
        items = doc if isinstance(doc, list) else doc.get("prompts") or doc.get("questions")
        got = {
            r["prompt_id"]: r
            for r in real.rows("SELECT prompt_id, prompt, note FROM prompts WHERE source_path = ?", [str(path)])
        }
        assert len(got) == len(items), path
        for i, item in enumerate(items):
            if isinstance(item, str):  # a steering question: its id is its position
                assert got[str(i)]["prompt"] == item
            else:
                row = got[str(item["id"])]
                assert row["prompt"] == item.get("text", item.get("prompt"))
                assert row["note"] == (item.get("note") or None)
    names = {r["prompt_set"]: r["n"] for r in real.rows("SELECT prompt_set, count(*) n FROM prompts GROUP BY 1")}
    assert names["rm_syco/train_100"] == 100
    assert names["persona_detection/angry"] == 20
    assert names["benign_control"] == 15
    assert names["pv_natural/sycophancy"] == 5
    # a set-level system prompt reaches every prompt of the set
    assert real.one("SELECT count(DISTINCT system_prompt) FROM prompts WHERE prompt_set = 'persona_detection/angry'") == 1


def test_string_prompt_ids_are_kept_as_text(real):
    ids = {r["prompt_id"] for r in real.rows("SELECT prompt_id FROM prompts WHERE prompt_set = 'benign_control'")}
    assert {"simple_math", "sky_color", "count_to_ten", "after_a"} <= ids


def test_rm_sycophancy_annotations_keep_every_exploitation(real):
    folder = real.base / "response-schema" / "ewernn__trait-interp@fbbe2ecccc" / "other" / "analysis" / "rm_sycophancy"
    for name in ("bias_exploitation_annotations.json", "benign_control_annotations.json"):
        path = folder / name
        doc = json.loads(path.read_text())
        entries = doc["detailed_annotations"]
        spans = [(pid, e) for pid, entry in entries.items() for e in entry.get("exploitations", [])]
        rows = real.rows(
            "SELECT source_locator, span, token_start, token_end, category, note, response_id, unresolved_reason "
            "FROM annotations WHERE source_path = ? AND level = 'span'", [str(path)])
        assert len(rows) == len(spans), name
        by_loc = {r["source_locator"]: r for r in rows}
        for pid, entry in entries.items():
            for j, e in enumerate(entry.get("exploitations", [])):
                r = by_loc[f'.detailed_annotations["{pid}"].exploitations[{j}]']
                assert (r["span"], r["token_start"], r["token_end"], r["category"]) == (e["text"], e["tokens"][0], e["tokens"][1], f"bias_{e['bias']}")
                assert r["note"] == e.get("note")
                # the responses are not public: the rows stay, unlinked, saying why
                assert r["response_id"] is None and r["unresolved_reason"]
        # an entry with no exploitations still has its row (nothing in the file is dropped)
        empty = [pid for pid, entry in entries.items() if not entry.get("exploitations")]
        for pid in empty:
            assert real.one("SELECT count(*) FROM annotations WHERE source_path = ? AND source_locator = ?",
                            [str(path), f'.detailed_annotations["{pid}"]']) == 1
    meta = real.rows("SELECT form, metadata->>'token_convention' AS tc FROM annotation_sets WHERE source_path LIKE '%bias_exploitation_annotations.json'")
    assert meta == [{"form": "detailed", "tc": "response-relative, non-inclusive [start, end) - use response_tokens[start:end]"}]
    assert real.one("SELECT count(*) FROM annotations WHERE source_path LIKE '%rm_sycophancy%' AND level = 'response'") >= 100


# --- AfterImage (afterimage-jsonl/) -------------------------------------------------------------


def _afterimage_rows(path) -> list[tuple[str, dict]]:
    """(locator, row) as the file says: JSONL lines numbered from 1, or one whole-file row."""
    if path.suffix == ".jsonl":
        lines = path.read_text(encoding="utf-8").splitlines()
        return [(str(n), json.loads(line)) for n, line in enumerate(lines, 1) if line.strip()]
    return [("", json.loads(path.read_text(encoding="utf-8")))]


def test_afterimage_real_rows_ingest_as_the_files_say(real):
    files = sorted((real.base / "afterimage-jsonl").rglob("*.json*"))
    assert len(files) == 4
    for path in files:
        source = real.rows("SELECT source_format, records, records_ingested FROM sources WHERE source_path = ?", [str(path)])
        rows = _afterimage_rows(path)
        assert source == [{"source_format": "afterimage", "records": len(rows), "records_ingested": len(rows)}], path
        got = {r["source_locator"]: r for r in real.rows(
            "SELECT source_locator, response_id, prompt, response, persona, persona_name, context_id, context_ids, "
            "persona_generation_depth, instruction_context, response_context FROM responses WHERE source_path = ?", [str(path)])}
        for locator, row in rows:
            r = got[locator]
            messages = row["conversations"]
            answers = [m for m in messages if m["role"] == "assistant"]
            asked = messages[: messages.index(answers[-1])] if answers else messages
            assert r["response"] == (answers[-1]["content"] if answers else None), (path, locator)
            assert r["prompt"] == [m for m in asked if m["role"] == "user"][-1]["content"]
            metadata = row.get("metadata") or {}
            for key in ("context_id", "context_ids", "persona_name", "persona_generation_depth"):
                assert r[key] == metadata.get(key), (path, locator, key)
            for key in ("persona", "instruction_context", "response_context"):
                assert r[key] == row.get(key), (path, locator, key)
            turns = real.rows("SELECT role, content FROM turns WHERE response_id = ? ORDER BY turn_index", [r["response_id"]])
            assert turns == [{"role": m["role"], "content": m["content"]} for m in messages]
            evaluations = {e["criterion"]: e for e in real.rows(
                "SELECT criterion, score, score_scale, label, feedback FROM evaluations WHERE response_id = ?", [r["response_id"]])}
            evaluation = row.get("evaluation")
            if evaluation is None:
                assert evaluations == {}
                continue
            assert evaluations.pop("overall_grade")["label"] == evaluation.pop("overall_grade")
            assert evaluations.pop("final_score") == {
                "criterion": "final_score", "score": row["final_score"], "score_scale": "0-1", "label": None, "feedback": None}
            assert {k: (e["score"], e["feedback"], e["score_scale"]) for k, e in evaluations.items()} == {
                k: (v["score"], v["feedback"], "0-1") for k, v in evaluation.items()}


def test_afterimage_real_edge_rows(real):
    mock = str(next((real.base / "afterimage-jsonl").rglob("mock_dataset.jsonl")))
    by_line = {r["source_locator"]: r for r in real.rows("SELECT source_locator, prompt, response FROM responses WHERE source_path = ?", [mock])}
    assert by_line["6"]["response"] == ""  # empty assistant content
    assert by_line["8"] == {"source_locator": "8", "prompt": "Hello?", "response": None}  # user only
    assert by_line["7"]["prompt"] == "Qu'est-ce que c'est? éèê 🚀"  # the escaped surrogate pair, decoded
    assert by_line["3"]["prompt"] == "What about inheritance?"  # the user message the last answer replies to
    pairs = real.rows("SELECT first_user_message, chosen_grade, rejected_grade, chosen_final_score, rejected_final_score "
                      "FROM dpo_pairs WHERE chosen_response_id IN (SELECT response_id FROM responses WHERE source_path = ?)", [mock])
    assert pairs == [{"first_user_message": "Explain REST APIs.", "chosen_grade": "good", "rejected_grade": "bad",
                      "chosen_final_score": 0.87, "rejected_final_score": 0.41}]
    example = real.rows("SELECT source_locator, record_index, instruction_index, batch_id, session_id FROM responses "
                        "WHERE source_path LIKE '%EXPORT_DATA_SHAPE.example.json'")
    assert example == [{"source_locator": "", "record_index": None, "instruction_index": 2, "batch_id": "batch-xyz", "session_id": "sess-001"}]


# --- dataloop: prompt files, platform item JSON, a real dataset download, llm_trace ------------------


def _dataloop_files(real):
    return sorted((real.base / "dataloop-prompt").rglob("*.json"))


def test_dataloop_files_are_all_read_as_dataloop(real):
    files = _dataloop_files(real)
    rows = {r["source_path"]: r for r in real.rows(
        "SELECT source_path, source_format, records, records_quarantined FROM sources WHERE source_path LIKE ?",
        [f"{real.base}/dataloop-prompt/%"])}
    assert sorted(rows) == [str(p) for p in files] and len(files) == 27
    assert {r["source_format"] for r in rows.values()} == {"dataloop"}
    assert sum(r["records_quarantined"] for r in rows.values()) == 0


def test_dataloop_prompt_parts_are_the_files_elements_in_order(real):
    seen = 0
    for path in _dataloop_files(real):
        doc = json.loads(path.read_text())
        if "prompts" not in doc:
            continue
        expected = []
        for key, elements in doc["prompts"].items():
            parts = elements.values() if isinstance(elements, dict) else elements  # legacy dict of dicts
            expected += [(key, e["mimetype"], e["value"]) for e in parts if e["mimetype"] != "metadata"]
        got = real.rows("SELECT prompt_key, mimetype, coalesce(content, content_ref) AS value, role FROM turns "
                        "WHERE source_path = ? ORDER BY turn_index, part_index", [str(path)])
        assert [(g["prompt_key"], g["mimetype"], g["value"]) for g in got] == expected, path
        assert {g["role"] for g in got} == {"user"}
        seen += 1
    assert seen == 17


def test_dataloop_download_items_are_joined_with_their_answers(real):
    downloads = [p for p in _dataloop_files(real) if "/json/" in str(p) and (Path(str(p).replace("/json/", "/items/"))).exists()]
    assert len(downloads) == 6
    for js in downloads:
        item = json.loads(js.read_text())
        items = str(js).replace("/json/", "/items/")
        assert real.one("SELECT records FROM sources WHERE source_path = ?", [str(js)]) == 0
        rows = real.rows("SELECT source_locator, item_id, item_filename, prompt_key, response, inference_model, tags, "
                         "capture_date FROM responses WHERE source_path = ? ORDER BY candidate_index", [items])
        assert {r["item_id"] for r in rows} == {item["id"]} and {r["item_filename"] for r in rows} == {item["filename"]}
        tags = [k for k, v in {**item["metadata"]["system"].get("tags", {}), **item["metadata"].get("tags", {})}.items() if v]
        assert {tuple(r["tags"] or ()) for r in rows} == {tuple(tags)}
        answers = item["annotations"]
        if not answers:
            assert [(r["source_locator"], r["response"]) for r in rows] == [("", None)]
            continue
        assert [(r["source_locator"], r["prompt_key"], r["response"], r["capture_date"]) for r in rows] == [
            (f"@json.annotations[{i}]", a["metadata"]["system"]["promptId"], a["coordinates"], a["createdAt"])
            for i, a in enumerate(answers)]
        assert {r["inference_model"] for r in rows} == {None}  # the real download stored no model info
    labels = real.rows("SELECT DISTINCT annotation_type, label, level FROM annotations WHERE source_path LIKE ?",
                       [f"{real.base}/dataloop-prompt/%"])
    assert labels == [{"annotation_type": "text", "label": "free-text", "level": "message"}]


def test_dataloop_item_json_alone_gives_its_item(real):
    alone = [p for p in _dataloop_files(real) if "/json/" in str(p) and not Path(str(p).replace("/json/", "/items/")).exists()]
    assert len(alone) == 2
    for js in alone:
        item = json.loads(js.read_text())
        assert real.rows("SELECT item_id, dltype, prompt, response, item_creator FROM responses WHERE source_path = ?", [str(js)]) == [
            {"item_id": item["id"], "dltype": "prompt", "prompt": None, "response": None, "item_creator": item["creator"]}]


def test_dataloop_llm_traces(real):
    for path in (p for p in _dataloop_files(real) if "messages" in json.loads(p.read_text())):
        messages = json.loads(path.read_text())["messages"]
        resp = real.rows("SELECT response_id, dltype, prompt, response, inference_model FROM responses WHERE source_path = ?",
                         [str(path)])[0]
        final = messages[-1] if messages[-1]["role"] == "assistant" else None
        assert resp["dltype"] == "llm_trace" and resp["prompt"] == messages[0]["content"]
        assert resp["response"] == (final["content"] if final else None)
        assert resp["inference_model"] == (final["model_info"]["name"] if final else None)
        turns = real.rows("SELECT role, content, tool_names, tool_call_id FROM turns WHERE response_id = ? ORDER BY turn_index",
                          [resp["response_id"]])
        assert [(t["role"], t["content"], t["tool_call_id"]) for t in turns] == [
            (m["role"], m["content"], m.get("tool_call_id")) for m in messages]
        assert [t["tool_names"] for t in turns] == [
            [c["function"]["name"] for c in m["tool_calls"]] if m.get("tool_calls") else None for m in messages]


def test_dataloop_real_items_export_as_conversations_with_their_prompts(real, tmp_path):
    """Every answered real item: its prompts as user messages (images as image_url parts), then its answer;
    the real trace keeps its tool calls. Each line passes the check of OpenAI's format."""
    import warehouse
    from warehouse.exports.conversation import text_of

    from .openai_chat import check_line

    where = f"source_path LIKE '{real.base}/dataloop-prompt/%'"
    warehouse.export(real.root, where, "openai_chat", tmp_path / "o.jsonl", progress=False)
    lines = [json.loads(x) for x in (tmp_path / "o.jsonl").read_text().splitlines()]
    answered = real.rows(f"SELECT dltype, prompt_key, response FROM responses WHERE {where} AND response <> '' "
                         "ORDER BY source_path, source_locator")
    assert len(lines) == len(answered) == 4  # the 3 answered items of the real download, and the answered trace
    for line, r in zip(lines, answered):
        check_line(line)
        messages = line["messages"]
        assert [m["role"] for m in messages if m["role"] != "tool"][0] == "user", messages  # never assistant-only
        assert text_of(messages[-1]) == r["response"]
    images = [p for line in lines for m in line["messages"] if isinstance(m["content"], list)
              for p in m["content"] if p["type"] == "image_url"]
    assert images and all(p["image_url"]["url"].startswith("https://") for p in images)
    [trace] = [line["messages"] for line, r in zip(lines, answered) if r["dltype"] == "llm_trace"]
    assert [m["role"] for m in trace] == ["user", "assistant", "tool", "assistant", "tool", "assistant"]
    assert [c["function"]["name"] for m in trace for c in m.get("tool_calls", ())] == ["get_current_time", "calculate"]


# --- Scale (scale-turn/: a Turn and two Messages transcribed from Scale's docs) ----------------------


def _scale_files(real):
    files = sorted((real.base / "scale-turn").rglob("*.json"))
    assert len(files) == 3
    return files


def _scale_annotations(doc: dict) -> list[tuple[str, dict]]:
    """(level, annotation) for every annotation the file holds, at every level."""
    messages = doc["messages"] if "messages" in doc else [doc]
    found = [("turn", a) for a in doc.get("annotations", [])] if "messages" in doc else []
    for m in messages:
        found += [("message", a) for a in m.get("annotations", [])]
        for chunk in (m.get("content") or {}).get("chunks", []):
            found += [("chunk", a) for a in chunk.get("annotations", [])]
    return found


def test_scale_real_files_ingest_whole(real):
    for path in _scale_files(real):
        assert real.rows("SELECT source_format, records, records_ingested FROM sources WHERE source_path = ?", [str(path)]) == [
            {"source_format": "scale", "records": 1, "records_ingested": 1}], path


def test_scale_messages_are_what_the_files_say(real):
    for path in _scale_files(real):
        doc = json.loads(path.read_text())
        messages = doc["messages"] if "messages" in doc else [doc]  # a lone Message is a one-message turn
        turns = real.rows("SELECT role, content, source_id, model, temperature, max_completion_tokens, top_p, top_k "
                          "FROM turns WHERE source_path = ? ORDER BY turn_index", [str(path)])
        assert len(turns) == len(messages), path
        for row, m in zip(turns, messages):
            params = m.get("model_parameters") or {}
            assert (row["role"], row["content"], row["source_id"]) == (m["role"], m["content"].get("text"), m["source_id"])
            assert (row["model"], row["temperature"], row["max_completion_tokens"], row["top_p"], row["top_k"]) == tuple(
                params.get(k) for k in ("model", "temperature", "max_completion_tokens", "top_p", "top_k"))
        answers = [m["content"].get("text") for m in messages if m["role"] == "assistant"]
        responses = real.rows("SELECT response FROM responses WHERE source_path = ? ORDER BY candidate_index", [str(path)])
        assert [r["response"] for r in responses] == (answers or [None]), path


def test_scale_annotations_are_what_the_files_say(real):
    for path in _scale_files(real):
        expected = _scale_annotations(json.loads(path.read_text()))
        rows = real.rows("SELECT level, key, value, possible_values, annotation_type FROM annotations WHERE source_path = ?", [str(path)])

        def canon(level, key, value, options, kind):
            return json.dumps([level, key, value, options, kind], sort_keys=True)

        assert sorted(canon(r["level"], r["key"], json.loads(r["value"]), r["possible_values"] and json.loads(r["possible_values"]),
                            r["annotation_type"]) for r in rows) == sorted(
            canon(level, a["key"], a["value"], a.get("possible_values"), a.get("type")) for level, a in expected), path
        ratings = [a for _, a in expected if isinstance(a["value"], (int, float)) and not isinstance(a["value"], bool)]
        scores = real.rows("SELECT criterion, score FROM evaluations WHERE source_path = ?", [str(path)])
        assert sorted((e["criterion"], e["score"]) for e in scores) == sorted((a["key"], float(a["value"])) for a in ratings)


def test_scale_doc_example_quirks_are_read_not_rejected(real):
    path = str(real.base / "scale-turn/docs.genai.scale.com/core-resources/turn_example.json")
    # the `<string>` type placeholder and nested possible_values that break Scale's SDK are kept as written
    labels = real.rows("SELECT DISTINCT annotation_type, possible_values, label FROM annotations WHERE source_path = ?", [path])
    assert labels == [{"annotation_type": "<string>", "possible_values": "[[1,2,3]]", "label": "No Issues"}]
    [attachment] = real.rows("SELECT content, mime_type, name FROM attachments WHERE source_path = ?", [path])
    assert attachment == {"content": "aSDinaTvuI8gbWludGxpZnk=", "mime_type": "text/plain", "name": "<string>"}
    assert real.one("SELECT count(*) FROM reference_texts WHERE source_path = ?", [path]) == 1
    assert real.one("SELECT count(*) FROM chunks WHERE source_path = ?", [path]) == 1
    assert real.one("SELECT reasoning_content FROM turns WHERE source_path = ?", [path]) == "<string>"
    abbreviated = str(real.base / "scale-turn/docs.genai.scale.com/project-archetypes/rlhf_sample_model_response_1.json")
    assert real.one("SELECT value_text FROM annotations WHERE key = 'truthfulnes_justiifcation' AND source_path = ?",
                    [abbreviated]) == "Justification for the rating"
