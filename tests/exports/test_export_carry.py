"""What an export carries, and what it says it could not: nothing is left out silently."""

from __future__ import annotations

import json

import pytest

import warehouse

from ..conftest import Warehouse

INFERENCE = "experiments/e/inference/instruct/responses"


def _write(path, value):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value))


@pytest.fixture
def tree(tmp_path):
    """Two answered prompts of a three-prompt set, an unused set, annotation files about answered,
    missing and no responses, and generation parameters of a folder with no responses."""
    root = tmp_path / "src"
    for pid in ("1", "2"):
        _write(root / INFERENCE / "general/base" / f"{pid}.json", {"prompt": f"q{pid}", "response": f"answer {pid}"})
    _write(root / INFERENCE / "general/base_annotations.json",
           {"annotations": [{"idx": 1, "spans": [{"span": "answer"}]}, {"idx": 9, "spans": [{"span": "gone"}]}]})
    _write(root / INFERENCE / "general/gone_annotations.json", {"annotations": [{"idx": 1, "spans": [{"span": "x"}]}]})
    _write(root / "experiments/e/inference/other/responses/metadata.json", {"model": "m", "temperature": 0.0})
    _write(root / "datasets/inference/general/base.json",
           {"name": "base", "prompts": [{"id": i, "text": f"q{i}"} for i in (1, 2, 3)]})
    _write(root / "datasets/inference/unused.json", {"name": "unused", "prompts": [{"id": 1, "text": "u"}, {"id": 2, "text": "v"}]})
    return root


def test_trait_interp_says_what_no_exported_response_has(tree, tmp_path):
    a = Warehouse(tmp_path / "a")
    a.ingest(tree)
    s = warehouse.export(a.root, "true", "trait_interp", tmp_path / "out", progress=False)
    assert (s.selected, s.written) == (2, 2)
    assert s.notes == [
        "2 prompts of 1 prompt set files no exported response uses were not exported",
        "2 annotations are about no exported response and were not exported (2 whose response is not in the "
        "warehouse); 1 annotation files had nothing else and were not written",
        "1 generation metadata files of folders with no exported response were not exported",
    ]
    # the prompt sets and annotation files of the exported responses come along: the set whole
    b = Warehouse(tmp_path / "b")
    b.ingest(tmp_path / "out")
    assert b.rows("SELECT prompt_id FROM prompts ORDER BY prompt_id") == [{"prompt_id": p} for p in ("1", "2", "3")]
    assert b.rows("SELECT span FROM annotations") == [{"span": "answer"}]
    assert b.one("SELECT count(*) FROM responses") == 2


def test_a_narrow_selection_takes_its_whole_prompt_set_along(tree, tmp_path):
    a = Warehouse(tmp_path / "a")
    a.ingest(tree)
    s = warehouse.export(a.root, "prompt_id = '2'", "trait_interp", tmp_path / "out", progress=False)
    assert s.written == 1
    assert "1 annotations are about no exported response and were not exported (1 whose response is not in the " \
           "warehouse, 1 about responses not exported)" not in s.notes  # counted as what they are:
    assert any(n.startswith("3 annotations are about no exported response") and "1 about responses not exported" in n
               for n in s.notes)
    b = Warehouse(tmp_path / "b")
    b.ingest(tmp_path / "out")
    assert b.one("SELECT count(*) FROM prompts") == 3


def belonging(w: Warehouse, table: str, other_than: str) -> int:
    """Rows of ``table`` that belong to the responses of other formats (their own, or their record's)."""
    cols = {r["column_name"] for r in w.rows(f"DESCRIBE {table}")}
    mine = f"SELECT response_id, record_id FROM responses WHERE source_format <> '{other_than}'"
    own = f"response_id IN (SELECT response_id FROM ({mine}))" if "response_id" in cols else "false"
    whole = f"record_id IN (SELECT record_id FROM ({mine}))" if "record_id" in cols else "false"
    if "response_id" in cols and "record_id" in cols:
        whole = f"response_id IS NULL AND {whole}"
    return w.one(f"SELECT count(*) FROM {table} WHERE {own} OR ({whole})")


@pytest.mark.parametrize("fmt, out, tables", [
    ("trait_interp", "out", ["turns", "sentence_boundaries", "annotations", "evaluations"]),
    ("afterimage", "out.jsonl", ["sentence_boundaries", "annotations", "evaluations", "attachments", "chunks", "reference_texts"]),
    ("scale", "out.json", ["sentence_boundaries", "annotations", "evaluations"]),
    ("dataloop", "out", ["turns", "sentence_boundaries", "annotations", "evaluations", "attachments", "reference_texts"]),
])
def test_every_source_format_counts_what_it_cannot_carry_of_other_formats(samples_wh, tmp_path, fmt, out, tables):
    s = warehouse.export(samples_wh.root, None, fmt, tmp_path / out, progress=False)
    one = {"sentence_boundaries": "sentence boundary", "reference_texts": "reference text", "attachments": "attachment",
           "chunks": "chunk", "turns": "turn", "annotations": "annotation", "evaluations": "evaluation"}
    text = "\n".join(s.notes)
    counted = 0
    for table in tables:
        n = belonging(samples_wh, table, fmt)
        if n:
            assert f"{n:,} {table.replace('_', ' ') if n != 1 else one[table]}" in text, (table, n, text)
            counted += 1
    assert counted >= 2


@pytest.mark.parametrize("fmt, out", [("csv", "o.csv"), ("jsonl", "o.jsonl"), ("openai_chat", "o.jsonl")])
def test_generic_formats_count_the_tables_they_have_no_place_for(samples_wh, tmp_path, fmt, out):
    s = warehouse.export(samples_wh.root, None, fmt, tmp_path / out, progress=False)
    attachments = samples_wh.one("SELECT count(*) FROM attachments")
    assert any(n.startswith(f"{fmt} has no place for the selected responses'") and f"{attachments} attachments" in n
               for n in s.notes), s.notes


def test_parquet_carries_every_table_of_the_selection(samples_wh, tmp_path):
    import pyarrow.parquet as pq

    warehouse.export(samples_wh.root, "source_format = 'scale'", "parquet", tmp_path / "out", progress=False)
    for table in ("attachments", "reference_texts"):
        assert pq.read_table(tmp_path / "out" / f"{table}.parquet").num_rows == samples_wh.one(f"SELECT count(*) FROM {table}") > 0


def test_two_trees_defining_one_prompt_set_do_not_duplicate_responses(tmp_path):
    """Two project trees in one warehouse define the prompt set s, differently: each response gets one
    raw prompt, its own tree's (it used to get both, and be written twice)."""
    for tree in ("A", "B"):
        _write(tmp_path / tree / "datasets/inference/s.json", {"prompts": [{"id": 1, "text": f"{tree}-question"}]})
        _write(tmp_path / tree / f"experiments/{tree}/inference/instruct/responses/s/1.json",
               {"prompt": f"<user>{tree}-question</user>", "response": f"{tree}-answer"})
    w = Warehouse(tmp_path / "wh")
    w.ingest(tmp_path / "A", tmp_path / "B")
    for fmt, out in (("afterimage", "o.jsonl"), ("openai_chat", "c.jsonl"), ("scale", "s.jsonl")):
        s = warehouse.export(w.root, None, fmt, tmp_path / out, progress=False)
        lines = (tmp_path / out).read_text().splitlines()
        assert len(lines) == s.written == s.selected == 2, fmt
    chats = [json.loads(line)["messages"] for line in (tmp_path / "c.jsonl").read_text().splitlines()]
    assert sorted((m[0]["content"], m[1]["content"]) for m in chats) == [
        ("A-question", "A-answer"), ("B-question", "B-answer")]


def test_on_real_trait_interp_files_every_prompt_and_annotation_is_exported_or_counted(realdata, tmp_path):
    """The public trait-interp files (prompt sets and annotation files, no responses): nothing can be
    exported, and the summary counts all of it."""
    import re

    a = Warehouse(tmp_path / "a")
    a.ingest(realdata / "response-schema")
    s = warehouse.export(a.root, "true", "trait_interp", tmp_path / "out", progress=False)
    assert s.written == 0
    text = "\n".join(s.notes)
    prompts = int(re.search(r"(\d+) prompts of (\d+) prompt set files", text).group(1))
    annotations = int(re.search(r"(\d+) annotations are about no exported response", text).group(1))
    files = int(re.search(r"(\d+) annotation files had nothing else", text).group(1))
    assert (prompts, annotations, files) == (a.one("SELECT count(*) FROM prompts"), a.one("SELECT count(*) FROM annotations"),
                                            a.one("SELECT count(*) FROM annotation_sets"))
