"""The conversation of a response, in every export that writes conversations (docs/export.md#conversations).

openai_chat, and the Scale, AfterImage and Dataloop exports of other formats' rows,
all build a response's conversation with ``warehouse.exports.conversation``: the
whole conversation up to and including the response's own final message, in source
order, with tool calls and content parts in OpenAI's shape.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import warehouse
from warehouse.exports.conversation import text_of

from ..conftest import FIXTURES, Warehouse, export_out, write_json, write_text
from ..openai_chat import check_line

MULTI_TURN = {"conversations": [{"role": "user", "content": "Q1"}, {"role": "assistant", "content": "A1"},
                                {"role": "user", "content": "Q2"}, {"role": "assistant", "content": "A2"}], "metadata": {}}

TOOL_TRACE = {"shebang": "dataloop", "metadata": {"dltype": "llm_trace"}, "messages": [
    {"role": "user", "content": "Has order 7 shipped?"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "order_status", "arguments": "{\"order\": 7}"}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "{\"status\": \"shipped\"}"},
    {"role": "assistant", "content": "It shipped."}]}

IMAGE = "https://gate.dataloop.ai/api/v1/items/66f0e00000000000000000aa/stream"


def chat(w: Warehouse, out: Path, where: str | None = None) -> list[list[dict]]:
    warehouse.export(w.root, where, "openai_chat", out, progress=False)
    lines = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    for line in lines:
        check_line(line)
    return [line["messages"] for line in lines]


def roles(messages: list[dict]) -> list[str]:
    return [m["role"] for m in messages]


# --- 13.2: a multi-turn conversation keeps every message ------------------------------------------------------


def test_a_multi_turn_afterimage_conversation_keeps_every_message(wh, tmp_path):
    write_text(tmp_path / "in" / "rows.jsonl", json.dumps(MULTI_TURN) + "\n")
    wh.ingest(tmp_path / "in")
    assert chat(wh, tmp_path / "o.jsonl") == [[
        {"role": "user", "content": "Q1"}, {"role": "assistant", "content": "A1"},
        {"role": "user", "content": "Q2"}, {"role": "assistant", "content": "A2"}]]


def test_the_scale_export_of_a_multi_turn_row_keeps_every_message(wh, tmp_path):
    write_text(tmp_path / "in" / "rows.jsonl", json.dumps(MULTI_TURN) + "\n")
    wh.ingest(tmp_path / "in")
    warehouse.export(wh.root, None, "scale", tmp_path / "o.json", progress=False)
    [turn] = json.loads((tmp_path / "o.json").read_text())
    assert [(m["role"], m["content"]["text"]) for m in turn["messages"]] == [
        ("user", "Q1"), ("assistant", "A1"), ("user", "Q2"), ("assistant", "A2")]


def test_the_dataloop_export_of_a_multi_turn_row_puts_the_answer_after_the_last_question(wh, tmp_path):
    write_text(tmp_path / "in" / "rows.jsonl", json.dumps(MULTI_TURN) + "\n")
    wh.ingest(tmp_path / "in")
    warehouse.export(wh.root, None, "dataloop", tmp_path / "dl", progress=False)
    [item] = (tmp_path / "dl" / "items").rglob("*.json")
    prompts = json.loads(item.read_text())["prompts"]
    assert {k: [(e["mimetype"], e["value"]) for e in v] for k, v in prompts.items()} == {
        "1": [("application/text", "Q1"), ("metadata", {"role": "user"})],
        "2": [("application/text", "A1"), ("metadata", {"role": "assistant"})],
        "3": [("application/text", "Q2"), ("metadata", {"role": "user"})]}
    [answer] = json.loads((tmp_path / "dl" / "json" / item.relative_to(tmp_path / "dl" / "items")).read_text())["annotations"]
    assert (answer["coordinates"], answer["metadata"]["system"]["promptId"]) == ("A2", "3")
    back = Warehouse(tmp_path / "back")
    back.ingest(tmp_path / "dl")  # and it reads back as the same conversation
    assert chat(back, tmp_path / "back.jsonl") == chat(wh, tmp_path / "o.jsonl")


def test_the_afterimage_export_of_a_scale_turn_keeps_its_earlier_exchange(wh, tmp_path):
    turn = {"id": "t", "messages": [
        {"role": "user", "content": {"text": "Q1"}, "source_id": "user"},
        {"role": "assistant", "content": {"text": "A1"}, "source_id": "m"},
        {"role": "user", "content": {"text": "Q2"}, "source_id": "user"},
        {"role": "assistant", "content": {"text": "A2"}, "source_id": "m"}]}
    write_json(tmp_path / "in" / "turn.json", turn)
    wh.ingest(tmp_path / "in")
    warehouse.export(wh.root, None, "afterimage", tmp_path / "o.jsonl", progress=False)
    rows = [json.loads(x) for x in (tmp_path / "o.jsonl").read_text().splitlines()]
    assert [[(m["role"], m["content"]) for m in r["conversations"]] for r in rows] == [
        [("user", "Q1"), ("assistant", "A1")],
        [("user", "Q1"), ("assistant", "A1"), ("user", "Q2"), ("assistant", "A2")]]


def test_alternatives_to_the_same_prompt_are_left_out_and_earlier_ones_by_the_same_model_kept(wh, tmp_path):
    def message(role, text, model=None):
        m = {"role": role, "content": {"text": text}, "source_id": model or role}
        if model:
            m["model_parameters"] = {"model": model}
        return m

    turn = {"id": "t", "messages": [
        message("system", "Be brief."), message("user", "Q1"),
        message("assistant", "A1 by x", "x"), message("assistant", "A1 by y", "y"),
        message("user", "Q2"), message("assistant", "A2 by x", "x"), message("assistant", "A2 by y", "y")]}
    write_json(tmp_path / "in" / "turn.json", turn)
    wh.ingest(tmp_path / "in")
    texts = [[m["content"] for m in c] for c in chat(wh, tmp_path / "o.jsonl")]
    assert texts == [
        ["Be brief.", "Q1", "A1 by x"],
        ["Be brief.", "Q1", "A1 by y"],
        ["Be brief.", "Q1", "A1 by x", "Q2", "A2 by x"],
        ["Be brief.", "Q1", "A1 by y", "Q2", "A2 by y"]]


# --- 13.3: tool calls -------------------------------------------------------------------------------------------


def test_tool_calls_stay_on_the_assistant_message_in_source_order(wh, tmp_path):
    write_json(tmp_path / "in" / "trace.json", TOOL_TRACE)
    wh.ingest(tmp_path / "in")
    assert chat(wh, tmp_path / "o.jsonl") == [[
        {"role": "user", "content": "Has order 7 shipped?"},
        {"role": "assistant", "content": None, "tool_calls": TOOL_TRACE["messages"][1]["tool_calls"]},
        {"role": "tool", "content": "{\"status\": \"shipped\"}", "tool_call_id": "call_1"},
        {"role": "assistant", "content": "It shipped."}]]


def test_tool_calls_are_written_in_openais_shape(wh, tmp_path):
    """A call written with more keys, or with its arguments as an object, comes out as OpenAI takes it."""
    loose = json.loads(json.dumps(TOOL_TRACE))
    loose["messages"][1]["tool_calls"] = [{"index": 0, "id": "call_1", "function": {"name": "order_status", "arguments": {"order": 7}}}]
    write_json(tmp_path / "in" / "trace.json", loose)
    wh.ingest(tmp_path / "in")
    [messages] = chat(wh, tmp_path / "o.jsonl")
    assert messages[1]["tool_calls"] == [
        {"id": "call_1", "type": "function", "function": {"name": "order_status", "arguments": "{\"order\": 7}"}}]


def test_a_tool_message_answering_no_call_is_left_out_and_counted(wh, tmp_path):
    orphan = dict(TOOL_TRACE, messages=[TOOL_TRACE["messages"][0], TOOL_TRACE["messages"][2], TOOL_TRACE["messages"][3]])
    write_json(tmp_path / "in" / "trace.json", orphan)
    wh.ingest(tmp_path / "in")
    s = warehouse.export(wh.root, None, "openai_chat", tmp_path / "o.jsonl", progress=False)
    assert s.notes == ["tool message answering no earlier tool call: 1 left out "
                       "(OpenAI's chat format cannot hold it: docs/export.md#conversations)"]
    assert roles(json.loads((tmp_path / "o.jsonl").read_text())["messages"]) == ["user", "assistant"]


# --- 13.4: Dataloop prompts: parts, order, each answer after its prompt -------------------------------------------


def dataloop_item(root: Path, name: str, prompts: dict, answers: list[tuple[str, str]]) -> None:
    """A dataset download's pair: items/<name> (the prompt file) and json/<name> (the item with its answers)."""
    write_json(root / "items" / name, {"shebang": "dataloop", "metadata": {"dltype": "prompt"}, "prompts": prompts})
    annotations = [{"id": f"a{i}", "type": "text", "label": "free-text", "coordinates": text,
                    "metadata": {"system": {"promptId": key}, "user": {}}}
                   for i, (key, text) in enumerate(answers)]
    write_json(root / "json" / name, {"id": name, "filename": f"/{name}", "name": name, "metadata": {
        "system": {"shebang": {"dltype": "prompt"}}}, "annotations": annotations})


TEXT_THEN_IMAGE = {"1": [{"mimetype": "application/text", "value": "Q1"}],
                   "2": [{"mimetype": "image/*", "value": IMAGE}, {"mimetype": "application/text", "value": "Q2 about the image"}]}


def test_an_answer_comes_right_after_the_prompt_it_answers(wh, tmp_path):
    dataloop_item(tmp_path / "ds", "a.json", TEXT_THEN_IMAGE, [("1", "A1")])
    wh.ingest(tmp_path / "ds")
    assert chat(wh, tmp_path / "o.jsonl") == [[{"role": "user", "content": "Q1"}, {"role": "assistant", "content": "A1"}]]


def test_prompts_come_in_order_with_their_image_parts_and_earlier_answers(wh, tmp_path):
    dataloop_item(tmp_path / "ds", "a.json", TEXT_THEN_IMAGE, [("1", "A1"), ("2", "A2")])
    wh.ingest(tmp_path / "ds")
    assert chat(wh, tmp_path / "o.jsonl") == [
        [{"role": "user", "content": "Q1"}, {"role": "assistant", "content": "A1"}],
        [{"role": "user", "content": "Q1"}, {"role": "assistant", "content": "A1"},
         {"role": "user", "content": [{"type": "image_url", "image_url": {"url": IMAGE}},
                                      {"type": "text", "text": "Q2 about the image"}]},
         {"role": "assistant", "content": "A2"}]]


def test_an_image_only_prompt_is_a_user_message_with_an_image_part(wh, tmp_path):
    prompts = {"1": [{"mimetype": "image/*", "value": IMAGE}, {"mimetype": "metadata", "value": {"role": "user"}}]}
    dataloop_item(tmp_path / "ds", "a.json", prompts, [("1", "A photo of a skirt.")])
    wh.ingest(tmp_path / "ds")
    assert chat(wh, tmp_path / "o.jsonl") == [[
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": IMAGE}}]},
        {"role": "assistant", "content": "A photo of a skirt."}]]


def test_what_a_conversation_cannot_hold_is_counted_only_when_it_is_in_the_conversation(wh, tmp_path):
    prompts = {"1": [{"mimetype": "application/text", "value": "Q1"}],
               "2": [{"mimetype": "audio/*", "value": IMAGE}, {"mimetype": "application/text", "value": "Q2"}]}
    dataloop_item(tmp_path / "ds" / "a", "a.json", prompts, [("1", "A1")])
    wh.ingest(tmp_path / "ds")
    def left_out(notes):  # the notes about conversations (others say which tables have no place)
        return [n for n in notes if "left out" in n]

    assert left_out(warehouse.export(wh.root, None, "openai_chat", tmp_path / "o.jsonl", progress=False).notes) == []
    dataloop_item(tmp_path / "ds" / "b", "b.json", prompts, [("2", "A2")])
    wh.ingest(tmp_path / "ds")
    s = warehouse.export(wh.root, None, "openai_chat", tmp_path / "o.jsonl", progress=False)
    assert left_out(s.notes) == ["audio/* part (OpenAI's chat messages take text and images): 1 left out "
                       "(OpenAI's chat format cannot hold it: docs/export.md#conversations)"]
    assert [json.loads(x)["messages"][-2] for x in (tmp_path / "o.jsonl").read_text().splitlines()][1] == {
        "role": "user", "content": "Q2"}


def test_trace_content_parts_come_out_as_parts(wh, tmp_path):
    parts = [{"type": "text", "text": "What is this?"}, {"type": "image_url", "image_url": {"url": IMAGE}}]
    trace = {"shebang": "dataloop", "metadata": {"dltype": "llm_trace"}, "messages": [
        {"role": "user", "content": parts}, {"role": "assistant", "content": "A chart."}]}
    write_json(tmp_path / "in" / "trace.json", trace)
    wh.ingest(tmp_path / "in")
    assert chat(wh, tmp_path / "o.jsonl") == [[{"role": "user", "content": parts}, {"role": "assistant", "content": "A chart."}]]


# --- every export of the fixtures and samples: valid, and true to the source ------------------------------------


@pytest.fixture(scope="module")
def fixtures_wh(tmp_path_factory):
    w = Warehouse(tmp_path_factory.mktemp("conversations") / "wh")
    w.ingest(FIXTURES)
    return w


def source_messages(w: Warehouse) -> dict[str, list[str]]:
    """Per record: the roles of its messages in source order (a message's parts are one message; Dataloop
    answers right after their prompt), without tool messages that answer no earlier call."""
    out: dict[str, list[tuple[str, str | None, list]]] = {}
    for t in w.rows("SELECT DISTINCT record_id, turn_index, role, tool_call_id, tool_calls FROM turns ORDER BY record_id, turn_index"):
        out.setdefault(t["record_id"], []).append((t["role"], t["tool_call_id"], json.loads(t["tool_calls"] or "[]"), t["turn_index"]))
    answers = w.rows("SELECT record_id, answers_turn FROM responses WHERE answers_turn IS NOT NULL ORDER BY candidate_index")
    seq: dict[str, list[str]] = {}
    for record, messages in out.items():
        calls: set = set()
        roles_ = []
        for role, call_id, tool_calls, index in messages:
            calls.update(c.get("id") for c in tool_calls)
            if role not in ("tool", "function") or call_id in calls:
                roles_.append({"function": "tool"}.get(role, role))
            roles_ += ["assistant" for a in answers if a["record_id"] == record and a["answers_turn"] == index]
        seq[record] = roles_
    return seq


def adjacent_pairs(roles_: list[str]) -> set[str]:
    return {a for a, b in zip(roles_, roles_[1:]) if a == b}


@pytest.mark.parametrize("which", ["fixtures", "samples"])
def test_every_conversation_is_valid_whole_and_ends_in_its_answer(which, fixtures_wh, samples_wh, tmp_path):
    w = fixtures_wh if which == "fixtures" else samples_wh
    convs = chat(w, tmp_path / "o.jsonl")  # chat() checks every line against OpenAI's format
    answered = w.rows("SELECT response_id, record_id, response FROM responses WHERE response <> '' "
                      "ORDER BY source_path, source_locator")
    assert len(convs) == len(answered)
    sources = source_messages(w)
    for messages, r in zip(convs, answered):
        assert messages[-1]["role"] == "assistant" and text_of(messages[-1]) == r["response"], messages
        # no two consecutive messages of one role unless the source had them
        assert adjacent_pairs(roles(messages)) <= adjacent_pairs(sources.get(r["record_id"], [])), (messages, r)
    multi = [c for c in convs if roles(c).count("user") > 1]
    assert multi and all(roles(c).count("assistant") > 1 for c in multi)  # earlier exchanges are kept whole


@pytest.mark.parametrize("fmt", ["scale", "afterimage"])
def test_the_other_formats_exports_write_the_same_conversations(fmt, samples_wh, tmp_path):
    """The Scale and AfterImage exports of other formats' rows hold the conversation openai_chat writes (as text)."""
    where = f"source_format <> '{fmt}'"
    convs = chat(samples_wh, tmp_path / "o.jsonl", where)
    expected = [[(m["role"], text_of(m)) for m in c if m["role"] in ("user", "assistant") and text_of(m) is not None]
                for c in convs]
    out = export_out(tmp_path / "x", fmt)
    warehouse.export(samples_wh.root, where + " AND response <> ''", fmt, out, progress=False)
    if fmt == "scale":
        got = [[(m["role"], m["content"]["text"]) for m in t["messages"] if m["role"] in ("user", "assistant")]
               for t in json.loads(out.read_text())]
    else:
        got = [[(m["role"], m["content"]) for m in r["conversations"]]
               for r in map(json.loads, out.read_text().splitlines())]
    assert sorted(got) == sorted(expected)
