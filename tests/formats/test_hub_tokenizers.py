"""Tokenizers from the local Hugging Face cache: a model id for --tokenizer, or each response's own model.

The cache is one the test lays out (tests/hub_tokenizers.py), with real vocabularies (Llama 3, Qwen2.5,
Mistral NeMo, o200k) from registry packages, and the small tokenizer of tests/tokenizer_fixture.py where
only the route matters. Nothing is downloaded: HF_HUB_OFFLINE=1 (conftest), and HF_HOME points at the
test's own cache.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import warehouse
from warehouse.cli import main
from warehouse.errors import UsageError
from warehouse.formats import tokenizers

from ..conftest import Warehouse
from ..hub_tokenizers import MODELS, converted, put_in_cache, token_ids_over
from ..tokenizer_fixture import build_tokenizer

#: whitespace runs (spaces, newlines, a tab), emoji (one code point, a ZWJ sequence, a flag), CJK, accents
TEXT = ("Plain words,   then a run of spaces\n\n\t and tabs. Emoji 🚀🙂 and 👩‍💻 and 🇯🇵; "
        "日本語のテキストと中文测试。 Café   naïve —  end  ")
PROMPT = "Say something  with   spaces and 🚀"
#: spans that start or end inside whitespace runs, cut a token, cover a multi-byte character split across tokens
SPANS = ["Plain", "a run of spaces", "   then", "\n\n\t and", "ab", "🚀", "🙂 and 👩‍💻", "👩‍💻", "🇯🇵",
         "本語", "中文测试。", "naïve", " —  end  "]
TINY = "acme/tiny-chat"


def response_tree(root: Path, models: list[str | None], text: str = TEXT) -> Path:
    """An inference tree with one response per model (no stored tokens), and an annotation file marking SPANS."""
    for k, model in enumerate(models):
        responses = root / "experiments" / "demo" / "inference" / f"variant{k}" / "responses"
        (responses / "mixed").mkdir(parents=True)
        record = {"prompt": PROMPT, "response": text, **({"inference_model": model} if model else {})}
        (responses / "mixed" / "1.json").write_text(json.dumps(record, ensure_ascii=False))
        spans = [{"span": s, "category": f"c{j}"} for j, s in enumerate(SPANS) if s in text]
        (responses / "mixed_annotations.json").write_text(json.dumps({"annotations": [{"idx": 1, "spans": spans}]},
                                                                        ensure_ascii=False))
    return root


SPAN_ROWS = ("SELECT r.inference_model AS model, a.span, a.char_start, a.char_end, a.token_start, a.token_end, "
             "a.token_source, a.tokenizer, a.tokenizer_revision, a.prompt_tokens, a.unresolved_reason "
             "FROM annotations AS a JOIN responses AS r USING (response_id) WHERE a.level = 'span' "
             "ORDER BY a.source_path, length(a.source_locator), a.source_locator")


@pytest.fixture(scope="module")
def hub(tmp_path_factory, request) -> tuple[Path, dict[str, str]]:
    """A Hugging Face home whose cache holds the four real tokenizers: (HF_HOME, {model id: revision})."""
    cache = getattr(request.config, "cache", None)  # absent under -p no:cacheprovider
    store = cache.mkdir("hub-tokenizers") if cache else tmp_path_factory.mktemp("conv")
    home = tmp_path_factory.mktemp("hf_home")
    return home, {m.id: put_in_cache(home, m.id, converted(m, store)) for m in MODELS}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    return build_tokenizer(tmp_path_factory.mktemp("tiny") / "tokenizer")


@pytest.fixture(scope="module")
def real(hub, tmp_path_factory) -> Warehouse:
    """The responses of the four models, ingested with no --tokenizer: each one's own, from the cache."""
    home, _ = hub
    w = Warehouse(tmp_path_factory.mktemp("real") / "wh")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HOME", str(home))
        w.ingest(response_tree(tmp_path_factory.mktemp("tree"), [m.id for m in MODELS]))
    return w


@pytest.mark.parametrize("model", MODELS, ids=[m.package for m in MODELS])
def test_span_token_ranges_are_the_models_own_tokens(real, hub, model):
    """Each span's token range, in the tokenization of the whole text by the model's own encoder (the package's,
    not transformers'), picks exactly the tokens whose bytes overlap the span's characters."""
    home, revisions = hub
    reference = model.reference()
    ids = reference.encode(TEXT)
    cached = tokenizers.load(str(home / "hub" / f"models--{model.id.replace('/', '--')}" / "snapshots" / revisions[model.id]))
    assert cached(TEXT, add_special_tokens=False)["input_ids"] == ids, "the cached tokenizer is the model's"
    rows = [r for r in real.rows(SPAN_ROWS) if r["model"] == model.id]
    assert [r["span"] for r in rows] == SPANS
    for r in rows:
        assert (r["token_source"], r["tokenizer"], r["tokenizer_revision"]) == ("tokenizer", model.id, revisions[model.id])
        assert TEXT[r["char_start"]:r["char_end"]] == r["span"]
        assert ids[r["token_start"]:r["token_end"]] == token_ids_over(reference, TEXT, r["char_start"], r["char_end"]), r
        assert r["prompt_tokens"] == len(reference.encode(PROMPT)) + reference.bos


def test_stats_counts_the_spans_of_each_tokenizer(real, capsys):
    by_tokenizer = warehouse.stats(real.root)["spans_by_tokenizer"]
    assert sorted(by_tokenizer, key=lambda r: r["model"]) == sorted((
        {"token_source": "tokenizer", "tokenizer": m.id, "model": m.id, "responses": 1,
         "spans": len(SPANS)} for m in MODELS), key=lambda r: r["model"])
    assert main(["stats", "--root", str(real.root)]) == 0
    shown = capsys.readouterr().out
    assert shown.split("spans by tokenizer:\n")[1].splitlines()[0].split() == \
        ["token_source", "tokenizer", "model", "responses", "spans"]
    assert main(["stats", "--root", str(real.root), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["spans_by_tokenizer"] == by_tokenizer


# --- the route: a model id given, or the response's own model; the cache changing ---------------------


def spans(w: Warehouse) -> list[dict]:
    return w.rows(SPAN_ROWS)


def expected_ranges(tok, text: str = TEXT) -> list[tuple[int, int]]:
    """Token ranges of SPANS as the tokenizer's own offsets give them (tokens overlapping the span)."""
    offsets = tok(text, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
    out = []
    for s in SPANS:
        start = text.find(s)
        hit = [i for i, (a, b) in enumerate(offsets) if b > start and a < start + len(s) and b > a]
        out.append((hit[0], hit[-1] + 1))
    return out


def test_a_model_id_is_read_from_the_cache_remembered_and_a_new_revision_re_tokenizes(tmp_path, monkeypatch, tiny):
    home = tmp_path / "hf"
    monkeypatch.setenv("HF_HOME", str(home))
    first = put_in_cache(home, TINY, tiny, revision="a" * 40)
    tree = response_tree(tmp_path / "tree", [None, "google/gemma-2-2b-it"])  # the given tokenizer wins over a model's
    w = Warehouse(tmp_path / "wh")
    assert main(["ingest", str(tree), "--root", str(w.root), "--tokenizer", TINY, "--jobs", "1", "-q"]) == 0
    rows = spans(w)
    want = expected_ranges(tokenizers.load(str(tiny)))
    assert [(r["token_start"], r["token_end"]) for r in rows] == want * 2
    assert {(r["token_source"], r["tokenizer"], r["tokenizer_revision"]) for r in rows} == {("tokenizer", TINY, first)}
    assert w.ingest(tree).files_ingested == 0  # remembered, and unchanged: nothing to read again
    # the cache moves on to another revision (`hf download` of a newer commit): the files are read again with it
    second = put_in_cache(home, TINY, tiny, revision="b" * 40)
    assert w.ingest(tree).files_ingested == 2
    assert {(r["tokenizer"], r["tokenizer_revision"]) for r in spans(w)} == {(TINY, second)}


def test_the_tokenize_command_takes_a_model_id(tmp_path, monkeypatch, tiny):
    home = tmp_path / "hf"
    monkeypatch.setenv("HF_HOME", str(home))
    revision = put_in_cache(home, TINY, tiny)
    tree = response_tree(tmp_path / "tree", [None])
    w = Warehouse(tmp_path / "wh")
    w.ingest(tree)
    assert {r["token_source"] for r in spans(w)} == {None}
    assert main(["tokenize", "--root", str(w.root), "--tokenizer", TINY, "--jobs", "1", "-q"]) == 0
    assert {(r["token_source"], r["tokenizer"], r["tokenizer_revision"]) for r in spans(w)} == {("tokenizer", TINY, revision)}


def test_a_responses_model_is_used_when_the_cache_holds_it_and_is_no_error_when_it_does_not(tmp_path, monkeypatch,
                                                                                                tiny):
    """Without --tokenizer, a response's inference_model names its tokenizer. One the cache lacks is no error: the
    spans keep their rows without token ranges, say how to get them, and stats counts them under their model;
    once downloaded, the next plain ingest reads the annotation files again and uses it."""
    home = tmp_path / "hf"
    monkeypatch.setenv("HF_HOME", str(home))
    tree = response_tree(tmp_path / "tree", [TINY, None])
    w = Warehouse(tmp_path / "wh")
    summary = w.ingest(tree)
    assert summary.records_quarantined == 0
    rows = spans(w)
    assert all(r["token_start"] is None and r["char_start"] is not None for r in rows)
    assert {r["unresolved_reason"] for r in rows if r["model"] == TINY} == {
        f"the response has no stored tokens, and the local Hugging Face cache holds no tokenizer of its model {TINY}: "
        f"download it (`hf download {TINY} --include 'tokenizer*'`) and ingest again, or ingest with --tokenizer DIR "
        "or MODEL"}
    assert warehouse.stats(w.root)["spans_by_tokenizer"] == [
        {"token_source": "(none)", "tokenizer": None, "model": TINY, "responses": 1, "spans": len(SPANS)},
        {"token_source": "(none)", "tokenizer": None, "model": None, "responses": 1, "spans": len(SPANS)},
    ]
    revision = put_in_cache(home, TINY, tiny)
    assert w.ingest(tree).files_ingested == 1  # the annotation file of the response whose model it is
    rows = spans(w)
    assert [(r["token_start"], r["token_end"]) for r in rows if r["model"] == TINY] == \
        expected_ranges(tokenizers.load(str(tiny)))
    assert {(r["tokenizer"], r["tokenizer_revision"]) for r in rows if r["model"] == TINY} == {(TINY, revision)}
    assert warehouse.stats(w.root)["spans_by_tokenizer"][0] == {
        "token_source": "tokenizer", "tokenizer": TINY, "model": TINY, "responses": 1,
        "spans": len(SPANS)}


def _state(w: Warehouse) -> tuple:
    return len(warehouse.history(w.root)), w.one("SELECT count(*) FROM annotations"), \
        w.one("SELECT count(*) FROM quarantine"), w.one("SELECT count(*) FROM sources")


@pytest.mark.parametrize("command", ["ingest", "tokenize"])
def test_a_model_id_the_cache_lacks_is_a_usage_error_that_changes_nothing(tmp_path, monkeypatch, capsys, command):
    home = tmp_path / "hf"
    monkeypatch.setenv("HF_HOME", str(home))
    tree = response_tree(tmp_path / "tree", [None])
    w = Warehouse(tmp_path / "wh")
    w.ingest(tree)
    before = _state(w)
    argv = ["--root", str(w.root), "--tokenizer", "acme/absent", "--jobs", "1"]
    assert main(["ingest", str(tree), *argv] if command == "ingest" else ["tokenize", *argv]) == 2
    message = (f"--tokenizer acme/absent: not a directory, and not in the local Hugging Face cache ({home / 'hub'}): "
               "download its tokenizer on a machine with network (`hf download acme/absent --include 'tokenizer*'`) "
               "into that cache, or give --tokenizer a tokenizer folder")
    assert capsys.readouterr().err == f"error: {message}\n"
    with pytest.raises(UsageError) as e:  # Python callers: the same check, the same words
        warehouse.ingest(tree, w.root, tokenizer="acme/absent") if command == "ingest" else \
            warehouse.tokenize(w.root, "acme/absent")
    assert str(e.value) == message
    assert _state(w) == before


def test_a_remembered_model_gone_from_the_cache_says_how_to_change_or_forget_it(tmp_path, monkeypatch, capsys, tiny):
    home = tmp_path / "hf"
    monkeypatch.setenv("HF_HOME", str(home))
    put_in_cache(home, TINY, tiny)
    tree = response_tree(tmp_path / "tree", [None])
    w = Warehouse(tmp_path / "wh")
    w.ingest(tree, tokenizer=TINY)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "another"))  # another machine, or the cache cleared
    assert main(["ingest", str(tree), "--root", str(w.root), "--jobs", "1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: --tokenizer {TINY}, remembered from an earlier run: not a directory, and not in the "
                          f"local Hugging Face cache ({tmp_path / 'another' / 'hub'})") and err.count("\n") == 1
    assert err.endswith("give --tokenizer again with another, or --no-tokenizer to forget it\n")
    w.ingest(tree, tokenizer=False)
    assert {r["token_source"] for r in spans(w)} == {None}


@pytest.mark.parametrize("value", ["./tok", "~/nowhere/tok", "org/na me"])
def test_what_is_neither_a_folder_nor_a_model_id_is_a_usage_error(tmp_path, monkeypatch, value):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UsageError, match="not a directory"):
        warehouse.ingest(response_tree(tmp_path / "tree", [None]), tmp_path / "wh", tokenizer=value)
    assert not (tmp_path / "wh").exists()
