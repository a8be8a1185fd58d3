"""Export back to trait-interp: round trips (fixtures, samples, generated records and trees), the
loader rule, responses of other formats, and the errors the exporter raises."""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import warehouse
from warehouse.errors import UsageError
from warehouse.formatkit.readers import decode_json
from warehouse.formatkit.records import Record, RecordContext
from warehouse.formats.trait_interp.export import jsonout
from warehouse.formats.trait_interp.responses import map_response
from warehouse.formats.trait_interp.sidecars import map_prompt, set_records
from warehouse.formats.trait_interp.unmap import responses as unmap_responses
from warehouse.formats.trait_interp.unmap import sidecars

from ..conftest import FIXTURES, REPO, Warehouse, normalize_rows

TREES = {
    "fixtures": FIXTURES / "trait_interp",
    "annotation_forms": FIXTURES / "trait_interp_annotations",
    "samples": REPO / "samples",
}
NATIVE = "SELECT response_id FROM responses WHERE source_format = 'trait_interp'"
#: what the round trip compares, per table: the original rows the export must give back
EXPECTED = {
    "responses": "SELECT * FROM responses WHERE source_format = 'trait_interp'",
    "turns": f"SELECT * FROM turns WHERE response_id IN ({NATIVE})",
    "sentence_boundaries": f"SELECT * FROM sentence_boundaries WHERE response_id IN ({NATIVE})",
    "evaluations": f"SELECT * FROM evaluations WHERE response_id IN ({NATIVE})",
    # rows about an exported response (not sentence categories, nor spans of missing responses)
    "annotations": f"SELECT * FROM annotations WHERE response_id IN ({NATIVE})",
    "annotation_sets": f"SELECT * FROM annotation_sets WHERE source_path IN "
                       f"(SELECT source_path FROM annotations WHERE response_id IN ({NATIVE}))",
    "prompts": "SELECT * FROM prompts",
    "generation_metadata": "SELECT * FROM generation_metadata",
}
#: span forms the export writes in the unified form: their rows keep everything but their locators
UNIFIED = ("dense", "hacks", "biases")


def place(path: str | None) -> str | None:
    """A path as the layout keeps it: below the last experiments/ (or datasets/) segment, else the file name."""
    if path is None:
        return None
    m = re.search(r"(?:^|/)((?:experiments|datasets)/(?:(?!experiments/).)*)$", path)
    return m.group(1) if m else path.rsplit("/", 1)[-1]


def comparable(rows: list[dict], relocated: set[str] = frozenset()) -> list[str]:
    """Rows without ids, with paths as the layout keeps them; locators dropped for ``relocated`` files (and
    the entry keys the unified form they are written in names their responses with)."""
    out = []
    for row in normalize_rows(rows):
        row["source_path"] = place(row["source_path"])
        row.pop("responses_dir", None)
        if row.get("target") is not None:
            row["target"] = place(row["target"])
        if row["source_path"] in relocated:
            row.pop("source_locator")
            row.pop("entry_key", None)
        if row.get("form") in UNIFIED:
            row["form"] = "unified"
        out.append(json.dumps(row, sort_keys=True, ensure_ascii=False))
    return sorted(out)


def query(w: Warehouse, sqls: dict[str, str]) -> dict[str, list[dict]]:
    """Several queries on one connection (opening one costs more than these queries)."""
    con = warehouse.connect(w.root)
    try:
        out = {}
        for name, sql in sqls.items():
            rel = con.execute(sql)
            names = [d[0] for d in rel.description]
            out[name] = [dict(zip(names, r)) for r in rel.fetchall()]
        return out
    finally:
        con.close()


@pytest.fixture(scope="module", params=list(TREES))
def trip(request, tmp_path_factory):
    """A tree ingested, its trait-interp responses exported, the export ingested again: both sides' rows."""
    base = tmp_path_factory.mktemp(f"trip-{request.param}")
    original = Warehouse(base / "a")
    original.ingest(TREES[request.param])
    summary = warehouse.export(original.root, "source_format = 'trait_interp'", "trait_interp", base / "out", progress=False)
    again = Warehouse(base / "b")
    again.ingest(base / "out")
    relocated = "SELECT source_path FROM annotation_sets WHERE form IN ('dense', 'hacks', 'biases')"
    before = query(original, {**EXPECTED, "relocated": relocated})
    after = query(again, {**{t: f"SELECT * FROM {t}" for t in EXPECTED}, "quarantine": "SELECT * FROM quarantine"})
    return before, after, summary


@pytest.mark.parametrize("table", list(EXPECTED))
def test_the_round_trip_gives_the_same_rows(trip, table):
    before, after, summary = trip
    assert summary.written == summary.selected
    # what it says it left: rows that belong to no exported response (tests/exports/test_export_carry.py)
    assert all("were not exported" in n for n in summary.notes), summary.notes
    assert after["quarantine"] == []
    relocated = set()
    if table == "annotations":  # written in the unified form: the same rows, at other locators
        relocated = {place(r["source_path"]) for r in before["relocated"]}
    expected, got = comparable(before[table], relocated), comparable(after[table], relocated)
    missing, extra = Counter(expected) - Counter(got), Counter(got) - Counter(expected)
    assert not missing and not extra, f"missing: {list(missing)[:3]}\nextra: {list(extra)[:3]}"


# --- one record: map, write back, map again (the reverse mapping, without storage) ----------------------------

text = st.text(max_size=12)
maybe_text = st.one_of(st.none(), text)
json_scalar = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6),
                        st.floats(allow_nan=False, allow_infinity=False), text)
json_value = st.recursive(json_scalar, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)), max_leaves=6)
TOP_KEYS = {"prompt", "response", "question", "system_prompt", "tokens", "token_ids", "prompt_end", "prefill_end",
            "inference_model", "prompt_note", "capture_date", "tags", "trait_score", "coherence_score", "metadata",
            "source", "turn_boundaries", "sentence_boundaries"}


def unknown_keys(known):
    return st.dictionaries(st.text(min_size=1, max_size=8).filter(lambda k: k not in known), json_value, max_size=3)


def optional(**fields):
    """A dict where each key may be absent."""
    return st.fixed_dictionaries({}, optional=fields)


turn = st.builds(
    lambda fixed, opt, rest: {**fixed, **opt, **rest},
    st.fixed_dictionaries({"role": text, "token_start": st.integers(0, 99), "token_end": st.integers(0, 99)}),
    optional(has_thinking=st.booleans(), has_tool_calls=st.booleans(), tool_names=st.lists(text, max_size=2),
             tool_call_id=maybe_text, tool_name=maybe_text, content=maybe_text, reasoning_content=maybe_text),
    unknown_keys({"role", "token_start", "token_end", *unmap_responses.TURN_KEYS}),
)
sentence = st.builds(
    lambda opt, rest: {**opt, **rest},
    optional(sentence_num=st.integers(0, 50), token_start=st.integers(0, 99), token_end=st.integers(0, 99),
             cue_p=st.one_of(st.none(), st.floats(0, 1))),
    unknown_keys({"sentence_num", "token_start", "token_end", "cue_p"}),
)
score = st.one_of(st.none(), st.floats(allow_infinity=False, width=32))  # NaN included: Python's json writes it
METADATA_FIELDS = {"inference_model", "prompt_note", "capture_date", "tags"}
metadata_fields = optional(inference_model=maybe_text, prompt_note=maybe_text, capture_date=maybe_text,
                           tags=st.lists(text, max_size=2))
metadata_wrapper = st.builds(lambda known, rest: {**known, **rest}, metadata_fields, unknown_keys(METADATA_FIELDS))


@st.composite
def flat_record(draw):
    rec = draw(optional(
        prompt=maybe_text, question=maybe_text, system_prompt=maybe_text, prompt_end=st.integers(0, 9),
        prefill_end=st.integers(0, 9), trait_score=score, coherence_score=score,
        source=st.one_of(st.none(), st.dictionaries(text, json_value, max_size=2)),
        turn_boundaries=st.lists(turn, max_size=3), sentence_boundaries=st.lists(sentence, max_size=3),
        tokens=st.lists(st.sampled_from(["a", ",", ", ", " b", "\u2014"]), max_size=5),
        token_ids=st.lists(st.integers(0, 10**6), max_size=5)))
    rec.update(draw(metadata_fields))
    rec["response"] = draw(maybe_text)
    if draw(st.booleans()):
        rec["metadata"] = draw(metadata_wrapper)
    rec.update(draw(unknown_keys(TOP_KEYS)))
    return rec


@st.composite
def nested_record(draw):
    """Legacy nested inference: each side has text, and its tokens and ids (of one length) or neither."""
    rec = {}
    for side in ("prompt", "response"):
        obj = {"text": draw(maybe_text)}
        if draw(st.booleans()):
            n = draw(st.integers(0, 4))
            obj["tokens"] = draw(st.lists(text, min_size=n, max_size=n))
            obj["token_ids"] = draw(st.lists(st.integers(0, 999), min_size=n, max_size=n))
        obj.update(draw(optional(n_tokens=st.integers(0, 6))))
        obj.update(draw(unknown_keys({"text", "tokens", "token_ids", "n_tokens"})))
        rec[side] = obj
    rec["metadata"] = draw(metadata_wrapper)
    rec.update(draw(optional(system_prompt=maybe_text)))
    rec.update(draw(unknown_keys(TOP_KEYS)))
    return rec


def mapped(value, locator="[0]"):
    out = map_response(value, RecordContext("/p/x.json", locator, 0, "trait_interp"))
    stored = {table: [{k: v for k, v in row.items() if v is not None} for row in rows] for table, rows in out.items()}
    return json.dumps(stored, sort_keys=True)  # an absent column is stored NULL; NaN compares equal as text


@settings(max_examples=150, deadline=None)
@given(record=st.one_of(flat_record(), nested_record()))
def test_a_record_written_back_maps_to_the_same_rows(record):
    value = decode_json(json.dumps(record).encode())
    out = map_response(value, RecordContext("/p/x.json", "[0]", 0, "trait_interp"))
    written = unmap_responses.native_record(out["responses"][0], out.get("turns"), out.get("sentence_boundaries"))
    again = decode_json(jsonout.dumps(written).encode())  # through the file text, as the export writes it
    assert mapped(again) == mapped(value)


prompt_item = st.builds(
    lambda fixed, opt, rest: {**fixed, **opt, **rest},
    optional(id=st.one_of(st.integers(0, 99), st.text(min_size=1, max_size=6))),
    optional(text=maybe_text, prompt=maybe_text, question=maybe_text, note=st.one_of(st.just(""), maybe_text),
             system_prompt=maybe_text),
    unknown_keys({"id", "text", "prompt", "question", "note", "system_prompt", "set"}),
)
question_item = st.one_of(text, st.builds(lambda q: {"question": q}, text))
set_root = st.builds(lambda opt, rest: {**opt, **rest},
                     optional(name=maybe_text, description=maybe_text, system_prompt=maybe_text),
                     unknown_keys({"name", "description", "system_prompt", "prompts", "questions"}))
prompt_set = st.one_of(
    st.builds(lambda root, items: {**root, "prompts": items}, set_root, st.lists(prompt_item, max_size=4)),
    st.builds(lambda root, items: {**root, "questions": items}, set_root, st.lists(question_item, max_size=4)),
    st.lists(prompt_item, min_size=1, max_size=4),
)


def prompt_rows(value) -> list[dict]:
    """The prompts rows of a set document, as the ingest makes them (set_records + map_prompt)."""
    if isinstance(value, list):
        recs = [Record(f"[{i}]", item, index=i) for i, item in enumerate(value)]
    else:
        recs = list(set_records(Record("", value)))
    ctx = RecordContext("/p/datasets/inference/s.json", "", None, "trait_interp")
    return [dict(map_prompt(r, ctx)["prompts"][0], source_locator=r.locator) for r in recs]


@settings(max_examples=100, deadline=None)
@given(value=prompt_set)
def test_a_prompt_set_written_back_gives_the_same_rows(value):
    rows = prompt_rows(value)
    again = decode_json(jsonout.dumps(sidecars.prompt_set_document(rows)).encode())
    assert json.dumps(prompt_rows(again), sort_keys=True) == json.dumps(rows, sort_keys=True)


# --- generated trees: any subset exported and ingested again keeps its rows ---------------------------------

STEERING = "experiments/g/steering/cat/t/inst/response__5/steering/responses"
INFERENCE = "experiments/g/inference/inst/responses"
words = st.text(alphabet="ab .!,\u00e9", max_size=14)
SPAN_KEYS = {"span", "text", "category", "type", "bias", "intensity", "note"}
span_fields = optional(category=st.sampled_from(["x", "y"]), intensity=st.integers(1, 5), note=text)
borderline_span = st.builds(lambda s: {"span": s, "category": "x"}, words)


@st.composite
def span_entries(draw, keys, texts):
    """Unified annotation entries over responses ``keys`` (idx values) whose texts are ``texts``."""
    entries = []
    for _ in range(draw(st.integers(0, 4))):
        i = draw(st.integers(0, len(keys) - 1))
        spans = []
        for _ in range(draw(st.integers(0, 3))):
            t = texts[i]
            a = draw(st.integers(0, len(t)))
            span = draw(st.one_of(st.just(t[a:a + draw(st.integers(0, 5))]), words))
            spans.append({"span": span, **draw(span_fields), **draw(unknown_keys(SPAN_KEYS))})
        entry = {"idx": draw(st.sampled_from([keys[i], str(keys[i])])), "spans": spans}
        entry.update(draw(optional(note=text, borderline=st.lists(borderline_span, max_size=2))))
        entry.update(draw(unknown_keys({"idx", "id", "spans", "borderline", "note"})))
        entries.append(entry)
    return entries


@st.composite
def trees(draw):
    steering = [{"prompt": f"q{i}", "response": draw(words), "system_prompt": None, "trait_score": draw(score),
                 "coherence_score": None, "uid": f"s{i}"} for i in range(draw(st.integers(1, 4)))]
    pids = draw(st.lists(st.sampled_from(["1", "2", "10", "x"]), unique=True, max_size=3))
    inference = {}
    for pid in pids:
        prompt, response = draw(words), draw(words)
        inference[pid] = {"prompt": prompt, "response": response, "system_prompt": None, "tokens": [prompt, response],
                          "token_ids": [1, 2], "prompt_end": 1, "uid": f"i{pid}"}
    files = {f"{STEERING}/baseline.json": steering,
             f"{STEERING}/baseline_annotations.json": {
                 "metadata": {"author": "h"}, "categories": {"x": "X"},
                 "annotations": draw(span_entries(list(range(len(steering))), [r["response"] for r in steering]))}}
    for pid, rec in inference.items():
        files[f"{INFERENCE}/set/{pid}.json"] = rec
    if pids:
        keys = [int(p) if p.isdigit() else p for p in pids]
        files[f"{INFERENCE}/set_annotations.json"] = {
            "annotations": draw(span_entries(keys, [inference[p]["response"] for p in pids]))}
    uids = [r["uid"] for r in steering] + [r["uid"] for r in inference.values()]
    chosen = draw(st.sets(st.sampled_from(uids)))
    return files, sorted(chosen), len(chosen) == len(uids)


UID = "json_extract_string(r.extra, '$.uid')"


def by_uid(w: Warehouse, keep_places: bool) -> dict:
    """Each response's rows (its own, its annotations, its evaluations) by the uid its record carries."""
    # a subset compacts arrays: their places, and the entry keys naming them, are new
    drop = {"source_path", "target"} | ({"source_locator", "record_index", "entry_key"} if not keep_places else set())
    rows: dict[str, list] = {}
    for table in query(w, {
        "responses": f"SELECT {UID} AS uid, r.* FROM responses AS r",
        "annotations": f"SELECT {UID} AS uid, a.* FROM annotations AS a JOIN responses AS r USING (response_id)",
        "evaluations": f"SELECT {UID} AS uid, e.* FROM evaluations AS e JOIN responses AS r USING (response_id)",
    }).values():
        for row in normalize_rows(table):
            if keep_places and row.get("target"):
                row["place"] = place(row["target"])
            kept = {k: v for k, v in row.items() if k not in drop}
            rows.setdefault(row["uid"], []).append(json.dumps(kept, sort_keys=True))
    return {uid: sorted(r) for uid, r in rows.items()}


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(tree=trees())
def test_any_subset_of_a_generated_tree_comes_back_with_its_annotations(tmp_path_factory, tree):
    files, chosen, everything = tree
    base = tmp_path_factory.mktemp("gen")
    for rel, value in files.items():
        path = base / "src" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value))
    original = Warehouse(base / "a")
    original.ingest(base / "src")
    where = "json_extract_string(extra, '$.uid') IN ({})".format(", ".join(f"'{u}'" for u in chosen) or "NULL")
    summary = warehouse.export(original.root, where, "trait_interp", base / "out", progress=False)
    assert summary.written == len(chosen)
    again = Warehouse(base / "b")
    again.ingest(base / "out")
    assert again.rows("SELECT * FROM quarantine") == []
    expected = {u: r for u, r in by_uid(original, everything).items() if u in chosen}
    assert by_uid(again, everything) == expected
    shutil.rmtree(base)


# --- what trait-interp reads: its loader rule and the documented keys --------------------------------------------


def load_responses(path: Path) -> list:
    """trait-interp's loader (docs/response_schema.md, "Loading Responses")."""
    with open(path) as f:
        data = json.load(f)
    return data if isinstance(data, list) else [data]


@pytest.fixture(scope="module")
def everything(tmp_path_factory, samples_wh):
    """The bundled samples, every format, exported as trait_interp."""
    base = tmp_path_factory.mktemp("all")
    w = samples_wh
    summary = warehouse.export(w.root, None, "trait_interp", base / "out", progress=False)
    return w, base / "out", summary


def test_every_exported_file_loads_with_trait_interps_loader_rule(everything):
    _, out, summary = everything
    counts = Counter()
    for path in sorted(out.rglob("*.json")):
        rel = path.relative_to(out).as_posix()
        records_ = load_responses(path)
        if rel.startswith("datasets/"):
            counts["prompt sets"] += 1
            data = json.loads(path.read_text())
            items = data if isinstance(data, list) else data.get("prompts", data.get("questions"))
            assert items and all(isinstance(i, str) or ("id" in i and ("text" in i or "prompt" in i)) for i in items), rel
        elif path.name.endswith("_annotations.json"):
            counts["annotation files"] += 1
            (doc,) = records_
            assert all(isinstance(e["idx"], (int, str)) and all(isinstance(s["span"], str) for s in e["spans"])
                       for e in doc["annotations"]), rel  # the unified form's required keys
        elif path.name in ("metadata.json", "generation_metadata.json"):
            counts["metadata"] += 1
            assert isinstance(records_[0], dict) and len(records_) == 1
        else:
            for r in records_:  # the schema's required keys, and prompt_end with tokens
                counts["responses"] += 1
                if isinstance(r["prompt"], dict):  # a legacy nested record, written back in its own shape
                    assert rel.startswith("experiments/demo/inference/responses/legacy/"), rel
                    assert isinstance(r["prompt"]["text"], str) and isinstance(r["response"]["text"], str), rel
                    continue
                assert isinstance(r["prompt"], str) and isinstance(r["response"], str), rel
                if "tokens" in r:
                    assert isinstance(r["prompt_end"], int) and len(r["token_ids"]) >= r["prompt_end"], rel
    assert counts == {"responses": summary.written, "prompt sets": 4, "annotation files": 2, "metadata": 2}


def test_files_keep_their_shape_tokens_exactly_and_nan_scores(tmp_path):
    w = Warehouse(tmp_path / "wh")
    w.ingest(TREES["fixtures"])
    warehouse.export(w.root, None, "trait_interp", tmp_path / "out", progress=False)
    exp = tmp_path / "out" / "experiments" / "fx"
    inference = json.loads((exp / "inference/instruct/responses/general/baseline/1.json").read_text())
    assert isinstance(inference, dict) and inference["tokens"][16] == ", "  # as stored (the comma bug's output)
    assert list(inference)[:6] == ["prompt", "response", "system_prompt", "tokens", "token_ids", "prompt_end"]
    text = (exp / "inference/instruct/responses/benign_control/simple_math.json").read_text()
    assert "caf\\u00e9 math \\ud83d\\ude80" in text  # ensure_ascii, as trait-interp's writers
    assert '\n  "judge": {' in text  # an extra field, back at the top level
    steering = (exp / "steering/cat/trait/response__5/responses/L11_c191.0_2025-12-31_20-28-33.json").read_text()
    assert json.loads(steering) == [{"prompt": "Is the earth flat?", "response": "Yes yes yes", "system_prompt": None,
                                      "trait_score": pytest.approx(float("nan"), nan_ok=True), "coherence_score": 12.0}]
    assert '"trait_score": NaN' in steering
    legacy = json.loads((exp / "inference/responses/old_set/1.json").read_text())
    # nested as it was (its n_tokens go back into the objects); the metadata wrapper's four fields at the top level
    assert legacy["prompt"] == {"text": "<bos>Name a color.", "tokens": ["<bos>", "Name", " a", " color", "."],
                                "token_ids": [2, 1232, 476, 2881, 235265], "n_tokens": 5}
    assert legacy["response"]["n_tokens"] == 2 and legacy["metadata"] == {"temperature": 0.7}
    assert json.loads((tmp_path / "out/other/responses.json").read_text())[0]["response"] == "Hi there"


def test_files_as_trait_interps_writers_wrote_them_come_back_as_they_were(tmp_path):
    """Inference files as ``save_response_json`` writes them (``prompt_note`` null too), annotation entries
    naming their response by ``"idx": "35"`` and ``"id": 7``: the export gives back the same JSON values,
    key for key, of the same types (trait-interp's reader compares an ``idx`` strictly)."""
    source = FIXTURES / "trait_interp_writer"
    w = Warehouse(tmp_path / "wh")
    w.ingest(source)
    warehouse.export(w.root, None, "trait_interp", tmp_path / "out", progress=False)
    written = sorted(p.relative_to(tmp_path / "out") for p in (tmp_path / "out").rglob("*.json"))
    assert written == sorted(p.relative_to(source) for p in source.rglob("*.json"))
    for rel in written:
        assert json.loads((tmp_path / "out" / rel).read_text()) == json.loads((source / rel).read_text()), rel
    # a subset: the array is compacted, its entry's idx follows the new place and stays a string
    steer = "experiments/wr/steering/syco/flattery/instruct/response__5/workplace/responses"
    warehouse.export(w.root, "pipeline = 'steering' AND record_index = 1", "trait_interp", tmp_path / "part",
                     progress=False)
    [entry] = json.loads((tmp_path / "part" / steer / "baseline_annotations.json").read_text())["annotations"]
    assert entry["idx"] == "0"


def test_a_newline_in_a_folder_name_keeps_the_path_fields_and_the_export_reads_back(tmp_path):
    """Every path-derived field of a file under folders named with a newline, and the export writes it at its
    place (it wrote one file named ``experiments``, which ingested back as nothing)."""
    tree = tmp_path / "src" / "experiments" / "e\nx"
    inference = tree / "inference" / "instruct" / "responses" / "set\nA" / "1.json"
    steering = tree / "steering" / "pv" / "s\nyc" / "instruct" / "response__5" / "q\ns" / "responses" / "baseline.json"
    for path, value in ((inference, {"prompt": "p", "response": "r"}),
                        (steering, [{"prompt": "q", "response": "s", "system_prompt": None, "trait_score": 1.0,
                                     "coherence_score": 2.0}])):
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(value))
    fields = "experiment, pipeline, model_variant, trait, position, prompt_set, prompt_id, run_kind, response"
    w = Warehouse(tmp_path / "wh")
    w.ingest(tmp_path / "src")
    expected = [
        {"experiment": "e\nx", "pipeline": "inference", "model_variant": "instruct", "trait": None, "position": None,
         "prompt_set": "set\nA", "prompt_id": "1", "run_kind": None, "response": "r"},
        {"experiment": "e\nx", "pipeline": "steering", "model_variant": "instruct", "trait": "pv/s\nyc",
         "position": "response__5", "prompt_set": "q\ns", "prompt_id": None, "run_kind": "baseline", "response": "s"},
    ]
    assert w.rows(f"SELECT {fields} FROM responses ORDER BY pipeline") == expected
    warehouse.export(w.root, None, "trait_interp", tmp_path / "out", progress=False)
    assert sorted(p.relative_to(tmp_path / "out") for p in (tmp_path / "out").rglob("*.json")) == sorted(
        p.relative_to(tmp_path / "src") for p in (inference, steering))
    again = Warehouse(tmp_path / "again")
    again.ingest(tmp_path / "out")
    assert again.rows(f"SELECT {fields} FROM responses ORDER BY pipeline") == expected


@pytest.mark.realdata
def test_real_files_written_by_trait_interp_come_back_as_they_were(realdata, tmp_path):
    source = realdata / "projections"
    w = Warehouse(tmp_path / "wh")
    w.ingest(source)
    warehouse.export(w.root, None, "trait_interp", tmp_path / "out", progress=False)
    written = sorted(p.relative_to(tmp_path / "out") for p in (tmp_path / "out").rglob("*.json"))
    assert any(p.name == "demo_set_annotations.json" for p in written) and len(written) == 5
    for rel in written:
        assert json.loads((tmp_path / "out" / rel).read_text()) == json.loads((source / rel).read_text()), rel


def test_a_subset_compacts_arrays_and_renumbers_their_annotations(everything, tmp_path):
    w, _, _ = everything
    where = "experiment = 'demo' AND run_kind = 'baseline' AND record_index IN (1, 3)"
    warehouse.export(w.root, where, "trait_interp", tmp_path / "out", progress=False)
    steer = tmp_path / "out/experiments/demo/steering/pv_natural/sycophancy/instruct/response__5/steering/responses"
    originals = w.rows(f"SELECT response FROM responses WHERE {where} ORDER BY record_index")
    assert [r["response"] for r in load_responses(steer / "baseline.json")] == [r["response"] for r in originals]
    assert [e["idx"] for e in json.loads((steer / "baseline_annotations.json").read_text())["annotations"]] == [0, 1]
    again = Warehouse(tmp_path / "b")
    again.ingest(tmp_path / "out")
    spans = "SELECT r.response, a.span, a.char_start, a.char_end FROM annotations a JOIN responses r USING (response_id)"
    selected = f" WHERE r.response_id IN (SELECT response_id FROM responses WHERE {where})"
    assert sorted(map(str, again.rows(spans))) == sorted(map(str, w.rows(spans + selected)))


def test_responses_of_other_formats_become_minimal_records_under_other(everything, tmp_path):
    w, out, summary = everything
    foreign = w.rows("SELECT source_format, prompt, response, system_prompt, source_locator FROM responses "
                     "WHERE source_format <> 'trait_interp' AND prompt IS NOT NULL AND response IS NOT NULL")
    left_out = w.one("SELECT count(*) FROM responses WHERE source_format <> 'trait_interp' "
                     "AND (prompt IS NULL OR response IS NULL)")
    counts = Counter(r["source_format"] for r in foreign)
    assert summary.notes[0].startswith(
        f"{len(foreign)} responses of other formats ({counts['afterimage']} afterimage, {counts['dataloop']} dataloop, "
        f"{counts['scale']} scale) were written under other/ as minimal records (prompt, response, system_prompt, "
        "provenance in source); their extra fields and their ") and summary.notes[0].endswith(" are not carried")
    assert summary.notes[1] == (f"{left_out} responses of other formats have no prompt or no response text and were "
                                "left out (trait-interp records need both)")
    assert (out / "other/afterimage/conversations_20260112_101500.jsonl.json").is_file()
    again = Warehouse(tmp_path / "b")
    again.ingest(out / "other")
    rows = again.rows("SELECT source_format, prompt, response, system_prompt, rollout_source->>'source_format' AS origin, "
                      "rollout_source->>'source_locator' AS locator FROM responses")
    assert {r["source_format"] for r in rows} == {"trait_interp"}
    assert sorted(str((r["origin"], r["prompt"], r["response"], r["system_prompt"], r["locator"])) for r in rows) == sorted(
        str((r["source_format"], r["prompt"], r["response"], r["system_prompt"], r["source_locator"])) for r in foreign)


def test_files_of_other_formats_go_to_other_even_from_an_experiments_tree(tmp_path):
    src = tmp_path / "src/experiments/e/afterimage"
    src.mkdir(parents=True)
    shutil.copy(REPO / "samples/afterimage/conversations_20260112_101500.jsonl", src)
    w = Warehouse(tmp_path / "wh")
    w.ingest(tmp_path / "src")
    warehouse.export(w.root, None, "trait_interp", tmp_path / "out", progress=False)
    assert [p.relative_to(tmp_path / "out").as_posix() for p in (tmp_path / "out").rglob("*") if p.is_file()] == [
        "other/conversations_20260112_101500.jsonl.json"]


def test_two_trees_with_one_layout_cannot_be_merged(tmp_path):
    for tree in ("a", "b"):
        src = tmp_path / tree / "experiments/e/inference/v/responses/set"
        src.mkdir(parents=True)
        (src / "1.json").write_text(json.dumps({"prompt": "p", "response": tree}))
    w = Warehouse(tmp_path / "wh")
    w.ingest(tmp_path / "a", tmp_path / "b")
    with pytest.raises(UsageError) as e:
        warehouse.export(w.root, None, "trait_interp", tmp_path / "out", progress=False)
    assert str(e.value) == (
        f"cannot export as trait_interp: {tmp_path}/a/experiments/e/inference/v/responses/set/1.json and "
        f"{tmp_path}/b/experiments/e/inference/v/responses/set/1.json would both be written to "
        "experiments/e/inference/v/responses/set/1.json (two experiments trees with the same layout); "
        f"select one tree with --where, e.g. \"source_path LIKE '{tmp_path}/a/%'\""
    )
    assert not (tmp_path / "out").exists() and not list(tmp_path.glob(".out*"))
    s = warehouse.export(w.root, f"source_path LIKE '{tmp_path}/a/%'", "trait_interp", tmp_path / "out", progress=False)
    assert s.written == 1


def test_the_cli_exports_trait_interp(everything, tmp_path, capsys):
    from warehouse.cli import main

    w, _, _ = everything
    assert main(["export", "--root", str(w.root), "--where", "prompt_set = 'rm_syco/train_100'", "--format",
                 "trait_interp", "--out", str(tmp_path / "ti")]) == 0
    out, err = capsys.readouterr()
    assert out == "" and "exported 8 of 8 selected responses as trait_interp" in err
    assert sorted(p.name for p in (tmp_path / "ti/experiments/demo/inference/instruct/responses").iterdir()) == [
        "rm_syco"]
    assert (tmp_path / "ti/datasets/inference/rm_syco/train_100.json").is_file()
