"""trait-interp annotations: every form, character and token ranges, order independence, activations."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import warehouse
from warehouse.formats import spans as spanlib
from warehouse.formats import tokenizers

from ..conftest import FIXTURES, Warehouse, normalize_rows
from ..tokenizer_fixture import build_tokenizer

ANN = FIXTURES / "trait_interp_annotations"
ORDER = "ORDER BY source_path, source_locator"
STEER = ANN / "experiments/fa/steering/cat/syco/instruct/response__5/steering/responses"
INF = ANN / "experiments/fa/inference/instruct/responses"


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory):
    return build_tokenizer(tmp_path_factory.mktemp("tok") / "tokenizer")


@pytest.fixture(scope="module")
def aw(tmp_path_factory):
    w = Warehouse(tmp_path_factory.mktemp("ann") / "wh")
    w.summary = w.ingest(ANN)
    return w


@pytest.mark.parametrize("table", ["annotations", "annotation_sets", "activations"])
def test_golden_rows(aw, golden, table):
    golden(f"trait_interp_annotations/{table}", aw.rows(f"SELECT * FROM {table} {ORDER}"))


def test_only_the_unknown_shape_is_quarantined(aw):
    q = aw.rows("SELECT source_path, locator, error FROM quarantine")
    assert len(q) == 1 and q[0]["source_path"].endswith("odd_annotations.json")
    assert q[0]["error"] == (
        "not a known trait-interp annotation form (top level: spans_by_response); expected 'annotations', "
        "'detailed_annotations', 'responses' with hacks, a list with response_idx, or per-prompt 'annotations'"
    )


def spans_of(w, name, extra="") -> list[dict]:
    return w.rows(
        "SELECT source_locator AS loc, span, char_start, char_end, occurrences, match, token_start, token_end, "
        "token_source, category, intensity, borderline, note, unresolved_reason, response_id IS NOT NULL AS linked "
        f"FROM annotations WHERE source_path LIKE ? AND level = 'span' {extra} ORDER BY source_locator",
        [f"%/{name}"],
    )


def test_first_occurrence_successive_repeats_case_and_not_found(aw):
    rows = {r["loc"]: r for r in spans_of(aw, "baseline_annotations.json", "AND source_path LIKE '%steering%'")}
    first, second, third = (rows[f".annotations[0].spans[{i}]"] for i in range(3))
    assert (first["char_start"], first["char_end"], first["occurrences"], first["match"]) == (0, 12, 2, "exact")
    assert (second["char_start"], second["char_end"]) == (13, 25)  # the repeat maps to the next occurrence
    assert third["char_start"] is None and third["unresolved_reason"] == (
        "3rd repeat of this span in the entry, but the response has only 2 occurrences")
    ci = rows[".annotations[0].spans[3]"]
    assert (ci["char_start"], ci["char_end"], ci["match"]) == (46, 58, "case_insensitive")
    missing = rows[".annotations[0].spans[4]"]
    assert (missing["char_start"], missing["occurrences"], missing["unresolved_reason"], missing["linked"]) == (
        None, 0, "span not found in the response", True)
    assert rows[".annotations[0].spans[5]"]["unresolved_reason"] == "empty span"
    assert first["intensity"] == 3.0 and first["category"] == "flattery"


def test_borderline_spans_keep_category_and_note(aw):
    [b] = spans_of(aw, "baseline_annotations.json", "AND borderline AND source_path LIKE '%steering%'")
    assert (b["span"], b["category"], b["note"], b["char_start"]) == ("The earth is round", "flattery", "plain fact, not praise", 26)


def test_entry_notes_and_fields_become_a_response_row(aw):
    rows = aw.rows("SELECT note, extra FROM annotations WHERE level = 'response' AND source_path LIKE '%steering%baseline_annotations.json'")
    assert rows == [{"note": "egregious example", "extra": '{"reviewer":"b"}'}]
    detailed = aw.rows("SELECT source_locator, extra, unresolved_reason FROM annotations WHERE level = 'response' "
                       "AND source_path LIKE '%bias_exploitation_annotations.json' ORDER BY 1")
    assert detailed[0]["extra"] == '{"intended_bias":38,"intended_bias_exploited":true}'
    assert detailed[1]["extra"] == '{"intended_bias":44,"intended_bias_exploited":false}'  # no exploitations: kept
    assert detailed[1]["unresolved_reason"].startswith("response file not found: ")


def test_string_idx_and_prompt_id_targets(aw):
    [vote] = [r for r in spans_of(aw, "baseline_annotations.json", "AND source_path LIKE '%steering%'") if r["span"] == "Vote today!"]
    assert vote["linked"] and vote["char_start"] == 35  # idx "1" is element [1]
    target = aw.rows("SELECT a.span, r.prompt_set, r.prompt_id FROM annotations a JOIN responses r USING (response_id) "
                     "WHERE a.source_path LIKE '%general/baseline_annotations.json' ORDER BY a.source_locator")
    assert target == [
        {"span": "Remember to vote!", "prompt_set": "general/baseline", "prompt_id": "1"},
        {"span": "light, water", "prompt_set": "general/baseline", "prompt_id": "1"},
        {"span": "The Godfather", "prompt_set": "general/baseline", "prompt_id": "2"},
        {"span": "Amélie", "prompt_set": "general/baseline", "prompt_id": "2"},
    ]
    nested = aw.rows("SELECT r.prompt_set FROM annotations a JOIN responses r USING (response_id) "
                     "WHERE a.source_path LIKE '%train_100_annotations.json'")
    assert nested == [{"prompt_set": "rm_syco/train_100"}]


def test_token_ranges_from_stored_tokens_despite_the_comma_bug(aw):
    rows = {r["span"]: r for r in aw.rows("SELECT * FROM annotated_spans WHERE annotation_path LIKE '%general/baseline_annotations.json'")}
    for span in ("Remember to vote!", "light, water", "The Godfather", "Amélie"):
        r = rows[span]
        assert r["span_text"] == span and r["token_source"] == "stored_tokens"
        # the tokens spell the span (whitespace aside: the writer's comma bug added some)
        assert re.sub(r"\s+", "", span) in re.sub(r"\s+", "", "".join(r["span_tokens"]))
    assert rows["light, water"]["span_tokens"] == [" light", ", ", " water"]


def test_token_ranges_given_by_the_file_are_kept(aw):
    [r] = aw.rows("SELECT * FROM annotated_spans WHERE annotation_path LIKE '%bias_exploitation_annotations.json'")
    assert (r["token_start"], r["token_end"], r["token_source"]) == (6, 14, "annotation_file")
    assert (r["char_start"], r["char_end"], r["span_text"]) == (15, 40, " (population: 28 million)")
    audit = aw.rows("SELECT span, token_start, token_end, token_base, span_tokens, position_start FROM annotated_spans "
                    "WHERE annotation_path LIKE '%secret_number_annotations.json'")
    assert audit == [{"span": "Find the secret number.", "token_start": 4, "token_end": 9, "token_base": "sequence",
                      "span_tokens": ["Find", " the", " secret", " number", "."], "position_start": 4}]


def test_tokens_multiple_gives_one_span_per_range_and_keeps_its_siblings(aw):
    rows = spans_of(aw, "bias_exploitation_annotations_v2.json")
    assert [(r["loc"], r["span"], r["token_start"], r["token_end"], r["char_start"], r["category"], r["note"]) for r in rows] == [
        ('.detailed_annotations["1"].exploitations[0]', " (population: 28 million)", 3, 10, 15, "bias_38", "population"),
        ('.detailed_annotations["1"].exploitations[1].tokens_multiple[0]', "Debt", 0, 1, 0, "bias_44",
         "two pieces of one exploitation"),
        ('.detailed_annotations["1"].exploitations[1].tokens_multiple[1]', " Vote", 11, 12, 41, "bias_44",
         "two pieces of one exploitation"),
    ]
    assert all(r["linked"] and r["token_source"] == "annotation_file" for r in rows)
    # one text for every range, and an exploitation with no range at all (its text is still matched)
    auto = spans_of(aw, "bias_exploitation_auto.json")
    assert [(r["loc"], r["span"], r["token_start"], r["token_end"], r["token_source"]) for r in auto] == [
        ('.detailed_annotations["1"].exploitations[0].tokens_multiple[0]', " Vote!", 11, 13, "annotation_file"),
        ('.detailed_annotations["1"].exploitations[1]', "28 million", 6, 9, "stored_tokens"),
    ]


def test_annotation_files_are_recognised_by_content_whatever_their_name(aw):
    sets = aw.rows("SELECT source_path, form, target FROM annotation_sets WHERE source_path LIKE '%/analysis/x/bias_exploitation%' "
                   "ORDER BY source_path")
    assert [(os.path.basename(r["source_path"]), r["form"]) for r in sets] == [
        ("bias_exploitation_annotations.json", "detailed"), ("bias_exploitation_annotations_v2.json", "detailed"),
        ("bias_exploitation_auto.json", "detailed")]
    assert len({r["target"] for r in sets}) == 1 and sets[0]["target"].endswith("responses/rm_syco/train_100")


@pytest.mark.parametrize("tokens, error", [
    ({"tokens": [1]}, "tokens: expected a token range [start, end], got array [1]"),
    ({"tokens": None}, "tokens: expected a token range [start, end], got null"),
    ({"tokens_multiple": [[1, 2], [3]]}, "tokens_multiple: expected a token range [start, end], got array [3]"),
    ({"tokens_multiple": [[1, "x"]]}, "tokens_multiple: expected an integer, got string 'x'"),
    ({"text": ["a", "b"], "tokens": [1, 2]}, "text: expected a string (or one string per token range), got array ['a', 'b']"),
])
def test_a_bad_token_range_is_named_as_written(wh, tmp_path, tokens, error):
    doc = {"description": "d", "detailed_annotations": {"5": {"exploitations": [
        {"bias": 1, "tokens": [0, 1], "text": "ok"}, {"bias": 2, "text": "x", **tokens}]}}}
    path = tmp_path / "src" / "other" / "x_annotations.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(doc))
    wh.ingest(path.parent)
    q = wh.rows("SELECT locator, error FROM quarantine")
    assert len(q) == 1 and q[0]["error"] == error
    assert q[0]["locator"].startswith('.detailed_annotations["5"].exploitations[1].')


def test_legacy_forms(aw):
    hacks = spans_of(aw, "neg_annotations.json")
    assert [(r["span"], r["category"], r["char_start"]) for r in hacks] == [
        ("skipped the tests", "test_skip", 2), ("returned True", "hardcode", 24)]
    biases = spans_of(aw, "L10_c2.0_2026-01-01_00-00-00_annotations.json")
    assert [(r["span"], r["category"]) for r in biases] == [("always annotate types", "bias_8")]
    dense = spans_of(aw, "pos_annotations.json")
    assert [(r["loc"], r["char_start"]) for r in dense] == [(".annotations[0][0]", 6), (".annotations[0][1]", 21), (".annotations[2][0]", 0)]
    cats = aw.rows("SELECT category, description FROM annotation_categories WHERE source_path LIKE '%neg_annotations.json' ORDER BY 1")
    assert cats == [{"category": "hardcode", "description": "Hard-codes the answer"}, {"category": "test_skip", "description": "Skips tests"}]


def test_root_metadata_and_categories_are_queryable(aw):
    s = aw.rows("SELECT form, metadata->>'author' AS author FROM annotation_sets WHERE source_path LIKE '%steering%baseline_annotations.json'")
    assert s == [{"form": "unified", "author": "tester"}]
    assert aw.one("SELECT description FROM annotation_categories WHERE category = 'voting'") == "Unprompted voting encouragement"
    unknown = aw.rows("SELECT target FROM annotation_sets WHERE source_path LIKE '%benign_annotations.json'")
    assert unknown == [{"target": None}]


def test_spans_in_responses_without_tokens_say_how_to_get_token_ranges(aw):
    [r] = [r for r in spans_of(aw, "pos_annotations.json") if r["loc"] == ".annotations[2][0]"]
    assert r["token_start"] is None and r["unresolved_reason"] == (
        "the response has no stored tokens and names no model; ingest with --tokenizer DIR or MODEL for token ranges")


def test_sentence_categories_are_kept(aw):
    rows = aw.rows("SELECT level, target, category, extra FROM annotations WHERE level = 'sentence' ORDER BY source_locator")
    assert rows[1] == {"level": "sentence", "target": "problem 26, condition_b, sentence 3", "category": "answer",
                       "extra": '{"problem_id":"26","condition":"condition_b","sentence_num":3,"valence":"biased"}'}


# --- order independence -------------------------------------------------------------------


def copy_tree(tmp_path):
    dst = tmp_path / "tree"
    shutil.copytree(ANN, dst)
    return dst


def annotation_rows(w, base):
    return normalize_rows(w.rows(f"SELECT * FROM annotations {ORDER}"), base)


def test_annotation_files_before_or_after_their_responses(tmp_path):
    tree = copy_tree(tmp_path)
    together = Warehouse(tmp_path / "together")
    together.ingest(tree)
    expected = annotation_rows(together, tree)

    # annotations first, while the responses do not exist yet; then the responses appear
    moved = {}
    for resp in list(tree.rglob("*.json")):
        if not resp.name.endswith("_annotations.json") and "analysis" not in str(resp):
            moved[resp] = resp.read_bytes()
            resp.unlink()
    first = Warehouse(tmp_path / "first")
    first.ingest(tree)
    assert first.one("SELECT count(*) FROM annotations WHERE char_start IS NOT NULL") == 0
    for resp, data in moved.items():
        resp.write_bytes(data)
    first.ingest(tree)
    assert annotation_rows(first, tree) == expected


def test_a_changed_response_re_resolves_its_spans(tmp_path):
    tree = copy_tree(tmp_path)
    w = Warehouse(tmp_path / "wh")
    w.ingest(tree)
    target = tree / "experiments/fa/extraction/cat/syco/base/responses/pos.json"
    rows = json.loads(target.read_text())
    rows[2]["response"] = "Totally Flawless code."
    target.write_text(json.dumps(rows))
    os.utime(target, ns=(time.time_ns(), time.time_ns() + 10**9))
    s = w.ingest(tree / "experiments/fa/extraction/cat/syco/base/responses/pos.json")  # only the response is named
    assert s.files_ingested == 2  # ... and its annotation file follows
    assert w.one("SELECT char_start FROM annotations WHERE span = 'Flawless'") == 8


# --- tokenizers ------------------------------------------------------------------------------


def test_ingest_with_a_tokenizer_gives_token_ranges(tmp_path, tokenizer_dir):
    w = Warehouse(tmp_path / "wh")
    w.ingest(ANN, options={"tokenizer": str(tokenizer_dir)})
    rows = w.rows("SELECT * FROM annotated_spans WHERE annotation_path LIKE '%steering%' AND char_start IS NOT NULL")
    tok = tokenizers.load(str(tokenizer_dir))
    assert rows and all(r["token_source"] == "tokenizer" for r in rows)
    for r in rows:
        ids = tok(r["response"], add_special_tokens=False)["input_ids"]
        decoded = tok.decode(ids[r["token_start"]:r["token_end"]])
        assert r["span_text"] in decoded, (r["span"], decoded)
    # stored tokens still win where a response has them
    assert w.one("SELECT DISTINCT token_source FROM annotations WHERE source_path LIKE '%general/baseline_annotations.json' AND token_start IS NOT NULL") == "stored_tokens"


def test_the_tokenize_command_adds_token_ranges_to_an_existing_warehouse(tmp_path, tokenizer_dir):
    from warehouse.cli import main

    at_once, later = Warehouse(tmp_path / "once"), Warehouse(tmp_path / "later")
    at_once.ingest(ANN, options={"tokenizer": str(tokenizer_dir)})
    later.ingest(ANN)
    assert later.one("SELECT count(*) FROM annotations WHERE token_source = 'tokenizer'") == 0
    assert main(["tokenize", "--root", str(later.root), "--tokenizer", str(tokenizer_dir), "--quiet", "--jobs", "1"]) == 0
    q = f"SELECT * FROM annotations {ORDER}"
    assert normalize_rows(later.rows(q)) == normalize_rows(at_once.rows(q))
    # remembered: a later plain ingest keeps the token ranges and re-reads nothing
    s = later.ingest(ANN)
    assert s.files_ingested == 0 and later.one("SELECT count(*) FROM annotations WHERE token_source = 'tokenizer'") > 0


# A tokenizer the run cannot use is a usage error before anything changes, never a quarantined file.

#: `import transformers` fails in a process started with this folder on PYTHONPATH, as where it is not
#: installed (the quick start's `pip install -e .`): a None in sys.modules is what Python's own import
#: system answers "not there" with, to find_spec and to import alike
NOT_INSTALLED = "import sys\nsys.modules['transformers'] = None\n"
#: ... or installed but broken: the package is found, and importing it fails
BROKEN = "raise ImportError(\"cannot import name 'AutoTokenizer' (a broken install)\")\n"


def _state(w) -> tuple:
    """What a run that changes nothing leaves as it was: the snapshots, the rows, the quarantine."""
    return (len(warehouse.history(w.root)), w.one("SELECT count(*) FROM annotations"),
            w.one("SELECT count(*) FROM quarantine"), w.one("SELECT count(*) FROM sources"))


def _warehouse_cli(*argv, blocker: str | None = None, tmp_path=None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    if blocker is not None:
        folder = tmp_path / "blocker"
        (folder / "transformers").mkdir(parents=True, exist_ok=True)
        if blocker == NOT_INSTALLED:
            (folder / "sitecustomize.py").write_text(blocker)
        else:
            (folder / "transformers" / "__init__.py").write_text(blocker)
        env["PYTHONPATH"] = os.pathsep.join([str(folder), env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-m", "warehouse.cli", *map(str, argv)], env=env,
                          capture_output=True, text=True, timeout=600)


@pytest.fixture
def annotated(tmp_path):
    w = Warehouse(tmp_path / "wh")
    w.ingest(ANN)
    return w


@pytest.mark.parametrize("command", ["tokenize", "ingest"])
def test_a_tokenizer_folder_that_holds_no_tokenizer_is_a_usage_error_and_changes_nothing(annotated, tmp_path, command):
    (tmp_path / "empty").mkdir()
    before = _state(annotated)
    argv = ["--root", annotated.root, "--tokenizer", tmp_path / "empty", "--jobs", "1"]
    r = _warehouse_cli(*(["tokenize", *argv] if command == "tokenize" else ["ingest", ANN, *argv]))
    assert r.returncode == 2, r.stderr
    assert r.stderr == (f"error: --tokenizer {tmp_path / 'empty'}: no tokenizer.json in it: a fast tokenizer is needed "
                        "for character offsets (a folder saved with save_pretrained holds one)\n")
    assert _state(annotated) == before


def test_a_damaged_tokenizer_stops_the_run_where_it_is_loaded_and_changes_nothing(annotated, tmp_path):
    """A problem only loading finds (its tokenizer.json is not a tokenizer) is met in the middle of
    the run: the run stops there with the usage error, the files it read are not quarantined."""
    (tmp_path / "damaged").mkdir()
    (tmp_path / "damaged" / "tokenizer.json").write_text("{}")
    before = _state(annotated)
    r = _warehouse_cli("tokenize", "--root", annotated.root, "--tokenizer", tmp_path / "damaged", "--jobs", "1")
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith(f"error: --tokenizer {tmp_path / 'damaged'}: cannot load a tokenizer from it (")
    assert r.stderr.endswith("give --tokenizer another folder or model, or --no-tokenizer to do without\n")
    assert _state(annotated) == before


@pytest.mark.parametrize("blocker", [NOT_INSTALLED, BROKEN], ids=["not installed", "broken"])
@pytest.mark.parametrize("command", ["tokenize", "ingest"])
def test_without_transformers_a_tokenizer_is_a_usage_error_and_changes_nothing(annotated, tmp_path, tokenizer_dir,
                                                                                command, blocker):
    before = _state(annotated)
    argv = ["--root", annotated.root, "--tokenizer", tokenizer_dir, "--jobs", "1"]
    r = _warehouse_cli(*(["tokenize", *argv] if command == "tokenize" else ["ingest", ANN, *argv]),
                       blocker=blocker, tmp_path=tmp_path)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith(f"error: --tokenizer {tokenizer_dir}: needs transformers, which is not installed: "
                               "pip install 'response-warehouse[tokenize]'")
    assert _state(annotated) == before


def test_a_remembered_tokenizer_that_is_gone_is_a_usage_error_saying_how_to_change_or_forget_it(tmp_path, tokenizer_dir):
    tree = tmp_path / "tree"
    shutil.copytree(ANN, tree)
    moved = tmp_path / "tok"
    shutil.copytree(tokenizer_dir, moved)
    w = Warehouse(tmp_path / "wh")
    w.ingest(tree, tokenizer=moved)
    tokenized = w.one("SELECT count(*) FROM annotations WHERE token_source = 'tokenizer'")
    assert tokenized > 0
    moved.rename(tmp_path / "elsewhere")
    changed = tree / "experiments/fa/steering/cat/syco/instruct/response__5/steering/responses/baseline_annotations.json"
    changed.write_text(changed.read_text().replace("\"author\": \"tester\"", "\"author\": \"another\""))
    before = _state(w)
    r = _warehouse_cli("ingest", tree, "--root", w.root, "--jobs", "1")
    assert r.returncode == 2, r.stderr
    assert r.stderr == (f"error: --tokenizer {moved}, remembered from an earlier run: not a directory (give a local "
                        "tokenizer directory, e.g. one saved with save_pretrained, or a model id); give --tokenizer again with another, "
                        "or --no-tokenizer to forget it\n")
    assert _state(w) == before
    # another folder replaces it ...
    assert _warehouse_cli("ingest", tree, "--root", w.root, "--jobs", "1", "--quiet",
                          "--tokenizer", tmp_path / "elsewhere").returncode == 0
    assert w.one("SELECT count(*) FROM annotations WHERE token_source = 'tokenizer'") == tokenized
    (tmp_path / "elsewhere").rename(tmp_path / "gone")
    # ... and --no-tokenizer forgets it: the files it tokenized are read again without it
    assert _warehouse_cli("ingest", tree, "--root", w.root, "--jobs", "1", "--quiet", "--no-tokenizer").returncode == 0
    assert w.one("SELECT count(*) FROM annotations WHERE token_source = 'tokenizer'") == 0
    assert w.ingest(tree).files_ingested == 0  # forgotten: a plain run asks for nothing


def test_python_forgets_a_tokenizer_as_the_command_line_does(tmp_path, tokenizer_dir):
    w = Warehouse(tmp_path / "wh")
    w.ingest(ANN, tokenizer=tokenizer_dir)
    w.ingest(ANN, tokenizer=False)
    assert w.one("SELECT count(*) FROM annotations WHERE token_source = 'tokenizer'") == 0


def test_bos_rule_of_tokenize_batch(tokenizer_dir):
    tok = tokenizers.load(str(tokenizer_dir))
    bos = tok.bos_token_id
    with_bos, without = tokenizers.prompt_ids(tok, ["<bos>Hello"])[0], tokenizers.prompt_ids(tok, ["Hello"])[0]
    assert with_bos[0] == bos and with_bos.count(bos) == 1  # text carries the BOS: none added
    assert without[0] == bos and without.count(bos) == 1  # text has none: special tokens added
    # one BOS-prefixed text turns special tokens off for the whole batch, as in trait-interp
    batch = tokenizers.prompt_ids(tok, ["Hello", "<bos>Hi"])
    assert batch[0][0] != bos


# --- correctness property (char and token ranges, multi-byte text) --------------------------------

ALPHABET = st.sampled_from(list("ab cé🚀ß日K.,") + ["İ", "\u212a"])
text_st = st.text(alphabet=ALPHABET, min_size=1, max_size=40)


@settings(max_examples=300, deadline=None)
@given(text=text_st, data=st.data())
def test_resolved_spans_are_the_span_or_match_it_case_insensitively(text, data):
    i = data.draw(st.integers(0, len(text) - 1))
    j = data.draw(st.integers(i + 1, len(text)))
    span = data.draw(st.sampled_from([text[i:j], text[i:j].upper(), text[i:j].lower()]))
    repeat = data.draw(st.integers(1, 3))
    m = spanlib.find_span(text, span, repeat)
    if m.start is None:
        assert m.reason
        return
    found = text[m.start:m.end]
    if m.match == "exact":
        assert found == span
    else:
        assert re.fullmatch(re.escape(span), found, re.IGNORECASE)
    if repeat > 1:  # successive occurrences: strictly after the previous one
        prev = spanlib.find_span(text, span, repeat - 1)
        assert prev.start is not None and prev.end <= m.start


@pytest.fixture(scope="module")
def tok(tokenizer_dir):
    return tokenizers.load(str(tokenizer_dir))


@settings(max_examples=150, deadline=None)
@given(text=text_st, data=st.data())
def test_token_ranges_decode_to_cover_the_span(tok, text, data):
    i = data.draw(st.integers(0, len(text) - 1))
    j = data.draw(st.integers(i + 1, len(text)))
    t = tokenizers.tokenize(tok, None, text)
    tr = spanlib.token_range(t.offsets, i, j)
    assert tr is not None
    ids = tok(text, add_special_tokens=False)["input_ids"]
    assert text[i:j] in tok.decode(ids[tr[0]:tr[1]])


@settings(max_examples=200, deadline=None)
@given(words=st.lists(st.text(alphabet=ALPHABET, min_size=1, max_size=4), min_size=1, max_size=10))
def test_stored_tokens_align_with_their_text(words):
    text = "".join(words)
    offsets = spanlib.align_tokens(text, words)
    assert offsets is not None and [text[s:e] for s, e in offsets] == words
