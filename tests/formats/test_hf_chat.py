"""Hugging Face chat datasets: the fixtures datasets' own writers made, golden rows, detection, errors."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import warehouse
from warehouse.formatkit.registry import Registry
from warehouse.formats.hf_chat import HfChat
from warehouse.formats.openai_batch import OpenAIBatch
from warehouse.run.worker import detect

from ..conftest import FIXTURES, REALDATA, REPO, Warehouse, ingested_cleanly, write_text

INGESTORS = [i for i in Registry.installed().ingestors() if i.reads_content]
HF = FIXTURES / "hf_chat"
ORDER = "ORDER BY source_path, source_locator"


@pytest.fixture(scope="module")
def hf(tmp_path_factory):
    return ingested_cleanly(tmp_path_factory, "hf", HF)


def detected(path: Path) -> str | None:
    found = detect(str(path), path.read_bytes()[:65536], INGESTORS)
    return found.name if found else None


def rows(w: Warehouse, sql: str, *params) -> list[dict]:
    return w.rows(sql, list(params))


@pytest.mark.parametrize("table, order", [("responses", ORDER), ("turns", ORDER), ("evaluations", ORDER + ", criterion")])
def test_golden_rows(hf, golden, table, order):
    golden(f"hf_chat/{table}", hf.rows(f"SELECT * FROM {table} {order}"))


def test_every_fixture_is_hf_chat_with_its_rows_counted(hf):
    got = {r["name"]: (r["source_format"], r["records"]) for r in hf.rows(
        "SELECT regexp_extract(source_path, '[^/]+$') AS name, source_format, records FROM sources")}
    assert got == {
        "messages.jsonl": ("hf_chat", 3), "multimodal.jsonl": ("hf_chat", 1), "chat.parquet": ("hf_chat", 2),
        "implicit_preference.parquet": ("hf_chat", 1), "plain.jsonl": ("hf_chat", 3),
        "plain_preference.json": ("hf_chat", 2), "preference.jsonl": ("hf_chat", 2),
        "prompt_completion.json": ("hf_chat", 2), "prompt_only.jsonl": ("hf_chat", 1), "sharegpt.jsonl": ("hf_chat", 1)}


def test_a_conversation_is_one_response_whose_turns_are_its_messages(hf):
    [r] = rows(hf, "SELECT response_id, prompt, response, system_prompt, chat_shape FROM responses "
                   "WHERE source_path LIKE '%/messages.jsonl' AND source_locator = '2'")
    assert (r["prompt"], r["response"], r["chat_shape"]) == ("What's the weather in Oslo?", "4 °C and raining in Oslo.", "messages")
    turns = rows(hf, "SELECT role, content, tool_calls, has_tool_calls, tool_names, tool_call_id, tool_name FROM turns "
                     "WHERE response_id = ? ORDER BY turn_index", r["response_id"])
    assert [t["role"] for t in turns] == ["user", "assistant", "tool", "assistant"]
    assert json.loads(turns[1]["tool_calls"]) == [
        {"id": "call_7", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}]
    assert (turns[1]["has_tool_calls"], turns[1]["tool_names"], turns[1]["content"]) == (True, ["get_weather"], None)
    assert (turns[2]["tool_call_id"], turns[2]["tool_name"]) == ("call_7", "get_weather")
    [reasoning] = rows(hf, "SELECT reasoning_content FROM turns WHERE reasoning_content IS NOT NULL")
    assert reasoning["reasoning_content"].startswith("Rayleigh scattering")


def test_content_parts_are_kept_and_their_text_is_the_content(hf):
    [t] = rows(hf, "SELECT content, content_parts FROM turns WHERE source_path LIKE '%/multimodal.jsonl' AND role = 'user'")
    assert t["content"] == "What is in this picture?"
    assert [p["type"] for p in json.loads(t["content_parts"])] == ["text", "image_url"]
    assert json.loads(t["content_parts"])[1]["image_url"] == {"url": "https://example.org/cat.png"}


def test_a_prompt_completion_row_shares_its_prompt_and_owns_its_completion(hf):
    [r] = rows(hf, "SELECT response_id, prompt, response, system_prompt FROM responses "
                   "WHERE source_path LIKE '%/prompt_completion.json' AND source_locator = '[1]'")
    assert (r["prompt"], r["response"], r["system_prompt"]) == ("2+2?", "4", "Be terse.")
    turns = rows(hf, "SELECT turn_index, role, response_id FROM turns WHERE source_path LIKE '%/prompt_completion.json' "
                     "AND source_locator LIKE '[1].%' ORDER BY turn_index")
    assert [(t["turn_index"], t["role"], t["response_id"]) for t in turns] == [
        (0, "system", None), (1, "user", None), (2, "assistant", r["response_id"])]


def test_plain_text_rows_have_no_turns_and_a_prompt_alone_no_response(hf):
    got = rows(hf, "SELECT prompt, response, chat_shape FROM responses WHERE source_path LIKE '%/plain.jsonl' ORDER BY source_locator")
    assert got == [{"prompt": "The sky is", "response": " blue.", "chat_shape": "prompt_completion"},
                   {"prompt": "Water boils at", "response": " 100 °C at sea level.", "chat_shape": "prompt_completion"},
                   {"prompt": "Once upon a time", "response": None, "chat_shape": "prompt_completion"}]
    assert hf.one("SELECT count(*) FROM turns WHERE source_path LIKE '%/plain.jsonl'") == 0


def test_a_preference_row_is_two_responses_of_one_record_that_dpo_pairs_pairs(hf):
    got = rows(hf, "SELECT r.candidate_index, r.response, e.label, r.record_id FROM responses AS r JOIN evaluations AS e "
                   "USING (response_id) WHERE r.source_path LIKE '%/preference.jsonl' AND r.source_locator LIKE '1.%' "
                   "AND e.criterion = 'preference' ORDER BY candidate_index")
    assert [(g["candidate_index"], g["response"], g["label"]) for g in got] == [
        (0, "Botanically yes; in cooking it is used as a vegetable.", "chosen"), (1, "No.", "rejected")]
    assert got[0]["record_id"] == got[1]["record_id"]
    scores = rows(hf, "SELECT e.score, e.source_locator FROM evaluations AS e WHERE e.criterion = 'score' "
                      "AND e.source_path LIKE '%/preference.jsonl' ORDER BY e.source_locator")
    assert [s["score"] for s in scores] == [8.5, 2.0, 9.0, 3.5]
    pairs = rows(hf, "SELECT prompt, first_user_message, chosen_response, rejected_response, paired_by, chosen_grade "
                     "FROM dpo_pairs ORDER BY prompt")
    assert pairs == [
        {"prompt": "I failed my exam.", "first_user_message": "I failed my exam.", "paired_by": "preference", "chosen_grade": None,
         "chosen_response": "I'm sorry. Want to plan the retake together?", "rejected_response": "Study harder."},
        {"prompt": "Is a tomato a fruit?", "first_user_message": "Is a tomato a fruit?", "paired_by": "preference", "chosen_grade": None,
         "chosen_response": "Botanically yes; in cooking it is used as a vegetable.", "rejected_response": "No."},
        {"prompt": "The capital of France is", "first_user_message": "The capital of France is", "paired_by": "preference",
         "chosen_grade": None, "chosen_response": " Paris.", "rejected_response": " Lyon."},
        {"prompt": "The largest planet is", "first_user_message": "The largest planet is", "paired_by": "preference",
         "chosen_grade": None, "chosen_response": " Jupiter.", "rejected_response": " Mars."},
        {"prompt": "What is 3 x 4?", "first_user_message": "What is 3 x 4?", "paired_by": "preference", "chosen_grade": None,
         "chosen_response": "12", "rejected_response": "7"},
    ]


def test_an_implicit_prompt_is_the_messages_both_conversations_open_with(hf):
    turns = rows(hf, "SELECT t.turn_index, t.role, t.content, r.candidate_index FROM turns AS t LEFT JOIN responses AS r "
                     "USING (response_id) WHERE t.source_path LIKE '%/implicit_preference.parquet' ORDER BY t.turn_index")
    assert [(t["turn_index"], t["content"], t["candidate_index"]) for t in turns] == [
        (0, "What is 3 x 4?", None), (1, "12", 0), (2, "7", 1)]


def test_sharegpt_speakers_become_roles_and_its_system_the_system_prompt(hf):
    [r] = rows(hf, "SELECT response_id, prompt, response, system_prompt, extra FROM responses WHERE chat_shape = 'sharegpt'")
    assert (r["prompt"], r["response"], r["system_prompt"], json.loads(r["extra"])) == (
        "And for sad?", "Gloomy.", "You are a helpful assistant.", {"id": "sg-1"})
    assert [t["role"] for t in rows(hf, "SELECT role FROM turns WHERE response_id = ? ORDER BY turn_index", r["response_id"])] == [
        "user", "assistant", "user", "assistant"]


def test_a_parquet_datasets_wrote_keeps_its_other_columns_in_extra(hf):
    got = rows(hf, "SELECT source_locator, response, extra FROM responses WHERE source_path LIKE '%/chat.parquet' ORDER BY 1")
    assert [(g["source_locator"], g["response"], json.loads(g["extra"])) for g in got] == [
        ("[0]", "Merci.", {"id": 101, "source": "handwritten"}), ("[1]", "", {"id": 102, "source": "handwritten"})]


def test_a_json_file_of_json_lines_is_read_line_by_line(hf):
    got = rows(hf, "SELECT DISTINCT record_index FROM responses WHERE source_path LIKE '%/plain_preference.json' ORDER BY 1")
    assert [g["record_index"] for g in got] == [0, 1]


# --- Parquet: read a batch of rows at a time, any size -----------------------------------------------------------


def test_a_parquet_file_over_the_record_limit_is_read_by_row_group(tmp_path):
    rows_ = [{"messages": [{"role": "user", "content": f"q{i} " + "x" * 200}, {"role": "assistant", "content": f"a{i}"}]}
             for i in range(300)]
    path = tmp_path / "in" / "big.parquet"
    path.parent.mkdir()
    pq.write_table(pa.Table.from_pylist(rows_), path, row_group_size=50)
    assert pq.ParquetFile(path).num_row_groups == 6 and path.stat().st_size > 2048
    w = Warehouse(tmp_path / "wh")
    summary = w.ingest(path.parent, max_record_mb=0.002)  # the file is over the limit: never read whole
    assert (summary.records_ingested, summary.records_quarantined) == (300, 0)
    assert w.one("SELECT count(*) FROM responses WHERE response = 'a299' AND source_locator = '[299]'") == 1
    assert w.one("SELECT sha256 FROM sources") == __import__("hashlib").sha256(path.read_bytes()).hexdigest()


def test_a_parquet_file_no_format_claims_is_passed_over_and_one_named_is_reported(tmp_path):
    other = tmp_path / "in" / "scores.parquet"
    other.parent.mkdir()
    pq.write_table(pa.table({"prompt": ["p"], "response": ["r"], "score": [0.5]}), other)
    w = Warehouse(tmp_path / "wh")
    summary = w.ingest(other.parent)
    assert (summary.records_ingested, summary.records_quarantined) == (0, 0)
    assert w.one("SELECT count(*) FROM sources") == 0
    w.ingest(other)  # named on the command line: never passed over silently
    [q] = w.rows("SELECT stage, error FROM quarantine")
    assert q["stage"] == "detect" and q["error"].startswith("no format recognised this file")


def test_a_truncated_parquet_file_is_quarantined_saying_so(tmp_path):
    good = tmp_path / "good.parquet"
    pq.write_table(pa.Table.from_pylist([{"messages": [{"role": "user", "content": "hi"}]}] * 3), good)
    bad = tmp_path / "in" / "bad.parquet"
    bad.parent.mkdir()
    bad.write_bytes(good.read_bytes()[:-20])
    w = Warehouse(tmp_path / "wh")
    w.ingest(bad, source_format="hf_chat")
    [q] = w.rows("SELECT stage, error FROM quarantine")
    assert q["stage"] == "decode" and q["error"].startswith("not a readable Parquet file: ")


# --- detection: what is and what is not a chat dataset -------------------------------------------------------------


@pytest.mark.parametrize("path", sorted(p for p in HF.rglob("*") if p.suffix in (".json", ".jsonl", ".parquet")),
                         ids=lambda p: p.name)
def test_every_fixture_is_detected_as_hf_chat(path):
    assert detected(path) == "hf_chat"


NEAR_MISSES = {
    "text.jsonl": '{"text": "Once upon a time"}\n',
    "prompts.jsonl": '{"prompt": "Write a poem."}\n{"prompt": "Write a song."}\n',
    "prompt_response.jsonl": '{"prompt": "Hi", "response": "Hello", "model": "m"}\n',
    "afterimage.jsonl": '{"conversations": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Yo"}], "metadata": {}}\n',
    "sharegpt_roles.jsonl": '{"conversations": [{"speaker": "a", "text": "Hi"}]}\n',
    "scale_turn.json": json.dumps({"id": "t", "messages": [{"role": "user", "content": {"text": "Hi"}, "source_id": "u"}]}),
    "dataloop_trace.json": json.dumps({"shebang": "dataloop", "messages": [{"role": "user", "content": "Hi"}]}),
    "batch_input.jsonl": json.dumps({"custom_id": "r1", "method": "POST", "url": "/v1/chat/completions",
                                     "body": {"model": "m", "messages": [{"role": "user", "content": "Hi"}]}}) + "\n",
    "anthropic_batch.jsonl": json.dumps({"custom_id": "r1", "params": {"model": "claude", "max_tokens": 9,
                                         "messages": [{"role": "user", "content": "Hi"}]}}) + "\n",
    "scale_message_object.jsonl": '{"messages": [{"role": "user", "content": {"text": "Hi"}}]}\n',
    "preference_numbers.jsonl": '{"prompt": "p", "chosen": 1, "rejected": 0}\n',
    "messages_of_strings.jsonl": '{"messages": ["Hi", "Hello"]}\n',
}


@pytest.mark.parametrize("name", sorted(NEAR_MISSES))
def test_near_misses_are_not_hf_chat(tmp_path, name):
    path = write_text(tmp_path / name, NEAR_MISSES[name])
    assert detected(path) != "hf_chat"
    assert not HfChat().sniff(str(path), path.read_bytes())


def test_this_warehouses_exports_other_than_openai_chat_and_hf_chat_are_not_hf_chat(samples_wh, tmp_path):
    for fmt, out in [("jsonl", "o.jsonl"), ("parquet", "pq"), ("afterimage", "ai.jsonl"), ("scale", "s.json"),
                     ("dataloop", "dl"), ("trait_interp", "ti")]:
        warehouse.export(samples_wh.root, None, fmt, tmp_path / out, progress=False)
    files = [p for p in tmp_path.rglob("*") if p.suffix in (".json", ".jsonl", ".parquet")]
    assert any(p.suffix == ".parquet" for p in files) and len(files) > 10
    claimed = [str(p.relative_to(tmp_path)) for p in files
               if HfChat().sniff(str(p), p.read_bytes()[:65536]) or OpenAIBatch().sniff(str(p), p.read_bytes()[:65536])]
    assert claimed == []


def _other_formats_files() -> list[Path]:
    roots = [p for p in FIXTURES.iterdir() if p.is_dir() and p.name not in ("hf_chat", "openai_batch")] + [REPO / "samples"]
    if REALDATA.is_dir():
        roots.append(REALDATA)
    return sorted(p for root in roots for p in root.rglob("*") if p.suffix in (".json", ".jsonl"))


def test_no_file_of_another_format_is_claimed_by_the_new_formats():
    """The fixtures, the bundled samples and the real files of the other formats: the new formats' sniffs
    refuse every one, so each is detected exactly as before they were installed."""
    files = _other_formats_files()
    assert len(files) > 100
    claimed = [str(p) for p in files if HfChat().sniff(str(p), p.read_bytes()[:65536].removeprefix(b"\xef\xbb\xbf"))
               or OpenAIBatch().sniff(str(p), p.read_bytes()[:65536].removeprefix(b"\xef\xbb\xbf"))]
    assert claimed == []


# --- a format forced onto the wrong shape: quarantined, saying what was expected -----------------------------------


def chat_lines(n: int) -> str:
    return "".join(json.dumps({"messages": [{"role": "system", "content": "Be kind."}, {"role": "user", "content": f"Q{i}"},
                                            {"role": "assistant", "content": f"A{i}"}]}) + "\n" for i in range(n))


def test_an_openai_chat_jsonl_is_detected_as_hf_chat(tmp_path):
    """It was "no format recognised" (forced as scale, tests/formats/test_scale.py holds it to a refusal)."""
    path = write_text(tmp_path / "in" / "chat.jsonl", chat_lines(60))
    w = Warehouse(tmp_path / "wh")
    summary = w.ingest(path.parent)
    assert (summary.records_ingested, summary.records_quarantined) == (60, 0)
    assert w.one("SELECT list(DISTINCT source_format) FROM responses") == ["hf_chat"]
    assert w.one("SELECT count(*) FROM turns") == 180


@pytest.mark.parametrize("source, locator, message", [
    (FIXTURES / "scale" / "core", None, "content: expected a string, a list of content parts or null"),
    (FIXTURES / "afterimage" / "unevaluated.jsonl", "1.conversations[0]", "a ShareGPT message needs `from` (human, gpt, system, ...) "
     "and `value`, got keys content, role"),
    (FIXTURES / "openai_batch" / "openai" / "batchinput.jsonl", "1", "not a Hugging Face chat row (keys: body, custom_id, "
     "method, url): expected a `messages` list of {role, content}, `prompt` and `completion`, `prompt`/`chosen`/`rejected`, "
     "or ShareGPT `conversations` of {from, value}"),
])
def test_hf_chat_forced_onto_another_shape_quarantines_naming_the_expected_one(tmp_path, source, locator, message):
    w = Warehouse(tmp_path / "wh")
    summary = w.ingest(source, source_format="hf_chat")
    assert summary.records_ingested == 0 and summary.records_quarantined > 0
    q = w.rows("SELECT locator, error FROM quarantine ORDER BY source_path, locator")
    assert any(message in r["error"] and (locator is None or r["locator"] == locator) for r in q), q


def test_hf_chat_forced_onto_a_trait_interp_response_is_refused(tmp_path):
    path = write_text(tmp_path / "r.json", json.dumps({"prompt": "Hi", "response": "Hello"}))
    w = Warehouse(tmp_path / "wh")
    w.ingest(path, source_format="hf_chat")
    [q] = w.rows("SELECT error FROM quarantine")
    assert q["error"].startswith("a `prompt` with a `response` is not a Hugging Face chat row (its answer is `completion`)")


BAD_ROWS = [  # (row, the quarantine locator of its line, the start of the message)
    ({"messages": [{"content": "hi"}]}, ".messages[0].role", "role: missing; every message needs one (system, user, assistant, tool)"),
    ({"messages": "hi"}, ".messages", "messages: expected a list of messages {role, content}, got string 'hi'"),
    ({"prompt": [{"role": "user", "content": "q"}], "completion": "a"}, "",
     "prompt is a list of messages, completion is text: give them all as lists of messages (conversational) or all as text"),
    ({"prompt": "q", "chosen": [{"role": "assistant", "content": "a"}], "rejected": "b"}, "",
     "prompt is text, chosen is a list of messages, rejected is text: give them all as lists of messages (conversational) "
     "or all as text"),
    ({"messages": [{"role": "user", "content": 7}]}, ".messages[0].content",
     "content: expected a string, a list of content parts or null"),
    ({"messages": [{"role": "assistant", "content": None, "tool_calls": {"id": "x"}}]}, ".messages[0].tool_calls",
     "tool_calls: expected a list, got object"),
    ({"conversations": [{"from": "human"}]}, ".conversations[0]", "a ShareGPT message needs `from` (human, gpt, system, ...) and `value`"),
    ({"messages": [{"role": "user", "content": ["hi"]}]}, ".messages[0].content[0]", "content[0]: expected a content part {type, ...}"),
]


def test_a_bad_row_is_quarantined_with_where_and_why_and_the_others_kept(tmp_path):
    good = json.dumps({"messages": [{"role": "user", "content": "ok"}]})
    lines = [good] + [json.dumps(row) for row, _, _ in BAD_ROWS]
    path = write_text(tmp_path / "in" / "rows.jsonl", "\n".join(lines) + "\n")
    w = Warehouse(tmp_path / "wh")
    summary = w.ingest(path, source_format="hf_chat")
    assert (summary.records_ingested, summary.records_quarantined) == (1, len(BAD_ROWS))
    got = {r["locator"]: (r["stage"], r["error"]) for r in w.rows("SELECT locator, stage, error FROM quarantine")}
    for line, (_row, sub, message) in enumerate(BAD_ROWS, 2):
        stage, error = got[f"{line}{sub}"]
        assert stage == "map" and error.startswith(message), (line, error)


# --- round trips --------------------------------------------------------------------------------------------------------


def _messages_of(w: Warehouse, where: str = "true") -> list[list[tuple]]:
    """Each response's record's turns (role, content, tool calls, tool call id), in file order."""
    got = w.rows("SELECT r.response_id, t.role, t.content, t.tool_calls, t.tool_call_id FROM responses AS r "
                 f"JOIN turns AS t ON t.record_id = r.record_id WHERE {where} "
                 "ORDER BY r.source_path, r.record_index, r.source_locator, t.turn_index")
    out: dict[str, list] = {}
    for g in got:
        calls = json.loads(g["tool_calls"]) if g["tool_calls"] else None
        out.setdefault(g["response_id"], []).append((g["role"], g["content"], calls, g["tool_call_id"]))
    return list(out.values())


def test_an_openai_chat_export_ingests_back_as_hf_chat_with_the_same_turns(samples_wh, hf, tmp_path):
    for name, w in (("samples", samples_wh), ("hf", hf)):
        out = tmp_path / name / "train.jsonl"
        warehouse.export(w.root, None, "openai_chat", out, progress=False)
        lines = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
        assert lines
        back = Warehouse(tmp_path / name / "wh")
        summary = back.ingest(out)
        assert (summary.records_ingested, summary.records_quarantined) == (len(lines), 0)
        assert back.one("SELECT list(DISTINCT source_format) FROM responses") == ["hf_chat"]
        exported = [[(m["role"], m["content"] if isinstance(m["content"], str) or m["content"] is None
                      else "\n".join(p["text"] for p in m["content"] if p["type"] == "text"),
                      m.get("tool_calls"), m.get("tool_call_id")) for m in line["messages"]] for line in lines]
        assert _messages_of(back) == exported
    # the fixtures' conversations of one response come back as they were read: every message, in order
    original = _messages_of(hf, "r.chat_shape IN ('messages', 'prompt_completion') AND r.response <> ''")
    again = _messages_of(back)
    assert len(original) == 7 and all(c in again for c in original)


def test_a_preference_rows_rejected_conversation_leaves_out_the_chosen_completion(tmp_path):
    """A completion of several messages (a tool call, its reply, the answer): the rejected answer's
    conversation is the prompt and its own messages, never the chosen one's."""
    call = {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
    row = {"prompt": [{"role": "user", "content": "Look it up."}],
           "chosen": [{"role": "assistant", "content": None, "tool_calls": [call]},
                      {"role": "tool", "tool_call_id": "c1", "content": "42"},
                      {"role": "assistant", "content": "It is 42."}],
           "rejected": [{"role": "assistant", "content": "No idea."}]}
    path = write_text(tmp_path / "in" / "pref.jsonl", json.dumps(row) + "\n")
    w = Warehouse(tmp_path / "wh")
    w.ingest(path.parent)
    warehouse.export(w.root, None, "openai_chat", tmp_path / "o.jsonl", progress=False)
    chats = [json.loads(x)["messages"] for x in (tmp_path / "o.jsonl").read_text().splitlines()]
    assert chats == [
        [{"role": "user", "content": "Look it up."}, {"role": "assistant", "content": None, "tool_calls": [call]},
         {"role": "tool", "content": "42", "tool_call_id": "c1"}, {"role": "assistant", "content": "It is 42."}],
        [{"role": "user", "content": "Look it up."}, {"role": "assistant", "content": "No idea."}]]
