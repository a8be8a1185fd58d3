"""Per-token values: trait-interp projection files of every shape (tests/fixtures/trait_interp_projections,
../shared/realdata/projections) in ``token_values`` and the views that ask questions of it, each answer
computed here again from the files."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from statistics import mean

import pyarrow.parquet as pq
import pytest

import warehouse
from warehouse.formatkit.readers import decode_json
from warehouse.formatkit.records import stable_id

from ..conftest import FIXTURES, REALDATA, REPO, Warehouse

PX = FIXTURES / "trait_interp_projections"
EXP = PX / "experiments" / "px"
INSTRUCT = EXP / "inference" / "instruct"
VIEW_ORDER = "ORDER BY source_path, source_locator, vector_index, token_index"


def load(path) -> dict:
    return decode_json(Path(path).read_bytes())


def projection(variant: str, trait: str) -> str:
    return str(EXP / "inference" / variant / "projections" / "cat" / trait / "set" / "1.json")


@pytest.fixture(scope="module")
def px(tmp_path_factory) -> Warehouse:
    w = Warehouse(tmp_path_factory.mktemp("px") / "wh")
    w.ingest(PX)
    return w


# --- every shape ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("view, order", [
    ("token_values", VIEW_ORDER),
    ("projection_files", "ORDER BY source_path"),
    ("model_variants", "ORDER BY source_path, source_locator"),
    ("quarantine", "ORDER BY source_path, locator"),
])
def test_golden_rows(px, golden, view, order):
    columns = "source_path, locator, stage, error" if view == "quarantine" else "*"
    golden(f"trait_interp_projections/{view}", px.rows(f"SELECT {columns} FROM {view} {order}"))


def listed_values(path: str) -> dict[tuple[str, int], tuple]:
    """(list place, token index) -> (value, norm, normalized) of a file whose projections are a list of
    vectors, read here from the JSON: each entry's own norms, or the top-level ones for the vectors of
    the first vector's layer (the H5b shape)."""
    doc = load(path)
    shared, first = doc.get("token_norms"), doc["projections"][0]["layer"]
    out = {}
    for i, e in enumerate(doc["projections"]):
        norms = e.get("token_norms") or (shared if e["layer"] == first else None)
        for side in ("prompt", "response"):
            for j, v in enumerate(e[side]):
                normalized = e.get(f"normalized_{side}")
                out[(f".projections[{i}].{side}", j)] = (v, norms[side][j] if norms else None,
                                                         normalized[j] if normalized else None)
    return out


def view_values(w: Warehouse, path: str) -> dict[tuple[str, int], tuple]:
    rows = w.rows("SELECT source_locator, token_index, value, norm, normalized FROM token_values WHERE source_path = ?",
                  [path])
    return {(r["source_locator"], r["token_index"]): (r["value"], r["norm"], r["normalized"]) for r in rows}


@pytest.mark.parametrize("variant, trait", [("instruct", "trait"), ("base", "trait"), ("instruct", "h5b"),
                                            ("instruct", "stream"), ("instruct", "resp_only")])
def test_every_value_of_a_vector_list_is_the_files_own(px, variant, trait):
    """H5b-H9: each value, norm and normalised score, at its place, equal to the number the JSON text
    parses to (decimals, unrounded floats and a norm over 10^5 alike)."""
    path = projection(variant, trait)
    assert view_values(px, path) == listed_values(path)


def test_a_single_vector_file_reads_its_vector_from_the_metadata(px):
    """H4-H5a: `projections` is {prompt, response}; the vector is metadata.vector_source; norms top-level."""
    path = EXP / "inference/instruct/cat/single/residual_stream/set/1.json"
    doc = load(path)
    rows = px.rows(f"SELECT * FROM token_values WHERE source_path = ? {VIEW_ORDER}", [str(path)])
    source = doc["metadata"]["vector_source"]
    assert {(r["trait"], r["layer"], r["method"], r["component"], r["selection_source"], r["baseline"], r["centered"],
             r["position"]) for r in rows} == {("cat/single", source["layer"], source["method"], source["component"],
                                                source["selection_source"], source["baseline"], True, "response[:5]")}
    for side in ("prompt", "response"):
        got = [(r["value"], r["norm"]) for r in rows if r["segment"] == side]
        assert got == list(zip(doc["projections"][side], doc["token_norms"][side]))
    (f,) = px.rows("SELECT * FROM projection_files WHERE source_path = ?", [str(path)])
    assert f["shape"] == "H4-H5a" and json.loads(f["activation_norms"]) == doc["activation_norms"]
    assert json.loads(f["massive_dim_data"]) == doc["massive_dim_data"]
    assert json.loads(f["metadata"])["vector_source"] == source  # whole: its model, experiment, trait too


def test_nested_files_give_a_vector_per_layer_and_sublayer(px):
    """H0-H3: [token][layer][sublayer]. The sublayers are named by their count (3: residual_in,
    after_attn, residual_out; 2: after_attn, residual_out; 1 under attn_stream: attn_out)."""
    slim = EXP / "inference/cat/slim/residual_stream/oldset/4.json"
    doc = load(slim)
    rows = px.rows(f"SELECT * FROM token_values WHERE source_path = ? {VIEW_ORDER}", [str(slim)])
    for r in rows:
        k = ("after_attn", "residual_out").index(r["component"])
        assert r["value"] == doc["projections"][r["segment"]][r["token_index"]][r["layer"]][k]
        assert r["method"] == "mean_diff" and r["aligned"]
    assert len(rows) == (2 + 3) * 2 * 2  # tokens x layers x sublayers
    first = EXP / "inference/projections/cat/first/set/prompt_2.json"
    assert {r["component"] for r in px.rows("SELECT component FROM token_values WHERE source_path = ?", [str(first)])} \
        == {"residual_in", "after_attn", "residual_out"}
    attn = EXP / "inference/cat/attn/attn_stream/set/3.json"
    assert px.rows("SELECT DISTINCT component, trait FROM token_values WHERE source_path = ?", [str(attn)]) \
        == [{"component": "attn_out", "trait": "cat/attn"}]


def test_a_file_holding_its_response_is_that_responses_row(px):
    """The first shapes carry prompt and response (text, tokens): the file is also a response record, and
    its values belong to it; the logit lens and activation norms are the file's."""
    path = EXP / "inference/projections/cat/first/set/prompt_2.json"
    doc = load(path)
    (r,) = px.rows("SELECT * FROM responses WHERE source_path = ?", [str(path)])
    assert (r["prompt"], r["response"], r["tokens"], r["prompt_end"]) == ("Hi", " Hello there", ["<bos>", "Hi", " Hello", " there"], 2)
    assert json.loads(r["extra"])["dynamics"] == doc["dynamics"]
    assert {v["response_id"] for v in px.rows("SELECT response_id FROM token_values WHERE source_path = ?", [str(path)])} \
        == {r["response_id"]} == {stable_id(str(path), "")}
    (f,) = px.rows("SELECT * FROM projection_files WHERE source_path = ?", [str(path)])
    assert f["shape"] == "H0-H2" and f["response_path"] is None and f["response_found"]
    assert json.loads(f["logit_lens"]) == doc["logit_lens"] and json.loads(f["activation_norms"]) == doc["activation_norms"]


def test_values_are_stored_as_decimals_unless_one_is_no_4_decimal_number(px):
    """Storage: 4-decimal values as Parquet INT32 DECIMAL(9,4), byte-stream-split; a list holding an
    unrounded value or one of 10^5 or more whole in its float column, exact."""
    raw = px.rows("SELECT trait, segment, scores IS NULL AS scores_are_floats, norms IS NULL AND norms_float IS NOT NULL "
                  "AS norms_are_floats FROM raw.token_values WHERE trait = 'cat/stream' ORDER BY segment")
    assert raw == [{"trait": "cat/stream", "segment": "prompt", "scores_are_floats": True, "norms_are_floats": True},
                   {"trait": "cat/stream", "segment": "response", "scores_are_floats": False, "norms_are_floats": False}]
    (path,) = [p for p in (px.root / "token_values").glob("*.parquet")]
    meta = pq.ParquetFile(path).metadata
    columns = {meta.schema.column(i).path: meta.row_group(0).column(i) for i in range(meta.num_columns)}
    scores = columns["scores.list.element"]
    assert scores.physical_type == "INT32" and str(scores.statistics.logical_type) == "Decimal(precision=9, scale=4)"
    assert "BYTE_STREAM_SPLIT" in scores.encodings and "BYTE_STREAM_SPLIT" in columns["norms.list.element"].encodings
    assert columns["scores_float.list.element"].physical_type == "DOUBLE"


def test_a_nan_written_bare_is_kept_in_the_float_list(tmp_path):
    """trait-interp's json.dumps writes a NaN score as the bare token NaN (not JSON): read, and kept."""
    d = tmp_path / "experiments/e/inference/v/projections/c/t/s"
    d.mkdir(parents=True)
    (d / "1.json").write_text('{"metadata": {"n_prompt_tokens": 1, "n_response_tokens": 2}, "projections": ['
                              '{"method": "probe", "layer": 1, "prompt": [0.5], "response": [NaN, 0.25]}]}')
    w = Warehouse(tmp_path / "wh")
    w.ingest(tmp_path / "experiments")
    rows = w.rows("SELECT segment, scores IS NULL AS floats, isnan(scores_float[1]) AS nan FROM raw.token_values ORDER BY segment")
    assert rows == [{"segment": "prompt", "floats": False, "nan": None},
                    {"segment": "response", "floats": True, "nan": True}]
    assert w.rows("SELECT value FROM token_values WHERE segment = 'response' AND token_index = 1") == [{"value": 0.25}]


# --- alignment --------------------------------------------------------------------------------------------


def test_a_list_a_token_short_is_kept_as_it_is_and_says_so(px):
    """Stream-through can merge tokens at the prompt/response boundary: 5 response values for the
    response file's 6 tokens. Never padded or shifted: value j is the file's response[j]."""
    path = projection("instruct", "stream")
    doc = load(path)
    rows = px.rows(f"SELECT * FROM token_values WHERE source_path = ? AND segment = 'response' {VIEW_ORDER}", [path])
    assert [r["value"] for r in rows] == doc["projections"][0]["response"]
    assert {(r["n_scores"], r["n_tokens"], r["aligned"]) for r in rows} == {(5, 6, False)}
    prompt = px.rows("SELECT DISTINCT aligned FROM token_values WHERE source_path = ? AND segment = 'prompt'", [path])
    assert prompt == [{"aligned": True}]


def test_a_response_only_capture_has_no_prompt_tokens_and_says_its_list_is_empty(px):
    path = projection("instruct", "resp_only")
    assert px.rows("SELECT count(*) AS n FROM token_values WHERE source_path = ? AND segment = 'prompt'", [path]) == [{"n": 0}]
    assert px.rows("SELECT len(scores) AS n, n_tokens FROM raw.token_values WHERE source_path = ? AND segment = 'prompt'",
                   [path]) == [{"n": 0, "n_tokens": 5}]
    rows = px.rows(f"SELECT token_index, value, aligned FROM token_values WHERE source_path = ? {VIEW_ORDER}", [path])
    assert [r["value"] for r in rows] == load(path)["projections"][0]["response"]
    assert [r["token_index"] for r in rows] == list(range(6)) and all(r["aligned"] for r in rows)


def test_values_whose_response_is_missing_are_kept_and_said_to_be(px):
    """The H3 file's response (inference/responses/oldset/4.json) is not in the tree: its rows are kept,
    under the id that response's file would have, and projection_files and stats say it is missing."""
    path = EXP / "inference/cat/slim/residual_stream/oldset/4.json"
    expected = str(EXP / "inference/responses/oldset/4.json")
    (f,) = px.rows("SELECT response_id, response_path, response_found FROM projection_files WHERE source_path = ?",
                   [str(path)])
    assert f == {"response_id": stable_id(expected, ""), "response_path": expected, "response_found": False}
    assert px.rows("SELECT DISTINCT response_id FROM token_values WHERE source_path = ?", [str(path)]) \
        == [{"response_id": f["response_id"]}]
    assert px.rows("SELECT count(*) AS n FROM projection_files WHERE NOT response_found") == [{"n": 1}]
    notes = warehouse.stats(px.root)["notes"]
    assert len(notes) == 1 and "8 lists of per-token values from 1 file belong to a response the warehouse does not hold" \
        in notes[0]


def test_the_rows_are_the_same_whether_the_responses_come_before_or_after(tmp_path):
    """The link is the response file's id, computed from the projection file's path: ingesting the
    projections alone, then the responses, gives the rows of ingesting both at once."""
    tree = tmp_path / "experiments"
    import shutil

    shutil.copytree(EXP.parent, tree)
    w = Warehouse(tmp_path / "wh")
    w.ingest(tree / "px" / "inference" / "instruct" / "projections")
    query = f"SELECT * FROM token_values WHERE source_path LIKE '%/instruct/projections/%' {VIEW_ORDER}"
    before = w.rows(query)
    assert len(before) > 50
    assert w.rows("SELECT count(*) AS n FROM projection_files WHERE response_found") == [{"n": 0}]
    w.ingest(tree)
    assert w.rows(query) == before
    assert w.rows("SELECT count(*) AS n FROM projection_files WHERE source_path LIKE '%/instruct/projections/%' "
                  "AND NOT response_found") == [{"n": 0}]


def test_malformed_files_are_quarantined_at_the_place_of_what_is_wrong(px):
    rows = px.rows("SELECT regexp_extract(source_path, 'broken/set/(.*)', 1) AS file, locator, stage, error FROM quarantine "
                   "WHERE source_path LIKE '%/broken/%' ORDER BY 1")
    assert [(r["file"], r["locator"], r["stage"]) for r in rows] == [
        ("1.json", ".projections[1].response[5]", "map"),
        ("2.json", ".projections[0].token_norms.response", "map"),
        ("3.json", ".projections", "map"),
        ("4.json", ".projections[0].prompt[1]", "map"),
        ("5.json", ".projections.prompt[1]", "map"),
    ]
    assert "got string 'x'" in rows[0]["error"] and "got boolean True" in rows[3]["error"]
    assert "1 values where .projections[0].response has 2 scores" in rows[1]["error"]
    assert all("project the response again" in r["error"] for r in rows if r["file"] != "3.json")
    assert px.rows("SELECT count(*) AS n FROM token_values WHERE source_path LIKE '%/broken/%'") == [{"n": 0}]


# --- the questions ------------------------------------------------------------------------------------------


def test_span_values_are_the_mean_max_and_argmax_over_each_spans_tokens(px):
    """The annotation file's spans, by hand: "No" is response token 0, "Never mix" tokens 2 and 3 of
    ["No", ".", " Never", " mix", " them", "."]."""
    spans = {r["span"]: (r["token_start"], r["token_end"]) for r in px.rows("SELECT span, token_start, token_end FROM annotations")}
    assert spans == {"No": (0, 1), "Never mix": (2, 4)}
    rows = px.rows("SELECT * FROM span_values")
    checked = 0
    for variant, trait in [("instruct", "trait"), ("instruct", "h5b"), ("instruct", "stream"), ("instruct", "resp_only")]:
        path = projection(variant, trait)
        for i, e in enumerate(load(path)["projections"]):
            for span, (start, end) in spans.items():
                values = e["response"][start:end]
                (got,) = [r for r in rows if r["values_path"] == path and r["vector_index"] == i and r["span"] == span]
                assert got["mean_value"] == pytest.approx(mean(values)) and got["max_value"] == max(values)
                assert got["argmax_token"] == start + values.index(max(values)) and got["n_values"] == len(values)
                assert got["aligned"] == (trait != "stream") and got["layer"] == e["layer"]
                checked += 1
    assert checked == 12
    # the vector's normalised and cosine means over the span
    (got,) = [r for r in rows if r["values_path"] == projection("instruct", "trait") and r["vector_index"] == 0
              and r["span"] == "Never mix"]
    e = load(projection("instruct", "trait"))["projections"][0]
    assert got["mean_normalized"] == pytest.approx(mean(e["normalized_response"][2:4]))
    assert got["mean_cosine"] == pytest.approx(mean(v / n for v, n in zip(e["response"][2:4], e["token_norms"]["response"][2:4])))


def test_sentence_values_carry_cue_p(px):
    response = load(INSTRUCT / "responses/set/1.json")
    e = load(projection("instruct", "trait"))["projections"][1]
    rows = px.rows("SELECT * FROM sentence_values WHERE values_path = ? AND vector_index = 1 ORDER BY sentence_num",
                   [projection("instruct", "trait")])
    expected = []
    for s in response["sentence_boundaries"]:
        values = e["response"][s["token_start"]:s["token_end"]]
        expected.append((s["sentence_num"], s["cue_p"], pytest.approx(mean(values)), max(values),
                         s["token_start"] + values.index(max(values))))
    assert [(r["sentence_num"], r["cue_p"], r["mean_value"], r["max_value"], r["argmax_token"]) for r in rows] == expected


def test_a_trajectory_is_the_prompt_then_the_response_in_token_order(px):
    doc = load(projection("instruct", "trait"))
    e = doc["projections"][0]
    values = e["prompt"] + e["response"]
    rows = px.rows("SELECT * FROM token_trajectory WHERE source_path = ? AND vector_index = 0 ORDER BY sequence_index",
                   [projection("instruct", "trait")])
    tokens = load(INSTRUCT / "responses/set/1.json")["tokens"]
    assert [r["sequence_index"] for r in rows] == list(range(len(values)))
    assert [r["value"] for r in rows] == values and [r["token"] for r in rows] == tokens
    assert [r["running_mean"] for r in rows] == pytest.approx([mean(values[: i + 1]) for i in range(len(values))])
    assert [r["moving_mean"] for r in rows] == pytest.approx(
        [mean(values[max(0, i - 2): i + 3]) for i in range(len(values))])
    # a list a token short has no token to show: they would not be its own
    stream = px.rows("SELECT DISTINCT token FROM token_trajectory WHERE source_path = ? AND segment = 'response'",
                     [projection("instruct", "stream")])
    assert stream == [{"token": None}]


def test_variant_differences_pair_the_same_vector_and_token_of_two_variants(px):
    """instruct and base scored the same tokens (a replay) with the probe at layer 2; their other
    vectors (mean_diff at 4, probe at 3) have no partner."""
    a, b = load(projection("base", "trait"))["projections"][0], load(projection("instruct", "trait"))["projections"][0]
    rows = px.rows("SELECT * FROM variant_differences WHERE variant_a = 'base' AND variant_b = 'instruct' "
                   "ORDER BY segment, token_index")
    expected = [(side, j, x, y, y - x) for side in ("prompt", "response") for j, (x, y) in enumerate(zip(a[side], b[side]))]
    assert [(r["segment"], r["token_index"], r["value_a"], r["value_b"], r["difference"]) for r in rows] == expected
    assert {(r["experiment"], r["prompt_set"], r["prompt_id"], r["trait"], r["layer"], r["method"]) for r in rows} \
        == {("px", "set", "1", "cat/trait", 2, "probe")}
    assert px.rows("SELECT count(*) AS n FROM variant_differences") == [{"n": 2 * len(expected)}]  # both orders


# --- the experiment config ----------------------------------------------------------------------------------


def test_model_variants_come_from_the_experiment_config(px):
    rows = px.rows("SELECT experiment, variant, model, lora, default_for, extra FROM model_variants ORDER BY variant")
    config = {"config": {"created_by": "hand", "defaults": {"steering": "ghost"}}}  # a default naming no variant: kept
    assert [{**r, "extra": json.loads(r["extra"])} for r in rows] == [
        {"experiment": "px", "variant": "base", "model": "Qwen/Qwen2.5-1.5B", "lora": None, "default_for": ["extraction"],
         "extra": config},
        {"experiment": "px", "variant": "instruct", "model": "Qwen/Qwen2.5-1.5B-Instruct", "lora": None,
         "default_for": ["application"], "extra": config},
        {"experiment": "px", "variant": "tuned", "model": "Qwen/Qwen2.5-1.5B-Instruct", "lora": "px/syco-lora",
         "default_for": None, "extra": {"note": "rank 16", **config}},
    ]


def test_a_config_that_is_no_object_of_variants_is_quarantined_saying_so(tmp_path):
    e = tmp_path / "experiments" / "bad"
    e.mkdir(parents=True)
    (e / "config.json").write_text('{"model_variants": ["base"]}')
    w = Warehouse(tmp_path / "wh")
    w.ingest(tmp_path / "experiments")
    (q,) = w.rows("SELECT locator, error FROM quarantine")
    assert q["locator"] == ".model_variants" and "expected an object {variant: {model, lora?}}" in q["error"]


# --- the documented queries ------------------------------------------------------------------------------------


def doc_queries() -> list[str]:
    text = (REPO / "docs" / "token_values.md").read_text().split("## Worked queries")[1]
    return re.findall(r"```sql\n(.*?)```", text, re.DOTALL)


def test_the_worked_queries_of_the_docs_run_and_answer(px):
    """docs/token_values.md's worked queries, on the fixtures: each answers what it says."""
    spans, layers, differences = (px.rows(q) for q in doc_queries())
    # tokens inside 'refusal' spans that carry the trait: "Never mix" (response tokens 2, 3)
    assert {(r["trait"], r["layer"], r["model_variant"], r["token_index"]) for r in spans} >= {("cat/trait", 2, "instruct", 3)}
    assert all(r["category"] == "refusal" and r["aligned"] for r in spans)
    assert layers and all(r["category"] == "refusal" for r in layers)
    assert [(r["span"], r["mean_difference"]) for r in differences] == [("No", 1.0), ("Never mix", 0.75)]


def test_the_delta_table_reads_as_the_docs_say_with_polars(px):
    """Outside readers: the docs' polars snippet gives the view's values."""
    text = (REPO / "docs" / "token_values.md").read_text()
    (snippet,) = re.findall(r"```python\n(.*?)```", text, re.DOTALL)
    scope = {"ROOT": str(px.root)}
    exec(snippet.replace("alignment/deception", "cat/trait"), scope)
    got = sorted(scope["per_token"].rows())
    want = sorted(tuple(r.values()) for r in px.rows(
        "SELECT response_id, segment, token_index, layer, method, value FROM token_values WHERE trait = 'cat/trait'"))
    assert got == want and len(got) == 44


# --- the real files -----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def real(tmp_path_factory) -> Warehouse:
    if not REALDATA.is_dir():
        pytest.skip(f"{REALDATA} is absent: the real-file tests read ../shared/realdata beside the repository")
    w = Warehouse(tmp_path_factory.mktemp("real") / "wh")
    summary = w.ingest(REALDATA / "projections")
    assert summary.records_quarantined == 0, w.rows("SELECT * FROM quarantine")
    return w


@pytest.mark.realdata
def test_real_projection_files_ingest_every_value_aligned(real):
    files = sorted((REALDATA / "projections").rglob("projections/*/*/*/*.json"))
    assert len(files) == 6
    for path in files:
        assert view_values(real, str(path)) == listed_values(str(path))
    assert real.rows("SELECT DISTINCT aligned FROM token_values") == [{"aligned": True}]
    assert real.rows("SELECT count(*) AS n FROM projection_files WHERE response_found AND shape = 'H9'") == [{"n": 6}]


@pytest.mark.realdata
def test_real_span_means_are_the_ones_the_spec_worked_out(real):
    """../shared/formats/projections.md section 7: `guaranteed to succeed` is response tokens [8, 11),
    mean raw 0.0143 and mean cosine 0.0658 for alignment/deception at layer 2."""
    (r,) = real.rows("SELECT * FROM span_values WHERE span = 'guaranteed to succeed' AND trait = 'alignment/deception' "
                     "AND layer = 2")
    assert (r["token_start"], r["token_end"], round(r["mean_value"], 4), round(r["mean_cosine"], 4)) == (8, 11, 0.0143, 0.0658)


@pytest.mark.realdata
def test_the_real_experiment_config_names_each_variants_model(real):
    assert real.rows("SELECT experiment, variant, model, default_for FROM model_variants ORDER BY variant") == [
        {"experiment": "demo_shared", "variant": "base", "model": "synthetic/tiny-qwen3-random", "default_for": ["extraction"]},
        {"experiment": "demo_shared", "variant": "instruct", "model": "synthetic/tiny-qwen3-random",
         "default_for": ["application"]},
    ]
    assert os.path.basename(real.rows("SELECT source_path FROM model_variants LIMIT 1")[0]["source_path"]) == "config.json"
