"""OpenAI Batch API files and chat completions (and vLLM's run_batch): golden rows, the join by
custom_id, failed requests, logprobs, detection. The fixtures are checked with the openai package's types."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from openai.types import BatchRequestCounts
from openai.types.chat import ChatCompletion

from warehouse.formatkit.registry import Registry
from warehouse.formats.hf_chat import HfChat
from warehouse.formats.openai_batch import OpenAIBatch
from warehouse.run.worker import detect

from ..conftest import FIXTURES, Warehouse, write_text

INGESTORS = [i for i in Registry.installed().ingestors() if i.reads_content]
OB = FIXTURES / "openai_batch"
ORDER = "ORDER BY source_path, source_locator"


@pytest.fixture(scope="module")
def ob(tmp_path_factory):
    w = Warehouse(tmp_path_factory.mktemp("ob") / "wh")
    w.ingest(OB)
    return w


def lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


@pytest.mark.parametrize("table", ["responses", "turns", "quarantine", "token_values"])
def test_golden_rows(ob, golden, table):
    order = {"quarantine": "ORDER BY source_path, locator", "token_values": f"{ORDER}, token_index"}.get(table, ORDER)
    golden(f"openai_batch/{table}", ob.rows(f"SELECT * FROM {table} {order}"))


def test_a_result_is_joined_to_its_request_and_the_request_gives_no_row_of_its_own(ob):
    [r] = ob.rows("SELECT response_id, prompt, response, system_prompt, inference_model, request_params, batch_input_path, "
                  "batch_input_line, status_code, batch_output_id, request_id, completion_id, prompt_tokens, completion_tokens, "
                  "total_tokens, finish_reason FROM responses WHERE custom_id = 'request-1'")
    assert (r["prompt"], r["response"], r["system_prompt"]) == ("Name the largest ocean.", "The Pacific.", "You are a terse assistant.")
    assert (r["inference_model"], json.loads(r["request_params"])) == (
        "gpt-4o-mini-2024-07-18", {"model": "gpt-4o-mini", "max_tokens": 20, "temperature": 0})
    assert (r["batch_input_path"], r["batch_input_line"]) == (str(OB / "openai" / "batchinput.jsonl"), 1)
    assert (r["status_code"], r["batch_output_id"], r["request_id"], r["completion_id"]) == (
        200, "batch_req_6811a1", "b1f0c2a9e4d7", "chatcmpl-BQx1")
    assert (r["prompt_tokens"], r["completion_tokens"], r["total_tokens"], r["finish_reason"]) == (24, 4, 28, "stop")
    turns = ob.rows("SELECT t.role, t.response_id IS NULL AS shared FROM turns AS t JOIN responses AS r "
                    "ON t.record_id = r.record_id WHERE r.response_id = ? ORDER BY t.turn_index", [r["response_id"]])
    assert [(t["role"], t["shared"]) for t in turns] == [("system", True), ("user", True), ("assistant", False)]
    # the input file's answered lines give nothing of their own; the others their prompt, response NULL
    assert ob.rows("SELECT custom_id, response FROM responses WHERE source_path LIKE '%/batchinput.jsonl' ORDER BY 1") == [
        {"custom_id": "request-3", "response": None}, {"custom_id": "request-5", "response": None}]
    assert ob.one("SELECT count(*) FROM responses WHERE custom_id IN ('request-1', 'request-2', 'request-4') "
                  "AND source_path LIKE '%/batchinput.jsonl'") == 0


def test_n_choices_are_responses_of_one_record_and_their_logprobs_are_kept_as_written(ob):
    got = ob.rows("SELECT candidate_index, response, record_id, logprobs FROM responses WHERE custom_id = 'request-2' "
                  "ORDER BY candidate_index")
    assert [(g["candidate_index"], g["response"]) for g in got] == [(0, "Yes"), (1, "No")]
    assert got[0]["record_id"] == got[1]["record_id"]
    [source] = [line for line in lines(OB / "openai" / "batch_6811_output.jsonl") if line["custom_id"] == "request-2"]
    for g, choice in zip(got, source["response"]["body"]["choices"]):
        assert json.loads(g["logprobs"]) == choice["logprobs"]
    # the per-token values, one row per token, as a token_values view will read them
    tokens = ob.rows("SELECT r.candidate_index, t.i - 1 AS token_index, t.entry->>'token' AS token, "
                     "CAST(t.entry->>'logprob' AS DOUBLE) AS logprob, json_array_length(t.entry->'top_logprobs') AS alternatives "
                     "FROM responses AS r, unnest(CAST(r.logprobs->'content' AS JSON[])) WITH ORDINALITY AS t(entry, i) "
                     "WHERE r.custom_id = 'request-2' ORDER BY 1, 2")
    assert tokens == [{"candidate_index": 0, "token_index": 0, "token": "Yes", "logprob": -0.0215, "alternatives": 2},
                      {"candidate_index": 1, "token_index": 0, "token": "No", "logprob": -3.8506, "alternatives": 2}]


def test_every_choices_logprobs_are_its_per_token_values(ob):
    """Each choice's log probabilities, read from the files by hand, are the token_values of its response
    (method logprob, in token order); aligned only where the completion's own count says how many."""
    expected = {}
    for path in sorted(OB.rglob("*.jsonl")) + sorted(OB.rglob("*.json")):
        docs = [json.loads(path.read_text())] if path.suffix == ".json" else lines(path)
        for doc in docs:
            body = (doc.get("response") or {}).get("body") or doc
            for choice in body.get("choices") or []:
                content = (choice.get("logprobs") or {}).get("content")
                if content:
                    expected[(doc.get("custom_id"), choice["index"])] = [e["logprob"] for e in content]
    assert len(expected) >= 3
    got = ob.rows("SELECT r.custom_id, r.candidate_index, t.method, t.token_index, t.value, t.aligned "
                  "FROM token_values AS t JOIN responses AS r USING (response_id) ORDER BY 1, 2, 4")
    by_choice = {}
    for g in got:
        assert g["method"] == "logprob"
        by_choice.setdefault((g["custom_id"], g["candidate_index"]), []).append(g["value"])
    assert by_choice == expected
    # vllm-1's completion counts 3 tokens and its file lists 2 log probabilities: never stretched
    assert {g["aligned"] for g in got if g["custom_id"] == "vllm-1"} == {False}
    assert {g["aligned"] for g in got if g["custom_id"] == "request-2"} == {None}  # two choices: no count of each


def test_a_failed_request_is_quarantined_with_what_the_api_said_and_its_prompt_kept(ob):
    got = ob.rows("SELECT regexp_extract(source_path, '[^/]+$') AS file, locator, stage, error, raw FROM quarantine ORDER BY 1, 2")
    assert [(g["file"], g["locator"], g["stage"]) for g in got] == [
        ("batch_6811_errors.jsonl", "1", "map"), ("batch_6811_errors.jsonl", "2", "map"),
        ("output.jsonl", "3", "map"), ("output.jsonl", "4", "map")]
    assert [g["error"] for g in got] == [
        "request 'request-3' failed with HTTP status 400: the API said: Invalid 'max_tokens': integer below minimum value. "
        "Expected a value >= 1, but got -5 instead. (code integer_below_min_value, type invalid_request_error, param "
        "max_tokens); the line is kept here whole (raw)",
        "request 'request-5' failed: the API said: This request could not be executed before the completion window expired. "
        "(code batch_expired); the line is kept here whole (raw)",
        "request 'vllm-3' failed with HTTP status 400: the API said: Request must not be sent in stream mode; the line is "
        "kept here whole (raw)",
        "request 'vllm-4' failed with HTTP status 404: the API said: The model `missing-model` does not exist. (code 404, "
        "type NotFoundError); the line is kept here whole (raw)"]
    assert json.loads(got[0]["raw"])["custom_id"] == "request-3"
    # its prompt is not lost: the request's line gives it, unanswered
    assert ob.one("SELECT prompt FROM responses WHERE custom_id = 'request-3' AND response IS NULL") == "Hello"


def test_the_batch_counts_as_the_batch_api_counts_it(ob):
    """``Batch.request_counts`` of the OpenAI batch: its requests, the ones completed, the ones failed."""
    total = len(lines(OB / "openai" / "batchinput.jsonl"))
    completed = ob.one("SELECT count(DISTINCT custom_id) FROM responses WHERE source_path LIKE '%/openai/batch_6811_output.jsonl'")
    failed = ob.one("SELECT count(*) FROM quarantine WHERE source_path LIKE '%/openai/batch_6811_errors.jsonl'")
    counts = BatchRequestCounts(total=total, completed=completed, failed=failed)
    assert (counts.total, counts.completed, counts.failed) == (5, 3, 2) and counts.completed + counts.failed == counts.total


def test_a_results_rows_give_back_its_chat_completion(ob):
    """Nothing of a completion is lost: its rows (columns and extra) rebuild the body, which the openai package reads."""
    for path in (OB / "openai" / "batch_6811_output.jsonl", OB / "vllm" / "output.jsonl"):
        for line in lines(path):
            body = (line.get("response") or {}).get("body")
            if not body or line["error"] is not None:
                continue
            got = ob.rows("SELECT r.*, t.content AS t_content, t.role AS t_role, t.tool_calls AS t_tool_calls, "
                          "t.reasoning_content AS t_reasoning, t.extra AS t_extra FROM responses AS r JOIN turns AS t "
                          "ON t.response_id = r.response_id WHERE r.custom_id = ? ORDER BY r.candidate_index", [line["custom_id"]])
            extra = json.loads(got[0]["extra"])
            rebuilt = {**extra["body"], "id": got[0]["completion_id"], "created": got[0]["created"],
                       "model": got[0]["inference_model"],
                       "usage": {**extra["body"]["usage"], "prompt_tokens": got[0]["prompt_tokens"],
                                 "completion_tokens": got[0]["completion_tokens"], "total_tokens": got[0]["total_tokens"]},
                       "choices": []}
            if got[0]["prompt_end"] is not None:
                rebuilt["prompt_token_ids"] = got[0]["token_ids"][: got[0]["prompt_end"]]
            if "prompt_logprobs" in body:
                rebuilt["prompt_logprobs"] = got[0]["prompt_logprobs"]
            for g in got:
                message = {"role": g["t_role"], "content": g["t_content"], **json.loads(g["t_extra"] or "{}")}
                if g["t_tool_calls"] is not None:
                    message["tool_calls"] = json.loads(g["t_tool_calls"])
                if g["t_reasoning"] is not None:
                    message["reasoning_content"] = g["t_reasoning"]
                choice = {"index": g["candidate_index"], "message": message, "finish_reason": g["finish_reason"],
                          "logprobs": json.loads(g["logprobs"]) if g["logprobs"] else None,
                          **json.loads(g["extra"]).get("choice", {})}
                if g["prompt_end"] is not None:
                    choice["token_ids"] = g["token_ids"][g["prompt_end"]:]
                rebuilt["choices"].append(choice)
            assert rebuilt == body, line["custom_id"]
            ChatCompletion.model_validate(rebuilt)


def test_vllm_results_give_the_whole_sequence_of_token_ids_and_the_reasoning(ob):
    [r] = ob.rows("SELECT response_id, token_ids, prompt_end FROM responses WHERE custom_id = 'vllm-1'")
    assert r["token_ids"][r["prompt_end"]:] == [49, 635, 13] and r["prompt_end"] == 12
    assert ob.one("SELECT reasoning_content FROM turns WHERE response_id = ?", [r["response_id"]]) == "The capital of Italy is Rome."


def test_either_file_alone_ingests(ob):
    assert ob.rows("SELECT prompt, response, custom_id FROM responses WHERE source_path LIKE '%/alone_input/%'") == [
        {"prompt": "Unanswered question?", "response": None, "custom_id": "solo-1"}]
    assert ob.rows("SELECT prompt, response, custom_id FROM responses WHERE source_path LIKE '%/alone_output/%'") == [
        {"prompt": None, "response": "An answer whose question is elsewhere.", "custom_id": "orphan-1"}]
    assert ob.rows("SELECT prompt, response, finish_reason FROM responses WHERE source_path LIKE '%/saved/completion.json'") == [
        {"prompt": None, "response": "Saved as it came.", "finish_reason": "length"}]


def test_a_custom_id_two_inputs_hold_is_not_joined(tmp_path):
    """custom_ids are unique in one batch only: two batches in one folder may both have request-1."""
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(OB / "openai" / "batchinput.jsonl", folder / "a_input.jsonl")
    shutil.copy(OB / "openai" / "batchinput.jsonl", folder / "b_input.jsonl")
    shutil.copy(OB / "openai" / "batch_6811_output.jsonl", folder / "output.jsonl")
    w = Warehouse(tmp_path / "wh")
    summary = w.ingest(folder)
    assert summary.records_quarantined == 0
    assert w.one("SELECT count(*) FROM responses WHERE batch_input_path IS NOT NULL") == 0
    assert w.one("SELECT count(*) FROM responses WHERE source_path LIKE '%_input.jsonl'") == 10  # every prompt, twice
    assert w.one("SELECT count(*) FROM responses WHERE source_path LIKE '%/output.jsonl' AND prompt IS NULL") == 4


def test_a_changed_input_re_ingests_its_output(tmp_path):
    folder = tmp_path / "in"
    shutil.copytree(OB / "openai", folder)
    w = Warehouse(tmp_path / "wh")
    w.ingest(folder)
    assert w.one("SELECT prompt FROM responses WHERE custom_id = 'request-1'") == "Name the largest ocean."
    requests = lines(folder / "batchinput.jsonl")
    requests[0]["body"]["messages"][1]["content"] = "Name the deepest ocean."
    (folder / "batchinput.jsonl").write_text("".join(json.dumps(r) + "\n" for r in requests))
    w.ingest(folder)
    assert w.rows("SELECT prompt, regexp_extract(source_path, '[^/]+$') AS file FROM responses WHERE custom_id = 'request-1'") == [
        {"prompt": "Name the deepest ocean.", "file": "batch_6811_output.jsonl"}]


def test_files_over_the_record_limit_are_ingested_alone_saying_so(tmp_path):
    folder = tmp_path / "in"
    shutil.copytree(OB / "vllm", folder)
    w = Warehouse(tmp_path / "wh")
    summary = w.ingest(folder, max_record_mb=0.001)  # 1,048 bytes: the output (2,112) is larger, the input (701) not
    assert w.one("SELECT count(*) FROM responses WHERE batch_input_path IS NOT NULL") == 0
    notes = w.rows("SELECT regexp_extract(source_path, '[^/]+$') AS file, locator, stage, error FROM quarantine "
                   "WHERE locator = '' ORDER BY 1")
    assert [(n["file"], n["stage"]) for n in notes] == [("input.jsonl", "read"), ("output.jsonl", "read")]
    assert notes[0]["error"] == ("output.jsonl, beside this file, is over the 1,048-byte record limit or unreadable: its "
                                 "lines and this file's were ingested alone, not joined; raise --max-record-mb to join them")
    assert notes[1]["error"] == ("output.jsonl is 2,112 bytes, over the 1,048-byte record limit: its lines are ingested "
                                 "alone, not joined to the batch files beside it; raise --max-record-mb to join them")
    assert summary.records_ingested == 4 + 2  # every prompt, every answered result


# --- detection ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", sorted(p for p in OB.rglob("*") if p.suffix in (".json", ".jsonl")),
                         ids=lambda p: str(p.relative_to(OB)))
def test_every_fixture_is_detected_as_openai_batch(path):
    found = detect(str(path), path.read_bytes()[:65536], INGESTORS)
    assert found is not None and found.name == "openai_batch"
    assert not HfChat().sniff(str(path), path.read_bytes()[:65536])


NEAR_MISSES = {
    "anthropic_input.jsonl": {"custom_id": "r1", "params": {"model": "claude", "max_tokens": 9,
                                                           "messages": [{"role": "user", "content": "Hi"}]}},
    "anthropic_result.jsonl": {"custom_id": "r1", "result": {"type": "succeeded", "message": {"content": []}}},
    "chat.jsonl": {"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Yo"}]},
    "request_body.jsonl": {"model": "gpt-4o", "messages": [{"role": "user", "content": "Hi"}], "temperature": 0},
    "chunk.jsonl": {"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [{"delta": {"content": "H"}}]},
    "ids.jsonl": {"custom_id": "r1", "label": "spam"},
}


@pytest.mark.parametrize("name", sorted(NEAR_MISSES))
def test_near_misses_are_not_openai_batch(tmp_path, name):
    path = write_text(tmp_path / name, json.dumps(NEAR_MISSES[name]) + "\n")
    assert not OpenAIBatch().sniff(str(path), path.read_bytes())


def test_a_batch_line_whose_head_is_cut_is_still_recognised(tmp_path):
    big = {"custom_id": "r1", "method": "POST", "url": "/v1/chat/completions",
           "body": {"model": "m", "messages": [{"role": "user", "content": "x" * 100_000}]}}
    path = write_text(tmp_path / "big.jsonl", json.dumps(big) + "\n")
    assert OpenAIBatch().sniff(str(path), path.read_bytes()[:65536])


@pytest.mark.parametrize("line, message", [
    ({"messages": [{"role": "user", "content": "Hi"}]}, "not an OpenAI batch line or chat completion (keys: messages): "
     "expected a batch input line {custom_id, method, url, body}, a batch output line {id, custom_id, response, error} or "
     "a chat completion {id, object: chat.completion, choices}"),
    ({"custom_id": "e1", "method": "POST", "url": "/v1/embeddings", "body": {"model": "m", "input": "x"}},
     "url '/v1/embeddings': only chat completions requests (/v1/chat/completions) are read"),
    ({"id": "b", "custom_id": "e1", "response": {"status_code": 200, "request_id": "r", "body": {"object": "list", "data": []}},
      "error": None}, "request 'e1': status 200 but its response body is not a chat completion (no choices list)"),
])
def test_openai_batch_forced_onto_another_shape_quarantines_naming_the_expected_one(tmp_path, line, message):
    path = write_text(tmp_path / "in" / "x.jsonl", json.dumps(line) + "\n")
    w = Warehouse(tmp_path / "wh")
    w.ingest(path, source_format="openai_batch")
    [q] = w.rows("SELECT error FROM quarantine")
    assert q["error"].startswith(message)
