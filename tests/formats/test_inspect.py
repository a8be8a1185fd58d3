"""Inspect AI eval logs: the logs in tests/fixtures/inspect (written by inspect_ai itself, make_logs.py there),
against golden rows, targeted checks, detection, bad input and large logs."""

from __future__ import annotations

import hashlib
import json
import struct
import subprocess
import sys
import tracemalloc
import zipfile
import zlib
from pathlib import Path

import pyarrow as pa
import pytest

import warehouse
from warehouse.formatkit.records import RecordContext
from warehouse.formatkit.registry import Registry
from warehouse.formatkit.source import SourceFile
from warehouse.formats.inspect import Inspect
from warehouse.run.worker import detect

from ..conftest import FIXTURES, ingested_cleanly
from ..formatkit.test_nothing_lost import zip_members
from ..openai_chat import check_line

INGESTORS = Registry.installed().ingestors()  # every installed format, in detection order

IN = FIXTURES / "inspect"
EVAL = IN / "warehouse_fixture.eval"
JSON_LOG = IN / "warehouse_fixture.json"
ORDER = "ORDER BY source_path, source_locator"


@pytest.fixture(scope="module")
def ins(tmp_path_factory):
    return ingested_cleanly(tmp_path_factory, "inspect", IN)


def members(path: Path = EVAL) -> dict[str, bytes]:
    return dict(zip_members(path))


def write_eval(path: Path, contents: dict[str, bytes]) -> Path:
    """A .eval archive as Inspect writes one: every member zstd-compressed (zip method 93), which
    ``zipfile`` cannot write; the archive's headers are packed here as the zip format lays them out."""
    local, central = bytearray(), bytearray()
    for name, data in contents.items():
        packed = pa.compress(data, codec="zstd", asbytes=True)
        crc, encoded, at = zlib.crc32(data), name.encode(), len(local)
        local += struct.pack("<4s2B4HL2L2H", b"PK\x03\x04", 63, 0, 0, 93, 0, 0x21, crc, len(packed), len(data),
                             len(encoded), 0) + encoded + packed
        central += struct.pack("<4s4B4HL2L5H2L", b"PK\x01\x02", 63, 3, 63, 0, 0, 93, 0, 0x21, crc, len(packed),
                               len(data), len(encoded), 0, 0, 0, 0, 0o100644 << 16, at) + encoded
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, len(contents), len(contents), len(central), len(local), 0)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(bytes(local + central + end))
    return path


def sample(name: str, path: Path = EVAL) -> dict:
    return json.loads(members(path)[name])


# --- golden rows ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("table, columns, order", [
    ("responses", "* EXCLUDE (extra), json_keys(extra) AS extra_keys", ORDER),
    ("turns", "*", ORDER),
    ("evaluations", "*", ORDER + ", criterion"),
    # the transcripts of the sample that calls a tool, in the .eval and the .json log (the others' are alike)
    ("sample_events", "* EXCLUDE (extra), json_keys(extra) AS extra_keys",
     "WHERE source_locator LIKE 'samples/3_epoch_1.json%' OR source_locator LIKE '.samples[0].%' " + ORDER),
    ("eval_logs", "*", ORDER),
    ("score_reductions", "*", ORDER),
])
def test_golden_rows(ins, golden, table, columns, order):
    golden(f"inspect/{table}", ins.rows(f"SELECT {columns} FROM {table} {order}"))


def test_every_log_is_catalogued_with_its_records(ins):
    rows = ins.rows("SELECT source_path, source_format, records, records_ingested FROM sources")
    assert {r["source_format"] for r in rows} == {"inspect"}
    # .eval: 10 samples (5 x 2 epochs), 12 reduced scores (3 scorers x the 4 scored samples), the header
    # .json: 4 samples (2 x 2 epochs), 6 reduced scores, the log; a failed or interrupted run: its header alone
    assert {Path(r["source_path"]).name: (r["records"], r["records_ingested"]) for r in rows} == {
        "warehouse_fixture.eval": (23, 23), "warehouse_fixture.json": (11, 11), "failed.eval": (1, 1),
        "interrupted.eval": (1, 1)}


# --- samples: one response per sample and epoch -------------------------------------------------------------


def response(w, file: str, locator: str, columns: str = "*") -> dict:
    [r] = w.rows(f"SELECT {columns} FROM responses WHERE source_path LIKE ? AND source_locator = ?", [f"%/{file}", locator])
    return r


def test_a_sample_is_a_response_per_epoch_with_its_log_ids(ins):
    header = json.loads(members()["header.json"])
    rows = ins.rows("SELECT sample_id, epoch, task, eval_id, run_id, inference_model, record_index FROM responses "
                    "WHERE source_path LIKE '%.eval' ORDER BY record_index")
    assert [(r["sample_id"], r["epoch"]) for r in rows] == [
        ("1", 1), ("capital", 1), ("3", 1), ("4", 1), ("broken", 1), ("1", 2), ("capital", 2), ("3", 2), ("4", 2), ("broken", 2)]
    spec = header["eval"]
    assert {(r["task"], r["eval_id"], r["run_id"], r["inference_model"]) for r in rows} == {
        (spec["task"], spec["eval_id"], spec["run_id"], "mockllm/model")}
    assert [r["record_index"] for r in rows] == list(range(10))
    [log] = ins.rows("SELECT eval_id, task, model FROM eval_logs WHERE source_path LIKE '%fixture.eval'")
    assert (log["eval_id"], log["task"], log["model"]) == (spec["eval_id"], "warehouse_fixture", "mockllm/model")


def test_the_exchange_of_a_multi_turn_input_with_system_messages(ins):
    r = response(ins, EVAL.name, "samples/capital_epoch_1.json", "response_id, prompt, response, system_prompt, targets, input")
    assert (r["prompt"], r["response"], r["targets"]) == ("Answer in one word.", "Paris", ["Paris", "paris"])
    assert r["system_prompt"] == "You answer questions about geography.\nBe brief."
    assert [m["content"] for m in json.loads(r["input"])] == [
        "You answer questions about geography.", "What is the capital of France?", "Is it Paris?", "Answer in one word."]
    turns = ins.rows("SELECT role, content, source_id, model FROM turns WHERE response_id = ? ORDER BY turn_index",
                     [r["response_id"]])
    assert [(t["role"], t["content"]) for t in turns] == [
        ("system", "You answer questions about geography."), ("system", "Be brief."),
        ("user", "What is the capital of France?"), ("assistant", "Is it Paris?"), ("user", "Answer in one word."),
        ("assistant", "Paris")]
    assert [(t["source_id"], t["model"]) for t in turns[-2:]] == [("input", None), ("generate", "mockllm/model")]


def test_tool_calls_and_results(ins):
    rid = response(ins, EVAL.name, "samples/3_epoch_1.json", "response_id")["response_id"]
    turns = ins.rows("SELECT role, content, tool_calls, has_tool_calls, tool_names, tool_call_id, tool_name FROM turns "
                     "WHERE response_id = ? ORDER BY turn_index", [rid])
    written = sample("samples/3_epoch_1.json")["messages"][2]["tool_calls"][0]
    call = json.loads(turns[2]["tool_calls"])
    assert call == [{"id": written["id"], "type": "function", "function": {"name": "add", "arguments": {"x": 3, "y": 5}}}]
    assert (turns[2]["has_tool_calls"], turns[2]["tool_names"], turns[2]["content"]) == (True, ["add"], "Let me add them.")
    assert (turns[3]["role"], turns[3]["content"], turns[3]["tool_call_id"], turns[3]["tool_name"]) == (
        "tool", "8", written["id"], "add")
    assert (turns[4]["content"], turns[1]["has_tool_calls"]) == ("The sum is 8.", False)


def test_image_and_reasoning_parts(ins):
    r = response(ins, EVAL.name, "samples/4_epoch_1.json", "response_id, prompt, response, choices, extra")
    assert (r["prompt"], r["response"], r["choices"]) == ("What colour is this pixel?", "red", ["red", "green", "blue"])
    turns = ins.rows("SELECT content, content_parts, reasoning_content, has_thinking FROM turns WHERE response_id = ? "
                     "ORDER BY turn_index", [r["response_id"]])
    written = sample("samples/4_epoch_1.json")
    reference = written["messages"][1]["content"][1]["image"]
    assert reference.startswith("attachment://")  # Inspect stores the image once, in attachments
    image = written["attachments"][reference.removeprefix("attachment://")]
    assert image.startswith("data:image/png;base64,")
    assert json.loads(turns[1]["content_parts"]) == [
        {"type": "text", "text": "What colour is this pixel?"},
        {"type": "image_url", "image_url": {"url": image, "detail": "low"}}]
    assert turns[1]["content"] == "What colour is this pixel?"
    assert (turns[2]["content"], turns[2]["reasoning_content"], turns[2]["has_thinking"]) == ("red", "One pixel, all red.", True)
    assert json.loads(turns[2]["content_parts"])[0] == {"type": "reasoning", "reasoning": "One pixel, all red.", "redacted": False}
    assert json.loads(r["extra"])["attachments"] == written["attachments"]  # the transcript's references point here


def test_every_score_is_an_evaluation(ins):
    rows = ins.rows("SELECT e.criterion, e.score, e.score_scale, e.label, e.answer, e.feedback, e.value, e.metadata "
                    "FROM evaluations e JOIN responses r USING (response_id) "
                    "WHERE r.source_path LIKE '%.eval' AND r.source_locator = 'samples/capital_epoch_1.json' ORDER BY 1")
    assert [(r["criterion"], r["score"], r["score_scale"], r["label"], r["answer"]) for r in rows] == [
        ("includes", 1.0, "0-1", "C", "paris"), ("match", 1.0, "0-1", "C", "Paris"),
        ("model_graded_qa", 0.5, "0-1", "P", "Paris")]
    assert [json.loads(r["value"]) for r in rows] == ["C", "C", "P"]
    graded = rows[2]
    assert graded["feedback"] == "The submission answers the question.\nGRADE: P"
    grading = json.loads(graded["metadata"])["grading"]  # the grader's conversation
    assert [m["role"] for m in grading] == ["user", "assistant"] and "[Submission]: Paris" in grading[0]["content"]
    counts = {x["sample_id"]: x["n"] for x in ins.rows(
        "SELECT r.sample_id, count(e.criterion) AS n FROM responses r LEFT JOIN evaluations e USING (response_id) "
        "WHERE r.source_path LIKE '%.eval' AND r.epoch = 1 GROUP BY 1")}
    assert counts == {"1": 3, "capital": 3, "3": 3, "4": 3, "broken": 0}  # the failed sample was never scored


def test_a_failed_sample_keeps_its_error_and_has_no_answer(ins):
    r = response(ins, EVAL.name, "samples/broken_epoch_1.json", "prompt, response, extra")
    assert (r["prompt"], r["response"]) == ("Anything at all.", None)
    error = json.loads(r["extra"])["error"]
    assert error["message"] == "RuntimeError('the sandbox would not start')" and "Traceback" in error["traceback"]


def test_the_transcript_is_one_row_per_event(ins):
    rid = response(ins, EVAL.name, "samples/3_epoch_1.json", "response_id")["response_id"]
    events = ins.rows("SELECT event_index, event, timestamp, span_id, extra FROM sample_events WHERE response_id = ? "
                      "ORDER BY event_index", [rid])
    written = sample("samples/3_epoch_1.json")["events"]
    assert [e["event"] for e in events] == [e["event"] for e in written]
    assert [e["timestamp"] for e in events] == [e["timestamp"] for e in written]
    tool = next(e for e in events if e["event"] == "tool")
    assert json.loads(tool["extra"])["function"] == "add"


def test_the_log_header_is_one_row_not_repeated_on_its_samples(ins):
    [log] = ins.rows("SELECT * FROM eval_logs WHERE source_path LIKE '%fixture.eval'")
    header = json.loads(members()["header.json"])
    # the failed sample's two runs did not complete
    assert (log["status"], log["log_version"], log["total_samples"], log["completed_samples"]) == ("success", 2, 10, 8)
    assert (log["started_at"], log["completed_at"]) == (header["stats"]["started_at"], header["stats"]["completed_at"])
    assert json.loads(log["plan"]) == header["plan"]
    assert json.loads(log["results"])["scores"] == header["results"]["scores"]
    assert json.loads(log["spec"])["config"] == header["eval"]["config"]
    assert log["source_locator"] == "header.json" and log["eval_error"] is None
    # the samples carry the ids that join it, none of the spec's other fields
    [r] = ins.rows("SELECT extra FROM responses WHERE source_locator = 'samples/1_epoch_1.json'")
    assert not {"eval", "plan", "results", "stats"} & set(json.loads(r["extra"]))


def test_a_failed_run_without_samples_gives_its_log_row_alone(ins):
    [log] = ins.rows("SELECT eval_id, status, eval_error, task, source_locator FROM eval_logs WHERE source_path LIKE '%failed.eval'")
    assert (log["status"], log["task"], log["source_locator"]) == ("error", "failed_run", "header.json")
    assert "the sandbox would not start" in json.loads(log["eval_error"])["message"]
    assert ins.one("SELECT count(*) FROM responses WHERE eval_id = ?", [log["eval_id"]]) == 0


def test_an_interrupted_run_is_read_from_its_journal(ins):
    [log] = ins.rows("SELECT status, task, model, source_locator, plan FROM eval_logs WHERE source_path LIKE '%interrupted.eval'")
    assert (log["status"], log["task"], log["model"], log["source_locator"]) == (
        None, "interrupted_run", "mockllm/model", "_journal/start.json")
    assert json.loads(log["plan"])["steps"][0]["solver"] == "interrupted"


def test_scores_reduced_over_epochs_join_their_samples(ins):
    rows = ins.rows("SELECT s.scorer, s.reducer, s.sample_id, s.score, s.label, s.answer, s.source_locator "
                    "FROM score_reductions s JOIN eval_logs l USING (eval_id) WHERE l.source_path LIKE '%fixture.eval' "
                    "ORDER BY s.source_locator")
    written = json.loads(members()["reductions.json"])
    assert [(r["scorer"], r["sample_id"], r["score"]) for r in rows] == [
        (red["scorer"], str(s["sample_id"]), s["value"]) for red in written for s in red["samples"]]
    assert rows[0]["source_locator"] == "reductions.json[0].samples[0]"
    joined = ins.one("SELECT count(DISTINCT r.response_id) FROM score_reductions s JOIN responses r USING (eval_id, sample_id) "
                     "WHERE s.source_path LIKE '%fixture.eval'")
    assert joined == 8  # the four scored samples, two epochs each


def test_the_summaries_inspect_keeps_agree_with_the_rows(ins):
    """summaries.json is not ingested (docs/formats/inspect.md): it is Inspect's index of the samples, and
    what it says (ids, epochs, scores, the number of messages) the rows say too."""
    summaries = json.loads(members()["summaries.json"])
    rows = ins.rows(
        "SELECT r.sample_id, r.epoch, (SELECT count(*) FROM turns t WHERE t.response_id = r.response_id) AS messages, "
        "(SELECT map(list(e.criterion), list(e.value)) FROM evaluations e WHERE e.response_id = r.response_id) AS scores "
        "FROM responses r WHERE r.source_path LIKE '%.eval'")
    ours = {(r["sample_id"], r["epoch"]): (r["messages"], {k: json.loads(v) for k, v in (r["scores"] or {}).items()})
            for r in rows}
    theirs = {(str(s["id"]), s["epoch"]): (s["message_count"], {k: v["value"] for k, v in (s.get("scores") or {}).items()})
              for s in summaries}
    assert ours == theirs


def test_the_json_log_gives_the_rows_of_the_same_samples(ins):
    rows = ins.rows("SELECT source_locator, sample_id, epoch, prompt, response FROM responses "
                    "WHERE source_path LIKE '%.json' ORDER BY record_index")
    assert [(r["source_locator"], r["sample_id"], r["epoch"]) for r in rows] == [
        (".samples[0]", "1", 1), (".samples[1]", "capital", 1), (".samples[2]", "1", 2), (".samples[3]", "capital", 2)]
    assert [r["response"] for r in rows] == ["4", "Paris", "4", "Paris"]
    assert ins.one("SELECT source_locator FROM score_reductions WHERE source_path LIKE '%.json' ORDER BY 1 LIMIT 1") == \
        ".reductions[0].samples[0]"


# --- detection ----------------------------------------------------------------------------------------------


def test_every_log_is_detected_as_inspect_and_no_other_format_claims_one():
    for path in sorted(IN.iterdir()):
        if path.suffix not in Inspect.suffixes:
            continue
        head = path.read_bytes()[:65536]
        assert detect(str(path), head, INGESTORS).name == "inspect", path
        assert [i.name for i in INGESTORS if i.reads_content and i.sniff(str(path), head)] == ["inspect"], path


def _zip(path: Path, contents: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in contents.items():
            z.writestr(name, data)
    return path


@pytest.mark.parametrize("name, contents", [
    ("near.json", b'{"samples": [{"id": 1, "input": "hi", "target": "x", "messages": []}]}'),  # samples, no log around them
    ("near.json", b'{"version": 2, "status": "success", "samples": []}'),  # no eval spec
    ("near.json", b'{"version": 2, "eval": "jvk8BRGjsAJPZVdxRBs936"}'),  # an eval that is no spec
    ("near.json", b'{"status": "success", "eval": {"task": "t", "model": "m"}}'),  # not opened by the version
    ("near.json", b'[{"version": 2, "eval": {"task": "t"}}]'),
    ("near.eval", b"PK\x03\x04"),  # too short to name a member
    ("near.eval", b"not a zip at all"),
])
def test_near_misses_are_not_inspect(tmp_path, name, contents):
    path = tmp_path / name
    path.write_bytes(contents)
    assert not Inspect().sniff(str(path), contents)


def test_a_zip_of_another_tool_is_not_inspect_and_is_passed_over(tmp_path, wh):
    (tmp_path / "src").mkdir()
    other = _zip(tmp_path / "src" / "model.eval", {"data.json": b'{"samples": []}', "header.json": b"{}"})
    assert not Inspect().sniff(str(other), other.read_bytes()[:65536])
    write_eval(tmp_path / "src" / "log.eval", members())
    wh.ingest(tmp_path / "src")
    assert [Path(r["source_path"]).name for r in wh.rows("SELECT source_path FROM sources")] == ["log.eval"]
    assert wh.one("SELECT count(*) FROM quarantine") == 0
    assert wh.one("SELECT count(*) FROM responses") == 10


def test_a_log_deflated_as_older_inspect_wrote_them_is_read_alike(tmp_path, wh):
    _zip(tmp_path / "old.eval", members())
    wh.ingest(tmp_path / "old.eval")
    assert wh.one("SELECT count(*) FROM responses") == 10 and wh.one("SELECT count(*) FROM quarantine") == 0


# --- forced onto another shape, and bad input -----------------------------------------------------------------


@pytest.mark.parametrize("source, expected", [
    (FIXTURES / "afterimage" / "legacy.jsonl", "invalid JSON"),
    (FIXTURES / "scale" / "core" / "turn_full.json", "not an Inspect eval log: got an object with keys"),
])
def test_forced_onto_another_shape_it_quarantines_naming_the_shape(wh, source, expected):
    if not source.exists():
        pytest.fail(f"{source} is gone: name another file of that format")
    summary = wh.ingest(source, source_format="inspect")
    assert (summary.records_ingested, summary.records_quarantined) == (0, 1)
    [q] = wh.rows("SELECT locator, stage, error FROM quarantine")
    assert expected in q["error"] and "an Inspect eval log is a .eval zip archive" in q["error"], q
    assert "{version, status, eval:" in q["error"]


def test_forced_onto_a_zip_of_another_tool(tmp_path, wh):
    path = _zip(tmp_path / "other.eval", {"data.json": b"{}", "notes.txt": b"hi"})
    wh.ingest(path, source_format="inspect")
    [q] = wh.rows("SELECT locator, error FROM quarantine")
    assert q["error"].startswith("not an Inspect eval log: the zip archive holds no header.json, _journal/start.json "
                                 "or samples/*.json (its members: data.json, notes.txt)")


def test_a_bad_sample_is_quarantined_at_its_place_and_the_others_kept(tmp_path, wh):
    contents = members()
    bad = json.loads(contents["samples/3_epoch_1.json"])
    bad["messages"][2]["tool_calls"][0]["function"] = 1  # a number, not the tool's name
    contents["samples/3_epoch_1.json"] = json.dumps(bad).encode()
    contents["samples/4_epoch_2.json"] = b'{"id": 4, "epoch": 2, "input": '  # cut short
    path = write_eval(tmp_path / "bad.eval", contents)
    summary = wh.ingest(path)
    assert (summary.records_ingested, summary.records_quarantined) == (21, 2)
    q = wh.rows("SELECT locator, stage, error FROM quarantine ORDER BY locator")
    assert [(r["locator"], r["stage"]) for r in q] == [
        ("samples/3_epoch_1.json.messages[2].tool_calls[0].function", "map"), ("samples/4_epoch_2.json", "decode")]
    assert q[0]["error"] == "function: expected the tool's name, got number 1"
    assert wh.one("SELECT count(*) FROM responses") == 8


def test_a_damaged_member_is_quarantined_and_the_rest_read(tmp_path, wh):
    data = bytearray(EVAL.read_bytes())
    info = zipfile.ZipFile(EVAL).getinfo("samples/capital_epoch_2.json")
    name_length, extra_length = struct.unpack_from("<2H", data, info.header_offset + 26)
    data[info.header_offset + 30 + name_length + extra_length + info.compress_size // 2] ^= 0xFF
    (tmp_path / "damaged.eval").write_bytes(bytes(data))
    summary = wh.ingest(tmp_path / "damaged.eval")
    assert (summary.records_ingested, summary.records_quarantined) == (22, 1)
    [q] = wh.rows("SELECT locator, stage, error FROM quarantine")
    assert (q["locator"], q["stage"]) == ("samples/capital_epoch_2.json", "read")
    assert q["error"].startswith("the member samples/capital_epoch_2.json cannot be read: ")


def test_a_log_cut_short_is_one_quarantined_record_saying_so(tmp_path, wh):
    (tmp_path / "cut.eval").write_bytes(EVAL.read_bytes()[:20000])
    summary = wh.ingest(tmp_path / "cut.eval")
    assert (summary.records_ingested, summary.records_quarantined) == (0, 1)
    [q] = wh.rows("SELECT locator, stage, error FROM quarantine")
    assert q["stage"] == "decode" and q["error"].startswith("not a readable zip archive (")
    assert "an archive cut short" in q["error"]


def test_a_bad_sample_of_a_json_log_is_quarantined_at_its_place(tmp_path, wh):
    log = json.loads(JSON_LOG.read_text())
    log["samples"][1]["messages"][0]["role"] = None
    (tmp_path / "log.json").write_text(json.dumps(log))
    summary = wh.ingest(tmp_path / "log.json")
    assert (summary.records_ingested, summary.records_quarantined) == (10, 1)
    [q] = wh.rows("SELECT locator, error FROM quarantine")
    assert q["locator"] == ".samples[1].messages[0].role" and q["error"].startswith("role: missing")


def test_a_streamed_json_log_cut_short_keeps_what_came_before(tmp_path, wh):
    data = JSON_LOG.read_bytes()
    (tmp_path / "cut.json").write_bytes(data[: int(len(data) * 0.6)])
    summary = wh.ingest(tmp_path / "cut.json", max_record_mb=20_000 / 2**20)  # streamed: over the limit
    [q] = wh.rows("SELECT locator, stage, error FROM quarantine")
    read = wh.one("SELECT count(*) FROM responses")
    assert 0 < read < 4 and (summary.records_ingested, summary.records_quarantined) == (read + 1, 1)
    assert (q["locator"], q["stage"]) == ("", "decode")
    assert q["error"].startswith(f"the log could not be read on after .samples[{read - 1}] (")
    assert wh.one("SELECT task FROM eval_logs") == "warehouse_fixture"  # the header read before the cut


def test_a_streamed_json_log_with_samples_before_its_spec_is_refused(tmp_path, wh):
    log = json.loads(JSON_LOG.read_text())
    reordered = {"version": log["version"], "samples": log["samples"], **{k: v for k, v in log.items() if k != "samples"}}
    (tmp_path / "odd.json").write_text(json.dumps(reordered))
    wh.ingest(tmp_path / "odd.json", source_format="inspect", max_record_mb=20_000 / 2**20)
    [q] = wh.rows("SELECT error FROM quarantine")
    assert q["error"].startswith("the log could not be read on at its start (its samples before an eval spec object")
    assert wh.one("SELECT count(*) FROM responses") == 0


# --- large logs: read in bounded memory ------------------------------------------------------------------------


def test_a_log_over_the_record_limit_gives_the_same_rows(tmp_path):
    """Over --max-record-mb, a .eval is read member by member from its directory and a .json log streamed:
    the rows are the ones the whole file gives."""
    whole = warehouse.connect(ingested_cleanly_root(tmp_path / "whole", IN))
    limit = 42_000 / 2**20  # under each log's size, over its largest sample
    assert JSON_LOG.stat().st_size > 42_000 and EVAL.stat().st_size > 42_000
    assert max(len(m) for m in members().values()) < 42_000
    parts = warehouse.connect(ingested_cleanly_root(tmp_path / "parts", IN, max_record_mb=limit))
    for table in ("responses", "turns", "evaluations", "sample_events", "eval_logs", "score_reductions"):
        query = f"SELECT * FROM {table} ORDER BY ALL"
        assert whole.execute(query).fetchall() == parts.execute(query).fetchall(), table
    # a .eval read from its directory is hashed in a pass of its own: the catalog has the file's digest
    digests = dict(parts.execute("SELECT source_path, sha256 FROM sources").fetchall())
    assert digests[str(EVAL)] == hashlib.sha256(EVAL.read_bytes()).hexdigest()
    again = warehouse.ingest([str(IN)], tmp_path / "parts", progress=False, jobs=1, max_record_mb=limit)
    assert again.files_unchanged == 4


def ingested_cleanly_root(root: Path, source: Path, **options) -> Path:
    summary = warehouse.ingest([str(source)], root, progress=False, jobs=1, **options)
    assert summary.records_quarantined == 0
    return root


def big_eval(path: Path, samples: int) -> Path:
    """The fixture's log with ``samples`` samples (its own, renamed), each ~20 kB: a log of any size, made fast."""
    contents = members()
    template = json.loads(contents["samples/3_epoch_1.json"])
    out = {k: v for k, v in contents.items() if not k.startswith(("samples/", "_journal/summaries/", "summaries"))}
    for n in range(samples):
        template["id"] = n
        out[f"samples/{n}_epoch_1.json"] = json.dumps(template).encode()
    return write_eval(path, out)


def read_all(path: Path) -> tuple[int, int]:
    """(records, peak bytes of Python memory) of reading and mapping every record of ``path`` with a 64 kB
    record limit (over each sample's size), the rows dropped as they come: what the reader itself holds at once."""
    ins = Inspect()
    tracemalloc.start()
    try:
        with SourceFile(str(path), max_record_bytes=1 << 16) as src:
            assert not src.whole  # over the limit: the large file's way
            n = 0
            for record in ins.records(src):
                assert record.error is None, record.error.message
                ins.map(record, RecordContext(str(path), record.locator, record.index, "inspect"))
                n += 1
        return n, tracemalloc.get_traced_memory()[1]  # (the file's hash is a pass of its own, 1 MB at a time)
    finally:
        tracemalloc.stop()


def test_a_large_log_is_read_one_sample_at_a_time(tmp_path):
    """What reading a .eval holds does not grow with the log: four times the samples, the same peak."""
    small, small_peak = read_all(big_eval(tmp_path / "small.eval", 100))
    large, large_peak = read_all(path := big_eval(tmp_path / "large.eval", 400))
    assert (small, large) == (100 + 12 + 1, 400 + 12 + 1)
    expanded = sum(len(m) for m in members(path).values())
    assert large_peak < 1.5 * small_peak and large_peak < expanded / 3, (small_peak, large_peak, expanded)


def test_a_large_json_log_is_streamed_one_sample_at_a_time(tmp_path):
    """A .json log over the record limit is streamed: four times the samples, the same peak."""
    def log_of(n: int) -> Path:
        log = json.loads(JSON_LOG.read_text())
        log["samples"] = [dict(log["samples"][1], id=i) for i in range(n)]
        path = tmp_path / f"{n}.json"
        path.write_text(json.dumps(log))
        return path

    small, small_peak = read_all(log_of(40))
    large, large_peak = read_all(path := log_of(160))
    assert (small, large) == (40 + 6 + 1, 160 + 6 + 1)
    assert large_peak < 1.5 * small_peak and large_peak < path.stat().st_size / 2, (small_peak, large_peak)


def test_reductions_over_the_record_limit_are_streamed(tmp_path):
    contents = members()
    reductions = json.loads(contents["reductions.json"])
    for r in reductions:
        r["samples"] = [dict(s, sample_id=n) for n in range(300) for s in r["samples"][:1]]
    contents["reductions.json"] = json.dumps(reductions).encode()
    assert len(contents["reductions.json"]) > 100_000
    path = write_eval(tmp_path / "src" / "log.eval", contents)
    whole = ingested_cleanly_root(tmp_path / "whole", path.parent)
    parts = ingested_cleanly_root(tmp_path / "parts", path.parent, max_record_mb=50_000 / 2**20)
    query = "SELECT * FROM score_reductions ORDER BY ALL"
    rows = warehouse.connect(parts).execute(query).fetchall()
    assert len(rows) == 900 and rows == warehouse.connect(whole).execute(query).fetchall()


# --- exports ------------------------------------------------------------------------------------------------


def test_openai_chat_export_writes_each_sample_as_a_conversation(ins, tmp_path):
    out = tmp_path / "chat.jsonl"
    warehouse.export(ins.root, "source_format = 'inspect' AND response IS NOT NULL", "openai_chat", out, progress=False)
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(lines) == 12  # 14 samples, less the two runs of the one that failed
    for line in lines:
        check_line(line)
    by_question = {_question(line["messages"]): line["messages"] for line in lines}
    tool = by_question["Add 3 and 5 with the tool."]
    assert [m["role"] for m in tool] == ["system", "user", "assistant", "tool", "assistant"]
    assert tool[2]["tool_calls"][0]["function"] == {"name": "add", "arguments": '{"x": 3, "y": 5}'}
    assert tool[3]["tool_call_id"] == tool[2]["tool_calls"][0]["id"] and tool[3]["content"] == "8"
    image = by_question["What colour is this pixel?"]
    assert image[1]["content"][1]["image_url"] == {"url": _attachment_image(), "detail": "low"}
    assert image[-1] == {"role": "assistant", "content": "red"}  # its reasoning part has no place in the shape
    capital = by_question["What is the capital of France?"]
    assert [m["content"] for m in capital] == [
        "You answer questions about geography.", "Be brief.", "What is the capital of France?", "Is it Paris?",
        "Answer in one word.", "Paris"]


def _question(messages: list[dict]) -> str:
    content = next(m["content"] for m in messages if m["role"] == "user")
    return content if isinstance(content, str) else content[0]["text"]


def _attachment_image() -> str:
    written = sample("samples/4_epoch_1.json")
    return written["attachments"][written["messages"][1]["content"][1]["image"].removeprefix("attachment://")]


@pytest.mark.parametrize("fmt, out", [("jsonl", "rows.jsonl"), ("parquet", "rows")])
def test_generic_exports_carry_its_rows_and_children(ins, tmp_path, fmt, out):
    target = tmp_path / out
    summary = warehouse.export(ins.root, "source_format = 'inspect'", fmt, target, progress=False)
    if fmt == "jsonl":  # the core's child tables nested; the others are the parquet export's, a note says so
        rows = [json.loads(x) for x in target.read_text().splitlines()]
        assert len(rows) == 14
        tool = next(r for r in rows if r["source_locator"] == "samples/3_epoch_1.json")
        assert len(tool["turns"]) == 5 and len(tool["evaluations"]) == 3
        assert tool["turns"][2]["tool_calls"][0]["function"]["name"] == "add"
        assert any("sample events: not exported" in note for note in summary.notes), summary.notes
    else:
        import pyarrow.parquet as pq

        assert pq.read_table(target / "responses.parquet").num_rows == 14
        assert pq.read_table(target / "sample_events.parquet").num_rows == ins.one("SELECT count(*) FROM sample_events")


def test_the_cli_names_the_format():
    out = subprocess.run([sys.executable, "-m", "warehouse.cli", "ingest", "--help"], capture_output=True, text=True,
                         check=True).stdout
    assert "inspect" in " ".join(out.split())
