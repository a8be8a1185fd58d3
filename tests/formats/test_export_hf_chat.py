"""``export --format hf_chat``: hf_chat rows back in the shape they came in (a round trip gives the same rows),
other formats' responses as ``messages`` and preference pairs; a folder ``datasets.load_dataset`` reads."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pyarrow.parquet as pq
import pytest

import warehouse

from ..conftest import FIXTURES, Warehouse

LOAD = """
import json, sys
import datasets

out, names = sys.argv[1], sys.argv[2:]
got = {}
for name in [None, *names]:
    split = datasets.load_dataset(out, name)["train"]
    got[str(name)] = {"columns": split.column_names, "rows": split.to_list()}
print(json.dumps(got))
"""

#: what identifies a row and where it was read: a round trip writes other files, so these differ
PLACE = ("response_id", "record_id", "source_path", "source_locator", "record_index", "answers_turn")
#: every row of the tables hf_chat fills, by the response it belongs to (shared rows by their record)
RECORDS = {
    "responses": "SELECT r.* FROM responses AS r",
    "turns": "SELECT t.*, (SELECT list(x.response ORDER BY x.candidate_index) FROM responses AS x "
             "WHERE x.record_id = t.record_id) AS record_answers FROM turns AS t",
    "evaluations": "SELECT e.*, r.response AS answer FROM evaluations AS e JOIN responses AS r USING (response_id)",
}


@pytest.fixture(scope="module")
def chats(tmp_path_factory):
    w = Warehouse(tmp_path_factory.mktemp("chats") / "wh")
    w.ingest(FIXTURES / "hf_chat")
    return w


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    """The hf_chat fixtures (preference rows among them) and AfterImage's (graded answers)."""
    w = Warehouse(tmp_path_factory.mktemp("mixed") / "wh")
    w.ingest(FIXTURES / "hf_chat", FIXTURES / "afterimage")
    return w


def records(w: Warehouse) -> dict[str, list[str]]:
    """Each table's rows without their places, sorted: what a round trip must give again."""
    out = {}
    for table, sql in RECORDS.items():
        rows = w.rows(sql)
        out[table] = sorted(json.dumps({k: v for k, v in row.items() if k not in PLACE}, sort_keys=True, default=str)
                            for row in rows)
    return out


def load(out, *configs) -> dict:
    # offline: nothing may try the network (an unreachable endpoint fails at once if something does)
    env = {**os.environ, "HF_HOME": str(out.parent / "hf"), "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1",
           "HF_ENDPOINT": "http://127.0.0.1:9"}
    proc = subprocess.run([sys.executable, "-c", LOAD, str(out), *configs], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.splitlines()[-1])


def test_a_round_trip_of_every_fixture_shape_gives_the_same_rows(chats, tmp_path):
    out = tmp_path / "chat"
    summary = warehouse.export(chats.root, None, "hf_chat", out, progress=False)
    assert summary.written == chats.one("SELECT count(*) FROM responses") and summary.notes == []
    back = Warehouse(tmp_path / "back")
    assert back.ingest(out).records_quarantined == 0
    shapes = chats.one("SELECT list(DISTINCT chat_shape ORDER BY chat_shape) FROM responses")
    assert shapes == ["messages", "preference", "prompt", "prompt_completion", "sharegpt"]
    assert records(back) == records(chats)
    # each source file back in the kind it was: Parquet stays Parquet, a JSON array becomes JSON Lines
    files = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert files == ["README.md", *(f"sources/{name}.parquet" for name in (
        "messages", "multimodal", "parquet/chat", "parquet/implicit_preference", "plain", "plain_preference", "preference",
        "prompt_completion", "prompt_only", "sharegpt"))]
    # the rows themselves, as the sources hold them
    lines = lambda name: [json.loads(x) for x in (FIXTURES / "hf_chat" / name).read_text().splitlines()]  # noqa: E731
    rows = lambda name: pq.read_table(out / "sources" / name).to_pylist()  # noqa: E731
    for name in ("preference", "plain", "sharegpt", "messages", "multimodal"):
        assert rows(f"{name}.parquet") == lines(f"{name}.jsonl")
    assert rows("prompt_completion.parquet") == json.loads((FIXTURES / "hf_chat/prompt_completion.json").read_text())
    for name in ("chat", "implicit_preference"):
        assert rows(f"parquet/{name}.parquet") == pq.read_table(FIXTURES / f"hf_chat/parquet/{name}.parquet").to_pylist()


def test_a_preference_row_with_one_answer_selected_is_its_prompt_and_completion(chats, tmp_path):
    out = tmp_path / "chosen"
    summary = warehouse.export(chats.root, "candidate_index = 0 AND chat_shape = 'preference'", "hf_chat", out,
                               progress=False)
    assert "5 preference rows have one of their two answers selected" in " ".join(summary.notes)
    rows = pq.read_table(out / "sources/preference.parquet").to_pylist()
    assert rows[0] == {"prompt": [{"role": "user", "content": "Is a tomato a fruit?"}],
                       "completion": [{"role": "assistant", "content": "Botanically yes; in cooking it is used as a vegetable."}]}
    back = Warehouse(tmp_path / "back")
    assert back.ingest(out).records_quarantined == 0
    assert sorted(back.one("SELECT list(response) FROM responses")) == sorted(
        chats.one("SELECT list(response) FROM responses WHERE candidate_index = 0 AND chat_shape = 'preference'"))


def test_the_export_loads_with_datasets_as_the_source_shapes_messages_and_preference_pairs(mixed, tmp_path):
    out = tmp_path / "chat"
    summary = warehouse.export(mixed.root, None, "hf_chat", out, progress=False)
    got = load(out, "messages", "preference", "sources--preference", "sources--parquet--chat")
    assert got["None"] == got["messages"] and got["messages"]["columns"] == ["messages"]
    assert got["preference"]["columns"] == ["prompt", "chosen", "rejected"]
    assert got["sources--preference"]["columns"] == ["prompt", "chosen", "rejected", "score_chosen", "score_rejected"]
    tomato = got["sources--preference"]["rows"][0]
    assert tomato["prompt"] == [{"role": "user", "content": "Is a tomato a fruit?"}]
    assert tomato["rejected"] == [{"role": "assistant", "content": "No."}]
    assert got["sources--parquet--chat"]["columns"] == ["messages", "id", "source"]
    # every answered response of another format, its conversation as openai_chat writes it
    warehouse.export(mixed.root, "source_format <> 'hf_chat'", "openai_chat", tmp_path / "chat.jsonl", progress=False)
    chats = [json.loads(x)["messages"] for x in (tmp_path / "chat.jsonl").read_text().splitlines()]
    rows = [row["messages"] for row in got["messages"]["rows"]]
    answered = "source_format <> 'hf_chat' AND coalesce(response, '') <> ''"
    assert len(rows) == len(chats) == mixed.one(f"SELECT count(*) FROM responses WHERE {answered}")
    assert [[(m["role"], m["content"]) for m in r] for r in rows] == [[(m["role"], m["content"]) for m in c] for c in chats]
    assert summary.written == mixed.one(f"SELECT count(*) FROM responses WHERE source_format = 'hf_chat' OR ({answered})")
    # the pairs of other formats' answers (AfterImage's differently graded ones); a preference row's is in its row
    pairs = got["preference"]["rows"]
    assert len(pairs) == mixed.one("SELECT count(*) FROM dpo_pairs WHERE paired_by <> 'preference'") > 0
    compost = next(p for p in pairs if p["prompt"][-1]["content"] == "How often should I turn a compost pile?")
    assert compost["rejected"][0]["content"] == "Whenever you remember, it does not matter much."


def test_without_tool_calls_a_message_is_role_and_content(mixed, tmp_path):
    out = tmp_path / "plain"
    warehouse.export(mixed.root, "source_format = 'afterimage'", "hf_chat", out, progress=False)
    assert str(pq.read_schema(out / "messages.parquet").field("messages").type) == (
        "list<element: struct<role: string, content: string>>")
    back = Warehouse(tmp_path / "back")
    assert back.ingest(out).records_quarantined == 0
    assert back.one("SELECT count(*) FROM responses WHERE chat_shape = 'messages'") == mixed.one(
        "SELECT count(*) FROM responses WHERE source_format = 'afterimage' AND coalesce(response, '') <> ''")


def test_a_source_whose_rows_have_no_one_arrow_type_comes_back_as_json_lines(tmp_path):
    """A message's content is text in one row and a list of parts in another: no Parquet column holds both."""
    source = tmp_path / "src" / "mixed.jsonl"
    source.parent.mkdir()
    rows = [{"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello."}]},
            {"messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}]},
                          {"role": "assistant", "content": "Hello again."}], "weight": 0.5}]
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    w = Warehouse(tmp_path / "wh")
    w.ingest(source.parent)
    out = tmp_path / "chat"
    summary = warehouse.export(w.root, None, "hf_chat", out, progress=False)
    assert "1 source files have rows of no one Arrow type" in " ".join(summary.notes)
    assert [json.loads(x) for x in (out / "jsonl/mixed.jsonl").read_text().splitlines()] == rows
    assert "config_name" not in (out / "README.md").read_text()
    back = Warehouse(tmp_path / "back")
    assert back.ingest(out).records_quarantined == 0
    assert records(back) == records(w)
