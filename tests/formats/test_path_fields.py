"""trait-interp's path grammar (the ``path_fields`` it defines) on every layout (docs/paths.md), run directly in DuckDB."""

from __future__ import annotations

import datetime as dt

import duckdb
import pytest

from warehouse.formatkit.declared_views import view_files, view_name
from warehouse.formats.trait_interp import TraitInterp
from warehouse.formats.trait_interp.path_fields import PATH_FIELDS

FIELDS = (
    "experiment", "pipeline", "model_variant", "trait", "position", "prompt_set", "prompt_id",
    "polarity", "split", "run_kind", "component", "method", "layers", "coefficients", "run_timestamp",
)

CASES = [
    # inference: nested prompt sets, string ids, the layout before model variants
    ("/d/experiments/rm_syco/inference/rm_lora/responses/rm_syco/train_100/1.json",
     dict(experiment="rm_syco", pipeline="inference", model_variant="rm_lora", prompt_set="rm_syco/train_100", prompt_id="1")),
    ("/d/experiments/e/inference/instruct/responses/persona_detection/angry/12.json",
     dict(experiment="e", pipeline="inference", model_variant="instruct", prompt_set="persona_detection/angry", prompt_id="12")),
    ("/d/experiments/e/inference/instruct/responses/benign_control/simple_math.json",
     dict(experiment="e", pipeline="inference", model_variant="instruct", prompt_set="benign_control", prompt_id="simple_math")),
    ("/d/experiments/e/inference/responses/baseline/3.json",
     dict(experiment="e", pipeline="inference", prompt_set="baseline", prompt_id="3")),
    ("experiments/e/inference/instruct/responses/thought_branches/mmlu_condition_b/26.json",
     dict(experiment="e", pipeline="inference", model_variant="instruct", prompt_set="thought_branches/mmlu_condition_b", prompt_id="26")),
    # extraction: trait with `/`, variant, val split, the layout before variants
    ("/d/experiments/e/extraction/rm_hack/ulterior_motive/base/responses/pos.json",
     dict(experiment="e", pipeline="extraction", model_variant="base", trait="rm_hack/ulterior_motive", polarity="pos", split="train")),
    ("/d/experiments/e/extraction/rm_hack/ulterior_motive/base/val_responses/neg.json",
     dict(experiment="e", pipeline="extraction", model_variant="base", trait="rm_hack/ulterior_motive", polarity="neg", split="val")),
    ("/d/experiments/e/extraction/chirp/refusal_v2/responses/pos.json",
     dict(experiment="e", pipeline="extraction", trait="chirp/refusal_v2", polarity="pos", split="train")),
    # steering: every run kind, multi-vector names, the old layouts
    ("/d/experiments/e/steering/pv/syc/instruct/response__5/steering/responses/baseline.json",
     dict(experiment="e", pipeline="steering", model_variant="instruct", trait="pv/syc", position="response__5",
          prompt_set="steering", run_kind="baseline")),
    ("/d/experiments/e/steering/pv/syc/instruct/response__5/steering/responses/residual/probe/L25_c-10.0_2026-01-23_05-39-08.json",
     dict(experiment="e", pipeline="steering", model_variant="instruct", trait="pv/syc", position="response__5",
          prompt_set="steering", run_kind="steered", component="residual", method="probe", layers=[25],
          coefficients=[-10.0], run_timestamp=dt.datetime(2026, 1, 23, 5, 39, 8))),
    ("/d/experiments/e/steering/pv/syc/instruct/response_all/rm_syco/train/responses/attn_contribution/mean_diff/L25_30_c-10.0_5.5_2026-01-23_05-39-08.json",
     dict(experiment="e", pipeline="steering", model_variant="instruct", trait="pv/syc", position="response_all",
          prompt_set="rm_syco/train", run_kind="steered", component="attn_contribution", method="mean_diff",
          layers=[25, 30], coefficients=[-10.0, 5.5], run_timestamp=dt.datetime(2026, 1, 23, 5, 39, 8))),
    ("/d/experiments/gemma-2-2b/steering/chirp/refusal_v2/response__5/responses/L11_c191.0_2025-12-31_20-28-33.json",
     dict(experiment="gemma-2-2b", pipeline="steering", trait="chirp/refusal_v2", position="response__5",
          run_kind="steered", layers=[11], coefficients=[191.0], run_timestamp=dt.datetime(2025, 12, 31, 20, 28, 33))),
    ("/d/experiments/e/steering/pv/syc/instruct/prompt_-1/steering/responses/ablation/L12_attn_contribution_mean_diff.json",
     dict(experiment="e", pipeline="steering", model_variant="instruct", trait="pv/syc", position="prompt_-1",
          prompt_set="steering", run_kind="ablation", component="attn_contribution", method="mean_diff", layers=[12])),
    ("/d/experiments/e/steering/pv/syc/instruct/response_-5_/steering/responses/ablation/L3_residual_probe.json",
     dict(experiment="e", pipeline="steering", model_variant="instruct", trait="pv/syc", position="response_-5_",
          prompt_set="steering", run_kind="ablation", component="residual", method="probe", layers=[3])),
    ("/d/experiments/e/steering/pv/syc/instruct/response__5/steering/responses/L25_c1e-05.json",
     dict(experiment="e", pipeline="steering", model_variant="instruct", trait="pv/syc", position="response__5",
          prompt_set="steering", run_kind="steered", layers=[25], coefficients=[1e-05])),
    # a newline in a folder's name is a character like another (RE2's '.' needs (?s) to match it)
    ("/d/experiments/e\nx/inference/instruct/responses/set\nA/1.json",
     dict(experiment="e\nx", pipeline="inference", model_variant="instruct", prompt_set="set\nA", prompt_id="1")),
    ("/d/experiments/e/extraction/rm_hack/ulterior\nmotive/base/responses/pos.json",
     dict(experiment="e", pipeline="extraction", model_variant="base", trait="rm_hack/ulterior\nmotive", polarity="pos", split="train")),
    ("/d/exp\nhome/experiments/e/steering/pv/s\nyc/instruct/response__5/q\ns/responses/residual/probe/L25_c-10.0.json",
     dict(experiment="e", pipeline="steering", model_variant="instruct", trait="pv/s\nyc", position="response__5",
          prompt_set="q\ns", run_kind="steered", component="residual", method="probe", layers=[25], coefficients=[-10.0])),
    # the last experiments/ segment counts; anything else has no path fields
    ("/archive/experiments/old/experiments/e/inference/instruct/responses/s/1.json",
     dict(experiment="e", pipeline="inference", model_variant="instruct", prompt_set="s", prompt_id="1")),
    ("/d/experiments/e/analysis/index.json", {}),
    ("/home/me/data/conversations.jsonl", {}),
]


@pytest.fixture(scope="module")
def con():
    c = duckdb.connect()
    c.execute("CREATE SCHEMA raw")
    c.execute("CREATE TABLE raw.sources AS SELECT unnest(?::VARCHAR[]) AS source_path", [[p for p, _ in CASES]])
    c.execute(PATH_FIELDS)
    yield c
    c.close()


@pytest.mark.parametrize("path, expected", CASES, ids=[p.split("experiments/")[-1][:60] for p, _ in CASES])
def test_path_fields(con, path, expected):
    row = con.execute(f"SELECT {', '.join(FIELDS)} FROM path_fields WHERE source_path = ?", [path]).fetchone()
    got = dict(zip(FIELDS, row))
    want = {f: expected.get(f) for f in FIELDS}
    assert got == want


def test_source_dir_is_the_parent_directory(con):
    assert con.execute(
        "SELECT source_dir FROM path_fields WHERE source_path LIKE '%ulterior_motive/base/responses/pos.json'"
    ).fetchone()[0] == "/d/experiments/e/extraction/rm_hack/ulterior_motive/base/responses"


def test_the_views_trait_interp_defines_have_the_columns_of_the_core_ones():
    """Its statements replace the core's (``Ingestor.defines``), which the core's views read: the same
    columns in the same order with the same types, or responses would change with the formats installed."""
    c = duckdb.connect()
    c.execute("CREATE SCHEMA raw")
    c.execute("CREATE TABLE raw.sources AS SELECT 'experiments/e/inference/v/responses/s/1.json' AS source_path")
    c.execute("CREATE TABLE raw.generation_metadata (responses_dir VARCHAR, params JSON, source_path VARCHAR)")
    core = {view_name(path.read_text()): path.read_text() for path in view_files()}
    assert set(TraitInterp.defines) == {"path_fields", "generation_params"}
    for name, statement in TraitInterp.defines.items():
        c.execute(core[name])
        want = c.execute(f"DESCRIBE {name}").fetchall()
        c.execute(statement)
        assert c.execute(f"DESCRIBE {name}").fetchall() == want, name
    c.close()


def test_a_path_field_filter_reaches_the_parquet_scan_as_a_list_of_paths(tmp_path):
    """More matching files than DuckDB's default of 50 still become an IN list on the responses scan
    (row groups without those paths are skipped; texts are decoded only for matching rows)."""
    import json

    import warehouse

    from ..conftest import Warehouse

    tree = tmp_path / "experiments" / "e" / "inference" / "instruct" / "responses"
    for prompt_set in ("wanted", "other"):
        (tree / prompt_set).mkdir(parents=True)
        for i in range(80):
            (tree / prompt_set / f"{i}.json").write_text(json.dumps({"prompt": f"p{i}", "response": f"r{i}"}))
    w = Warehouse(tmp_path / "wh")
    w.ingest(tmp_path / "experiments")
    con = warehouse.connect(w.root)
    plan = con.execute("EXPLAIN ANALYZE SELECT response FROM responses WHERE prompt_set = 'wanted'").fetchall()[0][1]
    assert "source_path IN (" in plan
    assert con.execute("SELECT count(*) FROM responses WHERE prompt_set = 'wanted'").fetchone() == (80,)


def test_path_fields_evaluated_while_the_batches_run_are_the_ones_materialised_after(tmp_path):
    """The runner evaluates path_fields for the paths it knows before its batches end
    (run/path_fields.PathFieldsAhead); the commit writes the rows of the catalogued paths, exactly the file
    materialize_path_fields writes, or nothing when a catalogued path was not known ahead."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from warehouse.run.path_fields import PathFieldsAhead, materialize_path_fields

    paths = [p for p, _ in CASES]
    sources = tmp_path / "sources.parquet"
    pq.write_table(pa.table({"source_path": paths[1:]}), sources)  # one known path was not catalogued
    direct = materialize_path_fields(str(sources), str(tmp_path / "direct.parquet"))
    ahead = PathFieldsAhead(set(paths) | {"/elsewhere/x.json"})
    try:
        assert ahead.write(str(sources), str(tmp_path / "ahead.parquet")) == direct
    finally:
        ahead.close()
    assert pq.read_table(tmp_path / "ahead.parquet").equals(pq.read_table(tmp_path / "direct.parquet"))
    assert pq.ParquetFile(tmp_path / "ahead.parquet").schema == pq.ParquetFile(tmp_path / "direct.parquet").schema

    partial = PathFieldsAhead(set(paths[:2]))
    try:
        assert partial.write(str(sources), str(tmp_path / "partial.parquet")) is None
    finally:
        partial.close()
    assert not (tmp_path / "partial.parquet").exists()


def test_path_fields_of_many_paths_is_written_in_row_groups_every_core_reads(tmp_path):
    """Every read of responses joins path_fields: as one row group, its paths were decoded on one thread."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from warehouse.run.path_fields import PathFieldsAhead, materialize_path_fields

    paths = [f"/w/experiments/e/inference/instruct/responses/t/x/response/s/{i}.json" for i in range(40_000)]
    sources = tmp_path / "sources.parquet"
    pq.write_table(pa.table({"source_path": paths}), sources)
    materialize_path_fields(str(sources), str(tmp_path / "direct.parquet"))
    ahead = PathFieldsAhead(set(paths))
    try:
        ahead.write(str(sources), str(tmp_path / "ahead.parquet"))
    finally:
        ahead.close()
    for name in ("direct.parquet", "ahead.parquet"):
        meta = pq.ParquetFile(tmp_path / name).metadata
        assert meta.num_rows == 40_000 and meta.num_row_groups >= 2, (name, meta.num_row_groups)


@pytest.mark.parametrize("failure", ["strict", "interrupt"])
def test_path_fields_ahead_is_closed_when_the_batches_fail(tmp_path, monkeypatch, failure):
    """The evaluation started before the batches is stopped and its connection closed however the run
    ends before its commit: --strict's first bad record, Ctrl-C, an error in a batch."""
    import json

    import warehouse
    from warehouse.run import runner
    from warehouse.run.path_fields import PathFieldsAhead

    made = []

    class Watched(PathFieldsAhead):
        closed = False

        def __init__(self, paths=None):
            super().__init__(paths)
            made.append(self)

        def close(self):
            super().close()
            self.closed = True

    monkeypatch.setattr(runner, "PathFieldsAhead", Watched)
    tree = tmp_path / "experiments" / "e" / "inference" / "instruct" / "responses" / "set"
    tree.mkdir(parents=True)
    (tree / "1.json").write_text(json.dumps({"prompt": "p", "response": "r"}))
    (tree / "2.json").write_text('{"prompt": "p", "response": ')  # quarantined: --strict stops at it
    if failure == "interrupt":
        def interrupted(*args, **kwargs):
            raise KeyboardInterrupt

        monkeypatch.setattr(runner, "run_batches", interrupted)
    with pytest.raises((warehouse.StrictModeError, KeyboardInterrupt)):
        warehouse.ingest(str(tmp_path / "experiments"), str(tmp_path / "wh"), strict=True, progress=False, jobs=1)
    assert len(made) == 1
    assert made[0].closed and not made[0]._thread.is_alive()


def test_path_fields_ahead_closed_early_stops_its_evaluation():
    """close() before the rows are wanted (the run stopped) interrupts the evaluation instead of waiting
    for rows nobody reads: a million paths take seconds of one core."""
    from warehouse.run.path_fields import PathFieldsAhead

    ahead = PathFieldsAhead({f"/d/experiments/e/inference/i/responses/s/{i}.json" for i in range(300_000)})
    ahead.close()
    assert not ahead._thread.is_alive()
    assert ahead._error is not None and not hasattr(ahead, "_rows")
    assert isinstance(ahead._error, (duckdb.InterruptException, InterruptedError))
