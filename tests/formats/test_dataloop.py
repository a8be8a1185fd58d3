"""Dataloop: every variant in tests/fixtures/dataloop, against golden rows and targeted checks."""

from __future__ import annotations

import json
import os
import shutil
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import warehouse
from warehouse.formatkit.declared import TABLES
from warehouse.formatkit.records import Record, RecordContext, stable_id
from warehouse.formatkit.registry import Registry
from warehouse.formats.dataloop import Dataloop
from warehouse.formats.dataloop.download import siblings
from warehouse.formats.dataloop.item import document_key
from warehouse.run.worker import detect
from warehouse.store.writer import RowValidator

from ..conftest import FIXTURES, REPO, ingested_cleanly, write_json, write_text

INGESTORS = Registry.installed().ingestors()  # every installed format, in detection order

DL = FIXTURES / "dataloop"
DOWNLOAD = DL / "download" / "66f0a1b2c3d4e5f601234567"
ORDER = "ORDER BY source_path, source_locator"


@pytest.fixture(scope="module")
def dl(tmp_path_factory):
    return ingested_cleanly(tmp_path_factory, "dl", DL)


@pytest.mark.parametrize("table", ["responses", "turns", "annotations"])
def test_golden_rows(dl, golden, table):
    order = ORDER + (", candidate_index" if table == "responses" else ", turn_index, part_index" if table == "turns" else "")
    golden(f"dataloop/{table}", dl.rows(f"SELECT * FROM {table} {order}"))


def test_every_file_is_catalogued_and_a_download_item_is_one_record(dl):
    rows = {r["source_path"]: r for r in dl.rows("SELECT source_path, source_format, records, records_ingested FROM sources")}
    assert len(rows) == sum(1 for _ in DL.rglob("*.json"))
    assert {r["source_format"] for r in rows.values()} == {"dataloop"}
    # the item JSON beside a prompt file gives way to it; the orphan one stands alone
    for name in ("capitals", "photos/cat", "unanswered", "conversation"):
        split = "train" if name in ("capitals", "photos/cat") else "validation"
        assert rows[str(DOWNLOAD / split / "json" / f"{name}.json")]["records"] == 0
        assert rows[str(DOWNLOAD / split / "items" / f"{name}.json")]["records"] == 1
    assert rows[str(DOWNLOAD / "validation/json/orphan.json")]["records"] == 1
    assert dl.one("SELECT count(DISTINCT record_id) FROM responses") == sum(r["records"] for r in rows.values()) == 14


def test_two_models_answer_one_prompt(dl):
    rows = dl.rows("SELECT candidate_index, prompt, response, inference_model, model_id, model_confidence, capture_date, "
                   "item_id, dataset_id, item_filename, item_creator, item_created_at, tags, record_id, response_id, source_locator "
                   "FROM responses WHERE item_filename = '/capitals.json' ORDER BY candidate_index")
    assert [(r["inference_model"], r["model_confidence"], r["response"]) for r in rows] == [
        ("llama-3-8b-instruct", 0.91, "Canberra is the capital of Australia."),
        ("mistral-7b-instruct", 0.42, "The capital of Australia is Sydney."),
    ]
    assert {r["prompt"] for r in rows} == {"What is the capital of Australia?"}
    assert rows[0]["model_id"] == "66f0d000000000000000c001" and rows[1]["capture_date"] == "2024-10-01T09:06:00.000Z"
    assert (rows[0]["item_id"], rows[0]["dataset_id"], rows[0]["item_creator"], rows[0]["tags"]) == (
        "66f0b00000000000000000a1", "66f0a1b2c3d4e5f601234567", "ana@example.com", ["train"])
    assert rows[0]["record_id"] == rows[1]["record_id"] != rows[0]["response_id"]
    # ids name the answer inside the sibling item JSON, under the prompt file's path
    path = str(DOWNLOAD / "train/items/capitals.json")
    assert [r["source_locator"] for r in rows] == ["@json.annotations[0]", "@json.annotations[1]"]
    assert rows[1]["response_id"] == stable_id(path, "@json.annotations[1]")
    assert rows[0]["record_id"] == stable_id(path, "")


def test_model_from_system_metadata_when_user_metadata_has_none(dl):
    r = dl.rows("SELECT inference_model, model_id, model_confidence, prompt FROM responses WHERE item_filename = '/photos/cat.json'")
    assert r == [{"inference_model": "llava-1.5-7b", "model_id": "66f0d000000000000000c003", "model_confidence": 0.77,
                  "prompt": "What animal is in this picture?"}]


def test_an_item_without_answers_still_gives_one_row(dl):
    r = dl.rows("SELECT candidate_index, prompt, prompt_key, response, inference_model, tags, response_id, record_id, source_locator "
                "FROM responses WHERE item_filename = '/unanswered.json'")
    assert len(r) == 1 and r[0]["response"] is None and r[0]["inference_model"] is None
    assert (r[0]["prompt"], r[0]["prompt_key"], r[0]["tags"]) == ("Summarise the plot of Hamlet in one sentence.", "1", ["validation", "predict"])
    assert r[0]["response_id"] == r[0]["record_id"] and r[0]["source_locator"] == ""
    # with one response, the prompt parts are that response's
    assert dl.one("SELECT count(*) FROM turns WHERE response_id = ?", [r[0]["response_id"]]) == 1


def test_image_answers_are_references_with_their_mimetype(dl):
    rows = dl.rows("SELECT inference_model, response, response_ref, response_mimetype, prompt, system_prompt FROM responses "
                   "WHERE item_filename = '/conversation.json' ORDER BY candidate_index")
    assert [(r["inference_model"], r["response"], r["response_ref"], r["response_mimetype"]) for r in rows] == [
        ("sdxl-turbo", None, "66f0e00000000000000000f2", "image/png"),
        ("dall-e-3", None, "https://gate.dataloop.ai/api/v1/items/66f0e00000000000000000f3/stream", "image/jpeg"),
    ]
    assert {(r["prompt"], r["system_prompt"]) for r in rows} == {("Draw me a postcard of it.", "You are a concise travel assistant.")}


def test_conversation_turns_follow_the_key_order_with_roles_from_metadata(dl):
    turns = dl.rows("SELECT t.turn_index, t.prompt_key, t.role, t.content, t.response_id, t.extra FROM turns t "
                    "JOIN (SELECT DISTINCT record_id FROM responses WHERE item_filename = '/conversation.json') USING (record_id) "
                    "ORDER BY turn_index")
    assert [(t["turn_index"], t["prompt_key"], t["role"]) for t in turns] == [
        (0, "1", "system"), (1, "2", "user"), (2, "3", "assistant"), (3, "4", "user")]
    assert {t["response_id"] for t in turns} == {None}  # shared by two candidates: join on record_id
    assert turns[2]["extra"] == '{"metadata":{"model":"llama-3-8b-instruct"}}'
    ann = dl.rows("SELECT a.turn_index, a.target, a.prompt_key FROM annotations a JOIN responses r USING (response_id) "
                  "WHERE r.item_filename = '/conversation.json'")
    assert {(a["turn_index"], a["target"], a["prompt_key"]) for a in ann} == {(3, '.prompts["4"]', "4")}


def test_prompt_parts_keep_mimetype_and_media_references(dl):
    rows = dl.rows("SELECT prompt_key, part_index, mimetype, content, content_ref, extra FROM turns "
                   "WHERE source_path LIKE '%media_prompts.json' OR source_path LIKE '%image_jpeg_prompt.json' "
                   "OR source_path LIKE '%photos/cat.json' ORDER BY source_path, turn_index, part_index")
    assert [(r["prompt_key"], r["part_index"], r["mimetype"], r["content"], r["content_ref"]) for r in rows] == [
        ("1", 0, "image/*", None, "https://gate.dataloop.ai/api/v1/items/66f0e00000000000000000f1/stream"),
        ("1", 1, "application/text", "What animal is in this picture?", None),
        ("prompt1", 0, "image/jpeg", None, "dl.Item.stream"),
        ("prompt1", 1, "application/text", "Describe the colours in this photo", None),
        ("prompt#1", 0, "audio/*", None, "https://gate.dataloop.ai/api/v1/items/66f0e00000000000000000f5/stream"),
        ("prompt#1", 1, "application/text", "Transcribe this recording.", None),
        ("prompt#2", 0, "video/*", None, "66f0e00000000000000000f6"),
        ("prompt#2", 1, "application/text", "What happens in this clip?", None),
    ]
    # a metadata element's keys besides the role reach every part of its prompt
    assert [r["extra"] for r in rows[4:6]] == ['{"metadata":{"language":"en"}}'] * 2


def test_legacy_dict_of_dicts_prompts(dl):
    rows = dl.rows("SELECT source_locator, part_index, mimetype, content, content_ref, extra FROM turns "
                   "WHERE source_path LIKE '%legacy_dict_of_dicts.json' ORDER BY part_index")
    assert [(r["source_locator"], r["mimetype"], r["extra"]) for r in rows] == [
        ('.prompts["prompt1"]["question-1"]', "application/text", '{"part_key":"question-1"}'),
        ('.prompts["prompt1"]["question-2"]', "image/*", '{"part_key":"question-2"}'),
    ]
    assert dl.one("SELECT prompt FROM responses WHERE source_path LIKE '%legacy_dict_of_dicts.json'") == "Is the sky blue?"


def test_unknown_fields_go_to_extra(dl):
    r = dl.rows("SELECT extra FROM responses WHERE source_path LIKE '%extra_fields.json'")[0]
    assert json.loads(r["extra"]) == {"metadata": {"source": "prompt-tools"}, "name": "jokes"}
    item = json.loads(dl.one("SELECT extra FROM responses WHERE item_filename = '/unanswered.json'"))["item"]
    assert item["url"].endswith("/items/66f0b00000000000000000a3") and item["updatedBy"] == "ana@example.com"
    assert "tags" not in item["metadata"] and item["metadata"]["system"]["refs"] == []
    # the fields that follow from columns are kept as written too: nothing of the source is dropped
    assert (item["name"], item["dir"], item["annotationsCount"], item["annotated"]) == ("unanswered.json", "/", 0, False)
    assert not {"annotations", "id"} & set(item)


def test_every_annotation_with_label_type_and_coordinates(dl):
    rows = dl.rows("SELECT annotation_type, label, level, coordinates, value_text, source_annotation_id, item_id, creator, "
                   "created_at, metadata, response_id, record_id, extra FROM annotations ORDER BY source_path, source_locator")
    assert len(rows) == 8
    cls = next(r for r in rows if r["annotation_type"] == "class")
    assert (cls["label"], cls["level"], cls["coordinates"], cls["response_id"], cls["creator"]) == (
        "good-answer", "item", None, None, "rita@example.com")
    assert json.loads(cls["metadata"]) == {"system": {}, "user": {"reviewer_note": "accurate"}}
    ref = next(r for r in rows if r["source_annotation_id"] == "66f0c00000000000000000b5")
    assert json.loads(ref["coordinates"]) == {"ref": "66f0e00000000000000000f2", "refType": "id", "mimetype": "image/png"}
    text = next(r for r in rows if r["source_annotation_id"] == "66f0c00000000000000000b1")
    assert text["value_text"] == json.loads(text["coordinates"]) == "Canberra is the capital of Australia."
    assert set(json.loads(text["extra"])) == {"datasetId", "url", "item", "dataset", "updatedBy", "updatedAt", "hash", "source"}
    # each answer's annotation points to its candidate response
    joined = dl.one("SELECT count(*) FROM annotations a JOIN responses r USING (response_id, record_id)")
    assert joined == sum(1 for r in rows if r["level"] == "message") == 7


def test_the_spec_example_binary_stream_answer(dl):
    r = dl.rows("SELECT prompt, prompt_key, response, response_ref, inference_model, model_confidence, item_filename, tags "
                "FROM responses WHERE source_path LIKE '%image_prompts/dogs.json'")
    assert r == [{"prompt": None, "prompt_key": "first", "response": None,
                  "response_ref": "https://gate.dataloop.ai/api/v1/items/66f0e00000000000000000f7/stream",
                  "inference_model": "model1", "model_confidence": 0.9, "item_filename": "/image_prompts/dogs.json",
                  "tags": ["predict"]}]


def test_llm_trace_with_tool_calls(dl):
    resp = dl.rows("SELECT response_id, dltype, prompt, response, inference_model, model_id, system_prompt FROM responses "
                   "WHERE source_path LIKE '%tool_trace.json'")[0]
    assert (resp["dltype"], resp["prompt"], resp["response"], resp["inference_model"], resp["model_id"]) == (
        "llm_trace", "How many days until 2025-01-01 from 2024-12-25?", "There are 7 days between them.",
        "openai-gpt-4o-mini-1a2b3", "66f0d000000000000000c004")
    turns = dl.rows("SELECT turn_index, role, content, has_tool_calls, tool_names, tool_calls, tool_call_id, model, extra FROM turns "
                    "WHERE response_id = ? ORDER BY turn_index", [resp["response_id"]])
    assert [(t["role"], t["has_tool_calls"], t["tool_names"], t["tool_call_id"]) for t in turns] == [
        ("user", False, None, None), ("assistant", True, ["days_between"], None), ("tool", False, None, "call_0001"),
        ("assistant", False, None, None)]
    assert turns[1]["content"] is None and json.loads(turns[1]["tool_calls"])[0]["id"] == "call_0001"  # as written, a column
    assert "tool_calls" not in json.loads(turns[1]["extra"] or "{}")
    assert turns[3]["model"] == "openai-gpt-4o-mini-1a2b3"
    assert json.loads(turns[3]["extra"])["completion_info"]["model"] == "gpt-4o-mini-2024-07-18"


def test_llm_trace_with_list_content_system_message_and_context(dl):
    resp = dl.rows("SELECT response_id, prompt, response, system_prompt, extra FROM responses WHERE source_path LIKE '%session_trace.json'")[0]
    assert (resp["prompt"], resp["response"], resp["system_prompt"]) == (
        "What does this chart show?", "Revenue grew 12% over the quarter.", "Answer from the provided context only.")
    assert resp["extra"] == '{"model":"gpt-4o"}'
    user, assistant = dl.rows("SELECT content, content_parts, reasoning_content, extra FROM turns WHERE response_id = ? "
                              "AND turn_index > 0 ORDER BY turn_index", [resp["response_id"]])
    assert json.loads(user["content_parts"])[1]["image_url"]["url"].endswith("66f0e00000000000000000f8/stream")
    assert user["content"] == "What does this chart show?"  # the text parts
    extra = json.loads(user["extra"])
    assert "content" not in extra and extra["context"][0]["score"] == 0.93
    assert assistant["reasoning_content"] == "The context states it directly."


# --- detection ------------------------------------------------------------------------------


def test_every_message_of_a_trace_keeps_its_model_id(wh):
    """Two models in one trace: the final message's model is the response's, and each message keeps its own."""
    wh.ingest(FIXTURES / "dataloop_traces" / "two_models_trace.json")
    assert wh.rows("SELECT inference_model, model_id FROM responses") == [
        {"inference_model": "editor-large", "model_id": "66f0d000000000000000c012"}]
    turns = wh.rows("SELECT role, model, extra->'$.model_info.model_id' AS model_id FROM turns ORDER BY turn_index")
    assert [(t["role"], t["model"], t["model_id"]) for t in turns] == [
        ("user", None, None), ("assistant", "drafter-small", '"66f0d000000000000000c011"'),
        ("user", None, None), ("assistant", "editor-large", '"66f0d000000000000000c012"')]


def test_detection_claims_every_dataloop_fixture_and_no_trait_interp_file():
    for path in DL.rglob("*.json"):
        assert detect(str(path), path.read_bytes()[:65536], INGESTORS).name == "dataloop", path
    for path in (FIXTURES / "trait_interp").rglob("*.json"):
        assert not Dataloop().sniff(str(path), path.read_bytes()[:65536]), path
    # trait-interp prompt sets also have a "prompts" key: a list, and no shebang
    assert not Dataloop().sniff("x.json", b'{"name": "s", "prompts": [{"id": 1, "text": "hi"}]}')


def test_sibling_paths_are_candidate_roots_outermost_first():
    assert siblings("/d/ds/train/items/photos/cat.json", "items", "json") == [
        ("/d/ds/train/json/photos/cat.json", "photos/cat.json")]
    assert siblings("/d/ds/train/json/photos/cat.json", "json", "items") == [
        ("/d/ds/train/items/photos/cat.json", "photos/cat.json")]
    assert siblings("/d/items/ds/items/a.json", "items", "json") == [
        ("/d/json/ds/items/a.json", "ds/items/a.json"), ("/d/items/ds/json/a.json", "a.json")]
    assert siblings("/d/prompts/a.json", "items", "json") == [] and siblings("/d/json", "json", "items") == []


# --- a download's two files, met in either order ----------------------------------------------


def _pair(tmp_path):
    src = DOWNLOAD / "train"
    dst = tmp_path / "ds"
    for sub in ("items", "json"):
        (dst / sub).mkdir(parents=True)
        shutil.copy(src / sub / "capitals.json", dst / sub / "capitals.json")
    return dst / "items" / "capitals.json", dst / "json" / "capitals.json"


def _answers(wh):
    return wh.rows("SELECT source_path, source_locator, prompt, response FROM responses ORDER BY source_locator")


def _bump(path):
    os.utime(path, ns=(time.time_ns(), time.time_ns() + 10**9))


def test_item_json_met_first_then_its_prompt_file(wh, tmp_path):
    items, js = _pair(tmp_path)
    items.unlink()
    wh.ingest(tmp_path / "ds")
    assert [(r["source_path"], r["prompt"]) for r in _answers(wh)] == [(str(js), None), (str(js), None)]
    shutil.copy(DOWNLOAD / "train/items/capitals.json", items)
    s = wh.ingest(tmp_path / "ds")  # the catalogued item JSON, built without it, is read again and gives way
    assert s.files_ingested == 2
    rows = _answers(wh)
    assert [(r["source_path"], r["source_locator"]) for r in rows] == [
        (str(items), "@json.annotations[0]"), (str(items), "@json.annotations[1]")]
    assert {r["prompt"] for r in rows} == {"What is the capital of Australia?"}
    assert wh.one("SELECT records FROM sources WHERE source_path = ?", [str(js)]) == 0


def test_prompt_file_met_first_then_its_item_json(wh, tmp_path):
    items, js = _pair(tmp_path)
    js.unlink()
    wh.ingest(tmp_path / "ds")
    assert [(r["prompt"], r["response"]) for r in _answers(wh)] == [("What is the capital of Australia?", None)]
    shutil.copy(DOWNLOAD / "train/json/capitals.json", js)
    s = wh.ingest(tmp_path / "ds")  # the prompt file depends on it and is read again
    assert s.files_ingested == 2
    assert [r["response"] for r in _answers(wh)] == ["Canberra is the capital of Australia.", "The capital of Australia is Sydney."]
    assert wh.one("SELECT count(*) FROM responses") == 2


def test_both_orders_give_the_same_rows(tmp_path):
    from ..conftest import Warehouse

    results = []
    for n, order in enumerate((("items", "json"), ("json", "items"))):
        items, js = _pair(tmp_path / str(n))
        later = {"items": items, "json": js}[order[1]]
        kept = later.read_bytes()
        later.unlink()
        w = Warehouse(tmp_path / f"wh{n}")
        w.ingest(tmp_path / str(n) / "ds")
        later.write_bytes(kept)
        w.ingest(tmp_path / str(n) / "ds")
        rows = w.rows("SELECT * EXCLUDE (response_id, record_id, source_path) FROM responses ORDER BY candidate_index")
        results.append(rows)
    assert results[0] == results[1] and len(results[0]) == 2


def test_a_file_named_alone_is_paired_with_its_sibling(wh, tmp_path):
    """The json/X.json of items/X.json follows from the download's layout, not from data: naming the item
    file alone pairs it, as ingesting the whole download does (and the pair stays one source then)."""
    items, js = _pair(tmp_path)
    s = wh.ingest(items)
    assert s.records_quarantined == 0
    assert [r["response"] for r in _answers(wh)] == ["Canberra is the capital of Australia.", "The capital of Australia is Sydney."]
    s = wh.ingest(tmp_path / "ds")  # the item JSON is the prompt file's record: the pair is read again, as one
    assert (s.files_seen, s.files_ingested, s.files_unchanged) == (2, 2, 0)
    assert wh.one("SELECT count(*) FROM responses") == 2
    assert wh.one("SELECT count(*) FROM quarantine") == 0


def test_a_changed_or_removed_sibling_rebuilds_the_item(wh, tmp_path):
    items, js = _pair(tmp_path)
    wh.ingest(tmp_path / "ds")
    doc = json.loads(js.read_text())
    doc["annotations"] = doc["annotations"][:1]
    js.write_text(json.dumps(doc))
    _bump(js)
    wh.ingest(tmp_path / "ds")
    assert [r["response"] for r in _answers(wh)] == ["Canberra is the capital of Australia."]
    items.unlink()
    wh.ingest(tmp_path / "ds", prune=True)  # the prompt file is gone: the item JSON stands alone again
    assert [(r["source_path"], r["prompt"], r["response"]) for r in _answers(wh)] == [
        (str(js), None, "Canberra is the capital of Australia.")]
    again = wh.ingest(tmp_path / "ds")
    assert again.files_unchanged == 1 and not again.committed


def test_a_sibling_of_another_kind_is_not_joined(wh, tmp_path):
    items, js = _pair(tmp_path)
    write_json(js, [{"prompt": "p", "response": "r"}])  # not an item JSON: read as whatever it is
    wh.ingest(tmp_path / "ds")
    assert wh.rows("SELECT source_format, prompt, response FROM responses ORDER BY source_format") == [
        {"source_format": "dataloop", "prompt": "What is the capital of Australia?", "response": None},
        {"source_format": "trait_interp", "prompt": "p", "response": "r"},
    ]


# --- pairing: the download's own items/ and json/ roots, whatever the item's own folders are called ---------------


def _download(root, name: str):
    """The capitals item of the fixture download, as ``<root>/items/<name>`` and ``<root>/json/<name>``."""
    document = write_text(root / "items" / name, (DOWNLOAD / "train/items/capitals.json").read_text())
    item = json.loads((DOWNLOAD / "train/json/capitals.json").read_text())
    item.update(filename="/" + name, name=name.rsplit("/", 1)[-1], dir="/" + name.rpartition("/")[0])
    return document, write_json(root / "json" / name, item)


@pytest.mark.parametrize("root, name", [
    ("ds", "json/a.json"),  # items/json/a.json + json/json/a.json
    ("ds", "items/a.json"),  # items/items/a.json + json/items/a.json
    ("ds", "items/json/items/a.json"),
    ("items/ds", "a.json"),  # the download itself inside a folder named items
    ("json/items/ds", "json/a.json"),
])
def test_a_folder_named_items_or_json_pairs_within_the_download_root(wh, tmp_path, root, name):
    document, item = _download(tmp_path / root, name)
    s = wh.ingest(tmp_path)
    assert (s.records_ingested, s.records_quarantined) == (1, 0)  # one item, read once
    rows = wh.rows("SELECT source_path, prompt, response, item_filename FROM responses ORDER BY candidate_index")
    assert [(r["source_path"], r["prompt"], r["response"], r["item_filename"]) for r in rows] == [
        (str(document), "What is the capital of Australia?", "Canberra is the capital of Australia.", "/" + name),
        (str(document), "What is the capital of Australia?", "The capital of Australia is Sydney.", "/" + name)]
    assert wh.one("SELECT count(*) FROM annotations") == 2
    assert wh.one("SELECT records FROM sources WHERE source_path = ?", [str(item)]) == 0


def test_two_candidate_roots_pair_by_the_item_json_filename(wh, tmp_path):
    """t/items/ds/items/x.json has two candidate roots: t/items/ds (its download: json/x.json) and t, where an
    unrelated item JSON sits at t/json/ds/items/x.json. The item JSON that names itself x.json is the pair."""
    document, item = _download(tmp_path / "t" / "items" / "ds", "x.json")
    decoy = write_json(tmp_path / "t" / "json" / "ds" / "items" / "x.json",
                       {**json.loads(item.read_text()), "filename": "/other.json", "annotations": []})
    wh.ingest(tmp_path)
    by_path = {r["source_path"]: r["records"] for r in wh.rows("SELECT source_path, records FROM sources")}
    assert (by_path[str(document)], by_path[str(item)], by_path[str(decoy)]) == (1, 0, 1)  # the decoy stands alone
    assert wh.one("SELECT count(*) FROM responses WHERE source_path = ? AND response IS NOT NULL", [str(document)]) == 2


def test_an_export_with_such_folders_in_file_names_comes_back(tmp_path):
    from ..conftest import Warehouse

    for name in ("json/a.json", "items/b.json", "json/items/c.json"):
        _download(tmp_path / "src", name)
    first = Warehouse(tmp_path / "wh1")
    first.ingest(tmp_path / "src")
    warehouse.export(first.root, None, "dataloop", tmp_path / "out", progress=False)
    second = Warehouse(tmp_path / "wh2")
    s = second.ingest(tmp_path / "out")
    assert (s.records_ingested, s.records_quarantined) == (3, 0)
    query = "SELECT item_filename, prompt, response FROM responses ORDER BY item_filename, candidate_index"
    assert second.rows(query) == first.rows(query) and len(first.rows(query)) == 6
    assert second.one("SELECT count(*) FROM annotations") == first.one("SELECT count(*) FROM annotations") == 6


# --- bad input --------------------------------------------------------------------------------


def quarantine(wh):
    return [(q["locator"], q["stage"], q["error"]) for q in
            wh.rows("SELECT locator, stage, error FROM quarantine ORDER BY source_path, locator")]


def prompt_doc(prompts, **more):
    return {"shebang": "dataloop", "metadata": {"dltype": "prompt"}, "prompts": prompts, **more}


BAD = [
    (prompt_doc([{"mimetype": "application/text", "value": "hi"}]),
     ".prompts", 'prompts: expected an object keyed by prompt key ({"1": [...]}), got array [{\'mimetype\': \'application/text\', \'va...'),
    (prompt_doc({"1": "hello"}),
     '.prompts["1"]', "prompt '1': expected a list of elements (or, legacy, an object of elements), got string 'hello'"),
    (prompt_doc({"1": [{"value": "hi"}]}),
     '.prompts["1"][0]', "prompt element has no mimetype: expected application/text, image/*, audio/*, video/* or metadata"),
    (prompt_doc({"1": [{"mimetype": "image/*", "value": {"url": "u"}}]}),
     '.prompts["1"][0].value', "value: expected a string for mimetype image/*, got object {'url': 'u'}"),
    (prompt_doc({"1": [{"mimetype": "metadata", "value": "user"}]}),
     '.prompts["1"][0].value', "value: expected an object (the prompt's role and metadata) for mimetype metadata, got string 'user'"),
    (prompt_doc({"1": [{"mimetype": "metadata", "value": {"role": 1}}]}),
     '.prompts["1"][0].value.role', "role: expected a string, got number 1"),
    (prompt_doc({"1": ["hi"]}),
     '.prompts["1"][0]', "expected a JSON object for the prompt element, got string 'hi'"),
    ({"shebang": "dataloop", "metadata": {"dltype": "prompt"}},
     "", 'a prompt document needs a prompts object ({"1": [...]}); none found'),
    ({"shebang": "dataloop", "name": "x"},
     "", "not a Dataloop prompt item or llm_trace: no prompts, messages or item metadata (keys: name, shebang); pass --format to read it as another format"),
    ({"shebang": "dataloop", "messages": [{"content": "hi"}]},
     ".messages[0]", "message has no role: every llm_trace message needs one (user, assistant, system, tool)"),
    ({"shebang": "dataloop", "messages": {"role": "user"}},
     ".messages", "messages: expected a list, got object {'role': 'user'}"),
    ({"shebang": "dataloop", "messages": [{"role": "assistant", "tool_calls": {"id": "c"}}]},
     ".messages[0].tool_calls", "tool_calls: expected a list, got object {'id': 'c'}"),
    ({"shebang": "dataloop", "messages": [{"role": "assistant", "model_info": "gpt"}]},
     ".messages[0].model_info", "model_info: expected an object, got string 'gpt'"),
]


@pytest.mark.parametrize("doc, locator, error", BAD, ids=[f"bad{i}" for i in range(len(BAD))])
def test_bad_documents_are_quarantined_with_a_locator(wh, tmp_path, doc, locator, error):
    wh.ingest(write_json(tmp_path / "in" / "p.json", doc))
    assert quarantine(wh) == [(locator, "map", error)]
    assert wh.one("SELECT count(*) FROM turns") == 0  # a quarantined record keeps none of its rows


def test_a_document_of_a_type_it_does_not_read_is_left_unrecognised_unless_forced(wh, tmp_path):
    """A link (or a LiDAR scene, tests/fixtures/near_misses) holds no responses: not claimed by detection;
    read as Dataloop on request, it says why it gives nothing."""
    path = write_json(tmp_path / "in" / "p.json", {"shebang": "dataloop", "metadata": {"dltype": "link"}, "url": "x"})
    wh.ingest(path)
    assert wh.rows("SELECT source_format, stage FROM quarantine") == [{"source_format": None, "stage": "detect"}]
    wh.ingest(path, source_format="dataloop")
    assert quarantine(wh) == [(".metadata.dltype", "map", "Dataloop document type 'link' holds no responses: this "
                                                           "format reads prompt items (dltype prompt) and llm_trace documents")]


def _item(annotations, **more):
    return {"id": "i1", "datasetId": "d1", "filename": "/a.json", "name": "a.json", "dir": "/",
            "metadata": {"system": {"shebang": {"dltype": "prompt"}}}, "annotations": annotations, **more}


BAD_ITEMS = [
    (_item([{"type": "text", "label": "free-text", "coordinates": {"text": "hi"}}]),
     ".annotations[0].coordinates", "coordinates: expected the answer text (a string) for a text annotation, got object {'text': 'hi'}"),
    (_item([{"type": "text", "coordinates": "hi", "metadata": {"user": {"model": {"name": "m", "confidence": "high"}}}}]),
     ".annotations[0].metadata.user.model.confidence", "confidence: expected a number, got string 'high'"),
    (_item([{"type": "text", "coordinates": "hi", "metadata": {"system": {"promptId": True}}}]),
     ".annotations[0].metadata.system.promptId", "promptId: expected an id (integer or string), got boolean True"),
    (_item([{"type": "ref_image", "coordinates": {"ref": 5, "mimetype": "image/png"}}]),
     ".annotations[0].coordinates.ref", "ref: expected a string, got number 5"),
    (_item([7]), ".annotations[0]", "expected a JSON object for the annotation, got number 7"),
    (_item({"0": {}}), ".annotations", "annotations: expected a list, got object {'0': {}}"),
    (_item([], createdAt=20240101), ".createdAt", "createdAt: expected a string, got number 20240101"),
]


@pytest.mark.parametrize("doc, locator, error", BAD_ITEMS, ids=[f"item{i}" for i in range(len(BAD_ITEMS))])
def test_bad_item_json_is_quarantined_with_a_locator(wh, tmp_path, doc, locator, error):
    wh.ingest(write_json(tmp_path / "in" / "a.json", doc))
    assert quarantine(wh) == [(locator, "map", error)]


def test_a_bad_sibling_quarantines_the_item_under_the_prompt_file(wh, tmp_path):
    items, js = _pair(tmp_path)
    doc = json.loads(js.read_text())
    doc["annotations"][1]["metadata"]["user"]["model"]["confidence"] = "0.4"
    js.write_text(json.dumps(doc))
    s = wh.ingest(tmp_path / "ds")
    assert (s.records_ingested, s.records_quarantined) == (0, 1)
    [q] = wh.rows("SELECT source_path, locator, error FROM quarantine")
    assert (q["source_path"], q["locator"], q["error"]) == (
        str(items), "@json.annotations[1].metadata.user.model.confidence", "confidence: expected a number, got string '0.4'")
    assert wh.one("SELECT count(*) FROM responses") == 0


def test_a_sibling_that_is_not_json_quarantines_the_item(wh, tmp_path):
    items, js = _pair(tmp_path)
    js.write_text(js.read_text()[:-40])
    wh.ingest(tmp_path / "ds")
    [q] = wh.rows("SELECT source_path, locator, stage, error, raw FROM quarantine")
    assert (q["source_path"], q["locator"], q["stage"]) == (str(items), "@json", "decode")
    assert q["error"].startswith(f"the item JSON beside this file ({js}) cannot be decoded: invalid JSON: ")
    assert q["error"].endswith("; fix or remove it to ingest the item")
    assert q["raw"] == js.read_text()  # the broken half is what the quarantine row shows


def test_invalid_json_in_a_prompt_file(wh, tmp_path):
    wh.ingest(write_text(tmp_path / "p.json", '{"shebang": "dataloop", "prompts": {"1": [}}'))
    [(locator, stage, error)] = quarantine(wh)
    assert (locator, stage) == ("", "decode") and error.startswith("invalid JSON: ")


# --- the mapping keeps every field --------------------------------------------------------------

key = st.text(st.characters(codec="utf-8", categories=("L", "N")), min_size=1, max_size=6)
json_scalar = st.one_of(st.none(), st.booleans(), st.integers(-1000, 1000), st.text(max_size=6))
json_value = st.recursive(json_scalar, lambda inner: st.one_of(st.lists(inner, max_size=2), st.dictionaries(key, inner, max_size=2)), max_leaves=4)
element = st.one_of(
    st.tuples(st.just("application/text"), st.text(max_size=10)),
    st.tuples(st.sampled_from(["image/*", "image/jpeg", "audio/*", "video/*"]), st.text(max_size=10)),
)
DOC_KEYS = {"shebang", "metadata", "prompts"}
ANN_KEYS = {"type", "label", "coordinates", "metadata", "id", "itemId", "creator", "createdAt"}


@settings(max_examples=150, deadline=None)
@given(
    prompts=st.dictionaries(key, st.lists(element, min_size=1, max_size=3), min_size=1, max_size=3),
    doc_extra=st.dictionaries(key.filter(lambda k: k not in DOC_KEYS), json_value, max_size=3),
    answers=st.lists(st.tuples(st.text(max_size=10), st.floats(0, 1), st.dictionaries(key.filter(lambda k: k not in ANN_KEYS), json_value, max_size=2)), max_size=3),
)
def test_dataloop_mapping_keeps_every_field(prompts, doc_extra, answers):
    doc = prompt_doc({k: [{"mimetype": m, "value": v} for m, v in parts] for k, parts in prompts.items()}, **doc_extra)
    first = next(iter(prompts))
    item = _item([{"type": "text", "coordinates": text, "metadata": {"system": {"promptId": first},
                                                                     "user": {"model": {"name": f"m{i}", "confidence": c}}}, **more}
                  for i, (text, c, more) in enumerate(answers)])
    record = Record("", json.loads(json.dumps(doc)), envelope={"item_json": json.loads(json.dumps(item))})
    out = Dataloop().map(record, RecordContext("/d/items/a.json", "", None, "dataloop"))
    responses, turns = out["responses"], out["turns"]
    assert len(responses) == max(1, len(answers))
    for row, (text, c, _) in zip(responses, answers):
        assert (row["response"], row["model_confidence"], row["prompt_key"]) == (text, c, first)
    extra = dict(responses[0]["extra"] or {})
    assert extra.pop("item") == {"name": "a.json", "dir": "/"}  # kept as written, though filename tells them
    assert extra == {document_key(k): v for k, v in doc_extra.items()}  # (a field "item" is kept as "item~")
    written = [(m, v) for parts in prompts.values() for m, v in parts]
    assert [(t["mimetype"], t["content"] if t["mimetype"] == "application/text" else t["content_ref"]) for t in turns] == written
    for a, (_, _, more) in zip(out.get("annotations", []), answers):
        assert {k: v for k, v in (a["extra"] or {}).items()} == more
    for table, rows in out.items():  # the types fit the tables
        for r in rows:
            RowValidator(TABLES[table]).values(dict(r, source_path="/d", source_locator=r.get("source_locator", "")))


def test_format_page_names_every_dataloop_column():
    page = (REPO / "docs" / "formats" / "dataloop.md").read_text()
    for column in (c for columns in Dataloop.columns.values() for c in columns):
        assert f"`{column.name}`" in page, column.name
