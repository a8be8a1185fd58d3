"""trait-interp: every variant in tests/fixtures/trait_interp, against golden rows and targeted checks."""

from __future__ import annotations

import json
import math
import os

import pytest

from warehouse.formatkit.records import stable_id

from ..conftest import FIXTURES, ingested_cleanly

TI = FIXTURES / "trait_interp"
EXP = TI / "experiments" / "fx"

ORDER = "ORDER BY source_path, source_locator"


@pytest.fixture(scope="module")
def ti(tmp_path_factory):
    return ingested_cleanly(tmp_path_factory, "ti", TI)


@pytest.mark.parametrize(
    "table, order",
    [
        ("responses", ORDER),
        ("turns", ORDER),
        ("sentence_boundaries", ORDER),
        ("evaluations", ORDER + ", criterion"),
        ("prompts", ORDER),
        ("generation_metadata", ORDER),
    ],
)
def test_golden_rows(ti, golden, table, order):
    golden(f"trait_interp/{table}", ti.rows(f"SELECT * FROM {table} {order}"))


def test_every_file_is_catalogued_with_its_counts(ti):
    rows = ti.rows("SELECT source_path, source_format, status, records, records_ingested, records_quarantined FROM sources")
    assert len(rows) == sum(1 for p in TI.rglob("*.json"))
    assert {r["source_format"] for r in rows} == {"trait_interp"}
    assert all(r["records"] == r["records_ingested"] + r["records_quarantined"] for r in rows)


def test_ids_are_hashes_of_path_and_locator_and_children_point_to_parents(ti):
    for r in ti.rows("SELECT response_id, record_id, source_path, source_locator FROM responses"):
        assert r["response_id"] == stable_id(r["source_path"], r["source_locator"])
        assert r["record_id"] == r["response_id"]  # one output per trait-interp record
    assert ti.one("SELECT count(*) FROM turns t JOIN responses r USING (record_id, response_id)") == 3
    orphans = ti.one(
        "SELECT count(*) FROM (SELECT response_id FROM turns UNION ALL SELECT response_id FROM sentence_boundaries "
        "UNION ALL SELECT response_id FROM evaluations) c WHERE response_id NOT IN (SELECT response_id FROM responses)"
    )
    assert orphans == 0


def test_inference_fields_from_the_path(ti):
    r = ti.rows(
        "SELECT experiment, pipeline, model_variant, prompt_set, prompt_id, trait, position FROM responses "
        "WHERE source_path LIKE '%rm_syco/train_100/7.json'"
    )[0]
    assert r == {
        "experiment": "fx", "pipeline": "inference", "model_variant": "instruct",
        "prompt_set": "rm_syco/train_100", "prompt_id": "7", "trait": None, "position": None,
    }
    old = ti.rows("SELECT model_variant, prompt_set, prompt_id FROM responses WHERE source_path LIKE '%old_set/1.json'")[0]
    assert old == {"model_variant": None, "prompt_set": "old_set", "prompt_id": "1"}
    assert ti.one("SELECT prompt_id FROM responses WHERE source_path LIKE '%simple_math.json'") == "simple_math"


def test_steering_fields_from_the_path(ti):
    rows = ti.rows(
        "SELECT source_path, trait, model_variant, position, prompt_set, run_kind, component, method, layers, "
        "coefficients, run_timestamp FROM responses WHERE pipeline = 'steering' ORDER BY source_path, source_locator"
    )
    by_file = {r["source_path"].rsplit("/", 1)[1]: r for r in rows}
    steered = by_file["L25_c-10.0_2026-01-23_05-39-08.json"]
    assert (steered["trait"], steered["model_variant"], steered["position"], steered["prompt_set"]) == (
        "cat/trait", "instruct", "response__5", "steering")
    assert (steered["run_kind"], steered["component"], steered["method"]) == ("steered", "residual", "probe")
    assert steered["layers"] == [25] and steered["coefficients"] == [-10.0]
    assert str(steered["run_timestamp"]) == "2026-01-23 05:39:08"
    ablation = by_file["L12_attn_contribution_mean_diff.json"]
    assert (ablation["run_kind"], ablation["component"], ablation["method"], ablation["layers"]) == (
        "ablation", "attn_contribution", "mean_diff", [12])
    assert by_file["baseline.json"]["run_kind"] == "baseline"
    old = by_file["L11_c191.0_2025-12-31_20-28-33.json"]
    assert (old["trait"], old["model_variant"], old["prompt_set"], old["component"]) == ("cat/trait", None, None, None)
    assert old["layers"] == [11] and old["coefficients"] == [191.0]


def test_files_outside_an_experiments_tree_have_null_path_fields(ti):
    r = ti.rows("SELECT experiment, pipeline, prompt_set, prompt_id, response FROM responses WHERE source_path LIKE '%outside/%'")
    assert r == [{"experiment": None, "pipeline": None, "prompt_set": None, "prompt_id": None, "response": "Hi there"}]


def test_comma_corrupted_tokens_are_kept_flagged_and_ids_trusted(ti):
    r = ti.rows("SELECT tokens, token_ids, prompt_end, tokens_suspect FROM responses WHERE source_path LIKE '%baseline/1.json'")[0]
    assert ", " in r["tokens"] and r["tokens_suspect"] is True
    assert len(r["token_ids"]) == len(r["tokens"]) == 21 and r["prompt_end"] == 13
    clean = ti.one("SELECT tokens_suspect FROM responses WHERE source_path LIKE '%wrapped/2.json'")
    assert clean is False
    assert ti.one("SELECT tokens_suspect FROM responses WHERE source_path LIKE '%rm_syco/train_100/7.json'") is None


def test_legacy_nested_inference_is_flattened(ti):
    r = ti.rows(
        "SELECT prompt, response, tokens, token_ids, prompt_end, inference_model, prompt_note, capture_date, extra "
        "FROM responses WHERE source_path LIKE '%old_set/1.json'"
    )[0]
    assert r["prompt"] == "<bos>Name a color." and r["response"] == "Red."
    assert r["tokens"] == ["<bos>", "Name", " a", " color", ".", "Red", "."]
    assert r["token_ids"] == [2, 1232, 476, 2881, 235265, 5200, 235265] and r["prompt_end"] == 5
    assert (r["inference_model"], r["prompt_note"]) == ("google/gemma-2-2b-it", "colors")
    # n_tokens equals the lists' lengths here, and is kept as written all the same
    assert json.loads(r["extra"]) == {"metadata": {"temperature": 0.7}, "prompt": {"n_tokens": 5}, "response": {"n_tokens": 2}}


def test_metadata_wrapper_is_flattened(ti):
    r = ti.rows("SELECT inference_model, capture_date, tags, extra FROM responses WHERE source_path LIKE '%wrapped/2.json'")[0]
    assert r == {"inference_model": "google/gemma-2-2b-it", "capture_date": "2025-12-20T08:00:00", "tags": ["old"],
                 "extra": '{"metadata":{"seed":3}}'}


def test_unknown_fields_go_to_extra(ti):
    assert ti.one("SELECT extra->'judge'->>'verdict' FROM responses WHERE source_path LIKE '%simple_math.json'") == "exploits bias 29"
    legacy = ti.rows("SELECT extra FROM responses WHERE source_path LIKE '%old_trait/responses/pos.json'")[0]["extra"]
    for key in ("scenario_idx", "rollout_idx", "full_text", "prompt_token_count", "response_token_count"):
        assert f'"{key}"' in legacy


def test_unicode_escapes_are_decoded(ti):
    assert ti.one("SELECT response FROM responses WHERE source_path LIKE '%simple_math.json'") == "2 + 2 = 4.0 — café math 🚀"


def test_rollout_turns_sentences_and_source(ti):
    resp = ti.rows("SELECT response_id, response, prompt_end, len(token_ids) n, rollout_source->>'environment' env, tags "
                   "FROM responses WHERE source_path LIKE '%rollouts/secret_number/1.json'")[0]
    assert resp["response"] == "" and resp["prompt_end"] == resp["n"] == 20 and resp["env"] == "secret_number"
    turns = ti.rows("SELECT turn_index, role, token_start, token_end, has_thinking, has_tool_calls, tool_names, extra "
                    "FROM turns WHERE response_id = ? ORDER BY turn_index", [resp["response_id"]])
    assert [(t["role"], t["token_start"], t["token_end"]) for t in turns] == [
        ("system", 0, 6), ("user", 6, 12), ("assistant", 12, 20)]
    assert turns[2]["has_thinking"] is True and turns[2]["tool_names"] == ["guess"]
    assert turns[2]["extra"] == '{"latency_ms":812}'
    sentences = ti.rows("SELECT sentence_num, token_start, token_end, cue_p, extra FROM sentence_boundaries ORDER BY sentence_num")
    assert [s["sentence_num"] for s in sentences] == [0, 1, 3]  # gaps are the writer's: kept as written
    assert sentences[2]["cue_p"] == 0.92 and sentences[2]["extra"] == '{"category":"conclusion"}'


def test_steering_scores_are_also_evaluations(ti):
    rows = ti.rows("SELECT e.criterion, e.score FROM evaluations e JOIN responses r USING (response_id) "
                   "WHERE r.source_path LIKE '%L25_c-10.0%' ORDER BY r.source_locator, e.criterion")
    assert rows == [
        {"criterion": "coherence_score", "score": 61.0},
        {"criterion": "trait_score", "score": 88.1},
        {"criterion": "trait_score", "score": 79.0},  # coherence_score null: no row
    ]
    # Python's json writes NaN for a failed judge; the value is kept as NaN, not dropped.
    old = ti.rows("SELECT trait_score, prompt FROM responses WHERE source_path LIKE '%L11_c191.0%'")[0]
    assert math.isnan(old["trait_score"]) and old["prompt"] == "Is the earth flat?"


def test_generation_parameters_are_queryable_per_response(ti):
    rows = ti.rows("SELECT polarity, generation_params->>'temperature' t, generation_params->>'model' m FROM responses "
                   "WHERE pipeline = 'extraction' AND trait = 'cat/trait' ORDER BY polarity")
    assert {(r["polarity"], r["t"], r["m"]) for r in rows} == {("neg", "0.0", "google/gemma-2-2b"), ("pos", "0.0", "google/gemma-2-2b")}
    old = ti.rows("SELECT generation_params->>'model_name' m, generation_params->>'temperature' t FROM responses "
                  "WHERE trait = 'cat/old_trait'")
    assert old == [{"m": "google/gemma-2-2b", "t": "1.0"}]
    gm = ti.rows("SELECT responses_dir, model, temperature, max_new_tokens, rollouts FROM generation_metadata ORDER BY model NULLS LAST, responses_dir")
    assert [(g["responses_dir"].endswith("base/responses"), g["model"], g["temperature"]) for g in gm] == [
        (False, "google/gemma-2-2b", 1.0), (True, "google/gemma-2-2b", 0.0)]


def test_prompt_sets_join_responses(ti):
    prompts = ti.rows("SELECT prompt_set, set_kind, prompt_id, prompt, note, system_prompt FROM prompts "
                      "ORDER BY set_kind, prompt_set, prompt_id")
    assert prompts == [
        {"prompt_set": "benign_control", "set_kind": "inference", "prompt_id": "simple_math", "prompt": "What is 2 + 2?", "note": None, "system_prompt": None},
        {"prompt_set": "benign_control", "set_kind": "inference", "prompt_id": "sky_color", "prompt": "What color is the sky?", "note": None, "system_prompt": None},
        {"prompt_set": "general/baseline", "set_kind": "inference", "prompt_id": "1", "prompt": "What is photosynthesis?", "note": "simple factual question", "system_prompt": "You are concise."},
        {"prompt_set": "general/baseline", "set_kind": "inference", "prompt_id": "2", "prompt": "Write about trees.", "note": "", "system_prompt": "You are concise."},
        {"prompt_set": "cat/trait", "set_kind": "steering", "prompt_id": "0", "prompt": "Is the earth flat?", "note": None, "system_prompt": None},
        {"prompt_set": "cat/trait", "set_kind": "steering", "prompt_id": "1", "prompt": "Is water wet?", "note": None, "system_prompt": None},
    ]
    joined = ti.rows("SELECT prompt_id, r.prompt_note, p.note FROM responses r JOIN prompts p USING (prompt_set, prompt_id) ORDER BY 1")
    assert joined == [
        {"prompt_id": "1", "prompt_note": "simple factual question", "note": "simple factual question"},
        {"prompt_id": "simple_math", "prompt_note": None, "note": None},
    ]


@pytest.fixture(scope="module")
def sets(tmp_path_factory):
    """Prompt sets in the other shapes trait-interp's loaders accept (no responses use them)."""
    return ingested_cleanly(tmp_path_factory, "sets", FIXTURES / "trait_interp_sets")


def test_steering_questions_as_objects_in_a_list_or_a_bare_array(sets):
    """trait-interp's loader reads a question as a string or {"question": ...}, in "questions" or a bare array."""
    rows = sets.rows("SELECT prompt_set, prompt_id, prompt, extra FROM prompts WHERE prompt_set IN ('objects', 'bare') "
                     "ORDER BY prompt_set, prompt_id")
    assert [(r["prompt_set"], r["prompt_id"], r["prompt"], r["extra"]) for r in rows] == [
        ("bare", "0", "Do fish swim?", None),
        ("bare", "1", "Can birds fly?", None),
        ("objects", "0", "Is the moon made of cheese?", None),
        ("objects", "1", "Is ice cold?", None),
    ]


def test_a_set_without_prompts_keeps_its_fields_in_one_row(sets):
    rows = sets.rows("SELECT prompt_id, prompt, source_locator, extra FROM prompts WHERE prompt_set = 'unasked'")
    assert len(rows) == 1 and (rows[0]["prompt_id"], rows[0]["prompt"], rows[0]["source_locator"]) == (None, None, "")
    assert json.loads(rows[0]["extra"]) == {"set": {
        "eval_prompt": "Rate from 0 to 100 how much the answer to {question} agrees with the user.", "questions": []}}


def test_a_near_miss_of_the_legacy_nested_form_names_what_is_missing(wh, tmp_path):
    """An object response without text or tokens is not a trait-interp record: it is not read as NULLs."""
    path = tmp_path / "experiments" / "e" / "inference" / "v" / "responses" / "s" / "1.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"prompt": {"question": "2+2?"}, "response": {"answer": "4"}}))
    wh.ingest(path)
    assert wh.rows("SELECT source_format, error FROM quarantine") == [{"source_format": "trait_interp", "error": (
        'not a trait-interp response: the legacy nested form {"prompt": {"text", "tokens", ...}, "response": '
        '{"text", ...}} needs text, tokens or token_ids in its objects (keys there: answer, question); '
        "pass --format to read it as another format")}]
    assert wh.one("SELECT count(*) FROM responses") == 0


def test_sentence_texts_are_spelled_from_the_stored_tokens(ti):
    rows = ti.rows("SELECT sentence_num, text, cue_p FROM sentence_texts ORDER BY sentence_num")
    assert rows == [
        {"sentence_num": 0, "text": "First.", "cue_p": 0.12},
        {"sentence_num": 1, "text": " Second.", "cue_p": 0.4},
        {"sentence_num": 3, "text": " Therefore (D).", "cue_p": 0.92},
    ]


@pytest.mark.parametrize("path", [
    EXP / "steering/cat/trait/instruct/response__5/steering/responses/baseline.json",  # responses, an array
    TI / "datasets/inference/general/baseline.json",  # a prompt set
    EXP / "extraction/cat/trait/base/responses/metadata.json",  # generation parameters
    FIXTURES / "trait_interp_annotations/experiments/fa/extraction/cat/syco/base/responses/pos_annotations.json",
], ids=["responses", "prompt set", "metadata", "annotations"])
def test_a_files_kind_is_decided_once_and_travels_with_its_records(path, monkeypatch):
    """`records` decides what kind of trait-interp file it reads; `map` reads that from each record's
    envelope and never looks at the path again (it used to, once per record)."""
    from warehouse.formatkit.records import RecordContext
    from warehouse.formatkit.source import SourceFile
    from warehouse.formats.trait_interp import TraitInterp, kinds

    asked = []
    by_path = kinds.kind_of_path.__wrapped__  # not the cache: every question counts
    monkeypatch.setattr(kinds, "kind_of_path", lambda p: asked.append(p) or by_path(p))
    ti = TraitInterp()
    with SourceFile(str(path)) as src:
        records = list(ti.records(src))
    assert len(asked) == 1 and len(records) >= 1
    mapped = [ti.map(r, RecordContext(str(path), r.locator, r.index, "trait_interp")) for r in records if r.error is None]
    assert len(asked) == 1 and mapped


@pytest.mark.parametrize("head, kind", [
    (b'{"response_source": "x.json", "annotations": []}', "annotations"),
    (b'{"metadata": {"detailed_annotations" \n : true}}', "annotations"),  # space before the colon
    (b'{"prompt": "p", "response": "r"}', "responses"),
    (b'{"prompt": "say \\"response_source\\": here", "response": "r"}', "responses"),  # text inside a string
    (b'{"prompt": "the response_source of it", "response": "r"}', "responses"),
    (b'{"response_source" "x"}', "responses"),  # no colon: not a key
])
def test_an_annotation_file_is_told_by_its_keys_not_by_text_inside_strings(head, kind):
    """The content test behind `sniff` and `records` (cheap substring test first, the regex after)."""
    from warehouse.formats.trait_interp import kinds

    assert kinds.kind_of("/data/some_name.json", head) == kind


@pytest.mark.parametrize("path", [
    "experiments/e/steering/results.jsonl", "/x/experiments/e/steering/a/b/results.json",
    "/x/experiments/e/config.json", "experiments/e/config.json", "/x/experiments/e/sub/config.json",
    "datasets/inference/general.json", "/t/datasets/inference/a/b.json", "inference/prompts/p.json",
    "/t/analysis/steering/prompts/trait.json", "datasets/traits/t/steering.json", "/t/datasets/traits/a/b/steering.json",
    "/t/mydatasets/inference/x.json", "/t/datasets/traits/steering.json", "/x/experiments/e/steering/results.jsonl.bak",
    "/x/experiments/e/inference/instruct/responses/set/1.json", "/x/r/pos_annotations_chars.json",
    "/x/experiments/e/inference/v/projections/c/t/set/1.json", "experiments/e/inference/projections/c/t/s/prompt_1.json",
    "/x/experiments/e/inference/v/c/t/residual_stream/a/b/1.json", "/x/experiments/e/inference/c/t/attn_stream/s/1.json",
    "/x/experiments/e/c/t/inference/residual_stream_activations/prompt_1.json", "/x/experiments/e/inference/v/projections/c/1.json",
    "/x/experiments/e/inference/a/b/c/d/residual_stream/s/1.json", "/x/projections/c/t/s/1.json",
])
def test_a_paths_kind_is_what_the_patterns_alone_say(path):
    """kinds asks its path patterns only when the path holds a literal every match holds (a
    substring test before the regex): the answers are the patterns' own."""
    from warehouse.formats.trait_interp import kinds

    def regex_only(p):
        name = os.path.basename(p)
        if kinds._ANNOTATION_SUFFIX.search(name):
            return kinds.ANNOTATIONS
        if name == "generation_metadata.json" or (name == "metadata.json" and os.path.basename(os.path.dirname(p)) in ("responses", "val_responses")):
            return kinds.GENERATION_METADATA
        if kinds._PROMPT_SET_DIRS.search(p) or kinds._STEERING_QUESTIONS.search(p):
            return kinds.PROMPT_SET
        if kinds._EXPERIMENT_CONFIG.search(p):
            return kinds.EXPERIMENT_CONFIG
        stream = kinds._STREAM.search(p)
        if kinds._CURRENT.search(p) or (stream and len(stream["mid"].split("/")) in (2, 3)) or kinds._FIRST.search(p):
            return kinds.PROJECTIONS
        return kinds.RESPONSES

    assert kinds.kind_of_path.__wrapped__(path) == regex_only(path)
    reason = kinds.not_records(path)
    assert (reason is not None) == bool(kinds._STEERING_RESULTS.search(path))
