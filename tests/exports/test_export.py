"""Export: the generic formats, the selection of children, atomic output, errors."""

from __future__ import annotations

import csv
import io
import json
import os

import pyarrow.parquet as pq
import pytest

import warehouse
from warehouse.errors import QueryError, UsageError
from warehouse.exports import kit
from warehouse.exports.conversation import conversation

from ..conftest import export_out


@pytest.fixture(scope="module")
def sw(samples_wh):
    return samples_wh


def test_parquet_holds_the_selection_and_its_children(sw, tmp_path):
    where = "prompt_set = 'rm_syco/train_100' OR source_format = 'scale'"
    s = warehouse.export(sw.root, where, "parquet", tmp_path / "out", progress=False)
    expected = sw.one(f"SELECT count(*) FROM responses WHERE {where}")
    assert s.selected == s.written == expected
    out = tmp_path / "out"
    assert sorted(p.name for p in out.iterdir()) == [
        "README.md", "annotations.parquet", "attachments.parquet", "chunks.parquet", "evaluations.parquet",
        "projection_files.parquet", "reference_texts.parquet", "responses.parquet", "rubric_criteria.parquet",
        "sample_events.parquet", "sentence_boundaries.parquet", "sources.parquet", "token_values.parquet",
        "turns.parquet"]  # README.md: the dataset card (tests/exports/test_dataset_card.py)
    responses = pq.read_table(out / "responses.parquet")
    assert responses.num_rows == expected and "experiment" in responses.column_names  # path fields come along
    ids = set(responses.column("response_id").to_pylist())
    records = set(responses.column("record_id").to_pylist())
    for table in ("turns", "annotations", "evaluations"):
        rows = pq.read_table(out / f"{table}.parquet").to_pylist()
        assert rows and all(r["response_id"] in ids or (r["response_id"] is None and r["record_id"] in records) for r in rows), table
    # every child row of the selection, and only those
    n_eval = sw.one(f"SELECT count(*) FROM evaluations e WHERE e.response_id IN (SELECT response_id FROM responses WHERE {where}) "
                    f"OR (e.response_id IS NULL AND e.record_id IN (SELECT record_id FROM responses WHERE {where}))")
    assert pq.read_table(out / "evaluations.parquet").num_rows == n_eval
    spans = pq.read_table(out / "annotations.parquet").to_pylist()
    assert {r["category"] for r in spans if r["level"] == "span"} >= {"voting", "population"}


def test_jsonl_nests_children_under_each_response(sw, tmp_path):
    warehouse.export(sw.root, "source_format = 'afterimage' AND persona_name IS NOT NULL", "jsonl", tmp_path / "o.jsonl", progress=False)
    lines = [json.loads(x) for x in (tmp_path / "o.jsonl").read_text().splitlines()]
    assert lines and all(line["source_format"] == "afterimage" for line in lines)
    first = lines[0]
    assert [t["turn_index"] for t in first["turns"]] == list(range(len(first["turns"])))
    assert first["turns"][-1]["content"] == first["response"]
    graded = [line for line in lines if line["evaluations"]]
    assert graded and {"overall_grade", "final_score"} <= {e["criterion"] for e in graded[0]["evaluations"]}
    with_extra = [line for line in lines if line["extra"] is not None]
    assert with_extra and all(isinstance(line["extra"], dict) for line in with_extra)  # JSON columns stay JSON


def test_jsonl_writes_nan_and_infinity_scores_as_null_as_sql_does(tmp_path):
    """A score that is NaN or infinite has no JSON number: the jsonl export writes null, valid JSON (it wrote a
    bare NaN, which JSON readers refuse), as ``warehouse sql --format json`` does."""
    steering = tmp_path / "src/experiments/e/steering/pv/syc/instruct/response__5/steering/responses/baseline.json"
    steering.parent.mkdir(parents=True)
    steering.write_text('[{"prompt": "a", "response": "b", "system_prompt": null, "trait_score": NaN, '
                        '"coherence_score": Infinity}, {"prompt": "c", "response": "NaN", "system_prompt": null, '
                        '"trait_score": -Infinity, "coherence_score": 50.0}]')
    root = tmp_path / "wh"
    warehouse.ingest(tmp_path / "src", root, progress=False, jobs=1)
    warehouse.export(root, None, "jsonl", tmp_path / "o.jsonl", progress=False)

    def strict(constant):
        raise ValueError(f"not JSON: {constant}")

    lines = [json.loads(line, parse_constant=strict) for line in (tmp_path / "o.jsonl").read_text().splitlines()]
    assert [(r["trait_score"], r["coherence_score"], r["response"]) for r in lines] == [(None, None, "b"), (None, 50.0, "NaN")]
    assert [[e["score"] for e in r["evaluations"]] for r in lines] == [[None, None], [50.0, None]]
    out = io.StringIO()
    warehouse.sql(root, "SELECT trait_score, coherence_score FROM responses ORDER BY record_index", output_format="json", out=out)
    assert json.loads(out.getvalue(), parse_constant=strict) == [{"trait_score": None, "coherence_score": None},
                                                                 {"trait_score": None, "coherence_score": 50.0}]


def test_jsonl_keeps_sentences_and_spans(sw, tmp_path):
    warehouse.export(sw.root, "prompt_set = 'rm_syco/train_100'", "jsonl", tmp_path / "o.jsonl", progress=False)
    lines = [json.loads(x) for x in (tmp_path / "o.jsonl").read_text().splitlines()]
    assert len(lines) == 8
    assert all(line["sentence_boundaries"] for line in lines)
    assert sum(len(line["annotations"]) for line in lines) == sw.one(
        "SELECT count(*) FROM annotations a JOIN responses r USING (response_id) WHERE r.prompt_set = 'rm_syco/train_100'")


def test_csv_is_flat(sw, tmp_path):
    warehouse.export(sw.root, "pipeline = 'steering' AND run_kind = 'steered'", "csv", tmp_path / "o.csv", progress=False)
    with (tmp_path / "o.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == sw.one("SELECT count(*) FROM responses WHERE pipeline = 'steering' AND run_kind = 'steered'")
    assert rows[0]["layers"].startswith("[") and float(rows[0]["trait_score"]) >= 0


def test_openai_chat_builds_conversations(sw, tmp_path):
    warehouse.export(sw.root, "prompt_set = 'general/baseline' OR source_format IN ('afterimage', 'scale')",
                     "openai_chat", tmp_path / "o.jsonl", progress=False)
    convs = [json.loads(x)["messages"] for x in (tmp_path / "o.jsonl").read_text().splitlines()]
    assert all(c[-1]["role"] == "assistant" and c[-1]["content"] for c in convs)
    assert all({m["role"] for m in c} <= {"system", "user", "assistant", "tool"} for c in convs)
    # trait-interp inference: the raw prompt of the prompt set, not the chat-templated one
    photosynthesis = [c for c in convs if c[0]["content"] == "What is photosynthesis?"]
    assert photosynthesis and "<start_of_turn>" not in json.dumps(photosynthesis)
    # a multi-turn AfterImage conversation keeps its earlier exchanges
    assert any(len(c) > 2 for c in convs)


def test_a_chat_without_turns_is_system_user_assistant():
    row = {"response_id": "r", "response": "A", "prompt": "Q", "system_prompt": "S", "turns": None}
    c = conversation(row)
    assert c.answered and c.messages == [
        {"role": "system", "content": "S"}, {"role": "user", "content": "Q"}, {"role": "assistant", "content": "A"}]
    unanswered = conversation(dict(row, response=None))
    assert not unanswered.answered and unanswered.messages == c.messages[:2]


def test_an_empty_selection_still_writes_every_file(sw, tmp_path):
    s = warehouse.export(sw.root, "false", "parquet", tmp_path / "out", progress=False)
    assert s.written == 0
    assert pq.read_table(tmp_path / "out" / "responses.parquet").num_rows == 0
    warehouse.export(sw.root, "false", "csv", tmp_path / "o.csv", progress=False)
    assert (tmp_path / "o.csv").read_text().startswith("response_id,")


def test_a_bad_where_gets_duckdbs_error_and_the_columns(sw, tmp_path):
    with pytest.raises(QueryError) as e:
        warehouse.export(sw.root, "nope = 1", "csv", tmp_path / "o.csv", progress=False)
    text = str(e.value)
    assert text.startswith("--where 'nope = 1': Binder Error: Referenced column \"nope\" not found")
    assert "columns of responses you can filter on:\n  responses: response_id, record_id," in text
    assert not (tmp_path / "o.csv").exists()


def test_a_failed_export_leaves_nothing(sw, tmp_path):
    from warehouse import exports as export_pkg

    def fails_midway(ctx):
        (__import__("pathlib").Path(ctx.out) / "responses.parquet").write_text("half")
        raise RuntimeError("disk full")

    bad_dir = export_pkg.ExportFormat("parquet", "x", True, fails_midway)
    with pytest.raises(RuntimeError):
        export_pkg.export(str(sw.root), None, "parquet", str(tmp_path / "out"), extra_formats=[bad_dir], progress=False)
    assert list(tmp_path.iterdir()) == []  # no partial directory, no temporary left behind

    (tmp_path / "keep.csv").write_text("old")

    def fails_file(ctx):
        with open(ctx.out, "w") as f:
            f.write("half")
        raise RuntimeError("disk full")

    bad_file = export_pkg.ExportFormat("csv", "x", False, fails_file)
    with pytest.raises(RuntimeError):
        export_pkg.export(str(sw.root), None, "csv", str(tmp_path / "keep.csv"), extra_formats=[bad_file], progress=False)
    assert (tmp_path / "keep.csv").read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["keep.csv"]


def test_existing_directories_are_not_overwritten_unless_asked(sw, tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "mine.txt").write_text("x")
    with pytest.raises(UsageError, match="exists; remove it, choose another path, or pass --overwrite"):
        warehouse.export(sw.root, None, "parquet", tmp_path / "out", progress=False)
    warehouse.export(sw.root, None, "parquet", tmp_path / "out", overwrite=True, progress=False)
    assert not (tmp_path / "out" / "mine.txt").exists() and (tmp_path / "out" / "responses.parquet").exists()


def test_the_cli_export_command(sw, tmp_path, capsys):
    from warehouse.cli import main

    assert main(["export", "--root", str(sw.root), "--where", "source_format = 'scale'", "--format", "jsonl",
                 "--out", str(tmp_path / "s.jsonl")]) == 0
    out, err = capsys.readouterr()
    assert out == "" and "exported" in err
    assert main(["export", "--root", str(sw.root), "--format", "nope", "--out", str(tmp_path / "x")]) == 2
    assert "unknown export format 'nope'; choose one of: parquet, jsonl, csv, openai_chat" in capsys.readouterr().err


@pytest.mark.parametrize("fmt, name, suggested", [("afterimage", "conversations", "conversations.jsonl"),
                                                   ("afterimage", "conversations.json", "conversations.jsonl"),
                                                   ("scale", "tasks", "tasks.json")])
def test_a_source_format_export_is_named_so_that_ingest_reads_it_back(sw, tmp_path, capsys, fmt, name, suggested):
    """Ingest tells these formats' files by their extension: an --out without it would write a file no
    ingest reads, named or not. It is refused before anything is written, saying the name to use."""
    from warehouse.cli import main

    out = tmp_path / name
    assert main(["export", "--root", str(sw.root), "--format", fmt, "--out", str(out), "--quiet"]) == 2
    assert capsys.readouterr().err == (
        f"error: --out {out}: `warehouse ingest` reads the {fmt} format back only from a name ending in "
        f"{' or '.join(('.jsonl',) if fmt == 'afterimage' else ('.json', '.jsonl'))} (it tells formats by the "
        f"extension); name it {suggested}\n")
    assert os.listdir(tmp_path) == []
    assert main(["export", "--root", str(sw.root), "--format", fmt, "--out", str(tmp_path / suggested), "--quiet"]) == 0
    again = warehouse.ingest(tmp_path / suggested, tmp_path / "again", progress=False, jobs=1)
    assert again.records_quarantined == 0 and again.records_ingested > 0


def test_the_memory_limit_is_checked_and_running_out_of_it_says_what_to_do(sw, tmp_path):
    import duckdb

    from warehouse.errors import ExportError
    from warehouse.exports import ExportFormat, export

    with pytest.raises(UsageError) as e:
        warehouse.export(sw.root, None, "jsonl", tmp_path / "o.jsonl", memory_limit="lots", progress=False)
    assert str(e.value) == "--memory-limit 'lots': not a memory size (give e.g. 1GB, 512MB)"
    # far too little to hold even the staged samples, whatever else the machine does: a clear
    # error, and nothing left behind
    with pytest.raises(ExportError) as e:
        warehouse.export(sw.root, None, "jsonl", tmp_path / "o.jsonl", memory_limit="256KB", progress=False)
    assert str(e.value).startswith(
        f"export to {tmp_path / 'o.jsonl'}: DuckDB needed more than --memory-limit 256KB and could not spill the rest "
        "to disk; raise --memory-limit, or export a smaller --where selection. DuckDB said: Out of Memory Error:")
    assert list(tmp_path.iterdir()) == []  # no partial output, temporary or spill directory
    # The limit given is the one DuckDB runs the export under, spilling beside --out. (Whether a given
    # limit is enough depends on the machine's threads and load: that is measured in bench/, not here.)
    seen = {}

    def probe(ctx):
        for setting in ("memory_limit", "temp_directory"):
            seen[setting] = ctx.con.execute(f"SELECT current_setting('{setting}')").fetchone()[0]
        open(ctx.out, "w").close()
        return 0

    export(str(sw.root), None, "probe", str(tmp_path / "p"), memory_limit="64MB", progress=False,
           extra_formats=[ExportFormat("probe", "records the settings", False, probe)])
    same = duckdb.connect()
    same.execute("SET memory_limit = '64MB'")
    assert seen["memory_limit"] == same.execute("SELECT current_setting('memory_limit')").fetchone()[0]
    assert os.path.dirname(os.path.dirname(seen["temp_directory"])) == str(tmp_path)  # in the workspace beside --out
    assert [p.name for p in tmp_path.iterdir()] == ["p"]  # the workspace and its spill directory are gone


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "openai_chat", "scale", "afterimage", "dataloop", "trait_interp", "hf_chat"])
def test_windowed_output_is_the_same_as_one_window(sw, tmp_path, monkeypatch, fmt):
    """Nested formats are built a window of staged responses at a time: the windows' edges must not show."""
    def contents(out):
        if out.is_file():
            return {"": out.read_bytes()}
        return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}

    whole, windowed = export_out(tmp_path / "whole", fmt), export_out(tmp_path / "windowed", fmt)
    warehouse.export(sw.root, None, fmt, whole, progress=False)
    monkeypatch.setattr(kit, "BATCH", 7)  # the samples' ~230 responses in ~33 windows
    warehouse.export(sw.root, None, fmt, windowed, progress=False)
    assert contents(windowed) == contents(whole)


#: temp tables an export may make: the selection, the kit's staging, and a format's own plan of where files go
KIT_TABLES = ("selected", "selected_records", "staged", "staged_keys", "staged_user_prompts")


@pytest.mark.parametrize("fmt", ["parquet", "jsonl", "csv", "openai_chat", "trait_interp", "afterimage", "scale", "dataloop", "hf_chat"])
def test_every_format_stages_the_selection_one_way(sw, tmp_path, fmt):
    """Every format stages its rows with the kit: ``staged`` (one row per parent, keyed by ``n``),
    ``staged_keys`` and ``staged_<name>(n, row, k)`` lists generated from the tables' declared parent
    links; none stages its own way. The only other tables are a format's plan of where files go."""
    from warehouse.exports import export, formats

    made = {}

    def probe(ctx):
        written = formats()[fmt].write(ctx)
        for (name,) in ctx.con.execute("SELECT table_name FROM duckdb_tables() WHERE temporary").fetchall():
            made[name] = [c for (c,) in ctx.con.execute(
                "SELECT column_name FROM duckdb_columns() WHERE table_name = ? ORDER BY column_index", [name]).fetchall()]
        return written

    spec = formats()[fmt]
    s = export(str(sw.root), None, fmt, str(tmp_path / "out"), progress=False,
               extra_formats=[kit.ExportFormat(fmt, "probed", spec.directory, probe)])
    assert s.written > 0 and made
    for name, columns in made.items():
        if name in KIT_TABLES or name.startswith("layout_"):
            continue
        assert name.startswith("staged_") and columns == ["n", "row", "k"], (name, columns)
    if "staged" in made:
        assert made["staged"][0] == "n" and made["staged_keys"] == ["n", "response_id", "record_id"]


def test_the_exporter_sketch_in_the_docs_runs(sw, tmp_path):
    """docs/export.md#writing-an-exporter shows a whole exporter written with the kit: it works as shown."""
    import re

    from warehouse.exports import export

    from ..conftest import REPO

    code = re.search(r"A sketch.*?```python\n(.*?)```", (REPO / "docs" / "export.md").read_text(), re.S).group(1)
    names: dict = {}
    exec(code, names)
    s = export(str(sw.root), "source_format = 'scale'", "mine", str(tmp_path / "o.jsonl"), progress=False,
               extra_formats=[names["EXPORT"]])
    lines = [json.loads(line) for line in (tmp_path / "o.jsonl").read_text().splitlines()]
    assert s.written == len(lines) == sw.one("SELECT count(*) FROM responses WHERE source_format = 'scale'")
    assert all(m["role"] for line in lines for m in line["turns"] or ())
    assert s.notes and s.notes[0].startswith("mine has no place for the selected responses' ")
