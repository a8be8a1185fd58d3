"""Export back to Dataloop: round trips (fixtures, samples, generated items), dtlpy loads, other formats, layout."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import warehouse
from warehouse.errors import UsageError
from warehouse.formatkit.declared import TABLES
from warehouse.formatkit.records import Record, RecordContext
from warehouse.formats.dataloop import Dataloop, unmap
from warehouse.formats.dataloop import export as dl_export

from ..conftest import FIXTURES, REPO, Warehouse

DL_FIXTURES = FIXTURES / "dataloop"
DL_SAMPLES = REPO / "samples" / "dataloop"
TABLES_FILLED = ("responses", "turns", "annotations")
#: columns that depend on where the files are; the export lays files out anew
PATH_DEPENDENT = {"source_path", "response_id", "record_id", "annotation_id"}


def export(w: Warehouse, out: Path, where: str | None = None):
    return warehouse.export(w.root, where, "dataloop", out, progress=False)


def ingest(root: Path, *paths) -> Warehouse:
    w = Warehouse(root)
    w.ingest(*paths)
    assert w.rows("SELECT locator, error FROM quarantine") == []
    return w


def _canonical(value) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def comparable(w: Warehouse) -> dict[str, list[str]]:
    """Every row of the tables Dataloop fills, without the path-dependent columns; a child row names its
    response by that response's content and its record by the contents of the record's responses, so
    the links are compared too."""
    def rows(table):
        out = []
        for r in w.rows(f"SELECT * FROM {table}"):
            for c in TABLES[table].columns:
                if c.json and isinstance(r.get(c.name), str):
                    r[c.name] = json.loads(r[c.name])
            out.append(r)
        return out

    responses = rows("responses")
    keep = {c.name for c in TABLES["responses"].columns} - PATH_DEPENDENT
    by_id = {r["response_id"]: _canonical({k: v for k, v in r.items() if k in keep}) for r in responses}
    by_record: dict[str, list[str]] = {}
    for r in responses:
        by_record.setdefault(r["record_id"], []).append(by_id[r["response_id"]])
    out = {"responses": sorted(by_id.values())}
    for table in TABLES_FILLED[1:]:
        keep = {c.name for c in TABLES[table].columns} - PATH_DEPENDENT
        out[table] = sorted(
            _canonical({**{k: v for k, v in r.items() if k in keep}, "response": by_id.get(r["response_id"]),
                        "record": sorted(by_record[r["record_id"]])})
            for r in rows(table)
        )
    return out


def assert_same_rows(a: Warehouse, b: Warehouse) -> None:
    left, right = comparable(a), comparable(b)
    for table in TABLES_FILLED:
        missing = [r for r in left[table] if r not in right[table]]
        added = [r for r in right[table] if r not in left[table]]
        assert (missing, added) == ([], []), table
        assert left[table] == right[table], table


# --- round trip: the fixtures and the samples ------------------------------------------------------------


@pytest.fixture(scope="module")
def trip(tmp_path_factory):
    """Fixtures and samples ingested, exported to Dataloop, and the export ingested again."""
    tmp = tmp_path_factory.mktemp("dl_export")
    first = ingest(tmp / "wh1", DL_FIXTURES, DL_SAMPLES)
    summary = export(first, tmp / "out")
    second = ingest(tmp / "wh2", tmp / "out")
    return first, second, summary, tmp / "out"


def test_round_trip_gives_the_same_rows(trip):
    first, second, summary, _ = trip
    assert summary.selected == summary.written == first.one("SELECT count(*) FROM responses") == 34
    assert summary.notes == []
    assert_same_rows(first, second)
    assert second.one("SELECT count(DISTINCT record_id) FROM responses") == first.one("SELECT count(DISTINCT record_id) FROM responses")
    # source_locator is compared too: rows from an item JSON joined to its prompt file are located in it again
    assert second.one("SELECT count(*) FROM annotations WHERE source_locator LIKE '@json.annotations[%'") == 22


def test_the_layout_is_a_dataset_download(trip):
    *_, out = trip
    files = sorted(str(p.relative_to(out)) for p in out.rglob("*.json"))
    assert files[:3] == ["items/autumn_haiku.json", "items/boiling_point.json", "items/capitals.json"]
    # by the item's filename in its dataset, folders kept; else by the file it was read from
    assert {"items/photos/cat.json", "json/photos/cat.json", "json/image_prompts/dogs.json", "json/orphan.json",
            "items/no_json.json", "items/order_status.json", "items/legacy_dict_of_dicts.json"} <= set(files)
    assert "json/no_json.json" not in files and "items/orphan.json" not in files  # each item has the files it had
    assert len([f for f in files if f.startswith("items/")]) == 22 and len([f for f in files if f.startswith("json/")]) == 15


def test_a_prompt_file_and_its_item_json_read_like_the_originals(trip):
    *_, out = trip
    original = DL_FIXTURES / "download" / "66f0a1b2c3d4e5f601234567"
    for name in ("train/json/capitals.json", "train/json/photos/cat.json", "validation/json/conversation.json",
                 "validation/items/conversation.json", "validation/json/orphan.json"):
        exported = out / name.split("/", 1)[1]
        assert json.loads(exported.read_text()) == json.loads((original / name).read_text()), name
    text = (out / "items" / "text_prompt.json").read_text()  # dtlpy's to_json() shape: a metadata element with the role
    assert json.loads(text) == {"shebang": "dataloop", "metadata": {"dltype": "prompt"}, "prompts": {"prompt1": [
        {"mimetype": "application/text", "value": "Is water wet?"}, {"mimetype": "metadata", "value": {"role": "user"}}]}}
    trace = json.loads((out / "items" / "tool_trace.json").read_text())
    original_trace = json.loads((DL_FIXTURES / "traces" / "tool_trace.json").read_text())
    assert trace == {**original_trace, "metadata": {"dltype": "llm_trace"}}  # as dl.LLMTrace.to_json() writes it


def test_a_subset_of_candidates(trip, tmp_path):
    first, *_ = trip
    s = export(first, tmp_path / "out", "inference_model = 'mistral-7b-instruct' OR item_filename = '/unanswered.json'")
    assert (s.selected, s.written) == (2, 2)
    item = json.loads((tmp_path / "out" / "json" / "capitals.json").read_text())
    assert [a["metadata"]["user"]["model"]["name"] for a in item["annotations"]] == ["mistral-7b-instruct"]
    assert item["annotationsCount"] == 2  # as the source said: the platform's count of the item's annotations
    w = ingest(tmp_path / "wh", tmp_path / "out")
    # the one answer left is candidate 0, and the prompt parts are its own
    assert w.rows("SELECT candidate_index, response, item_filename FROM responses ORDER BY item_filename") == [
        {"candidate_index": 0, "response": "The capital of Australia is Sydney.", "item_filename": "/capitals.json"},
        {"candidate_index": 0, "response": None, "item_filename": "/unanswered.json"}]
    assert w.one("SELECT count(*) FROM turns WHERE response_id IS NULL") == 0


def test_an_empty_selection_writes_an_empty_download(trip, tmp_path):
    first, *_ = trip
    s = export(first, tmp_path / "out", "false")
    assert s.written == 0
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["items", "json"]
    assert list((tmp_path / "out").rglob("*.json")) == []


def test_items_with_the_same_name_get_numbered(tmp_path):
    for copy in ("a", "b"):
        shutil.copytree(DL_FIXTURES / "download", tmp_path / "in" / copy)
    first = ingest(tmp_path / "wh1", tmp_path / "in")
    s = export(first, tmp_path / "out")
    assert s.notes == ["6 items had the file name of another exported item and were written as <name>-2.json, ..."]
    names = sorted(str(p.relative_to(tmp_path / "out")) for p in (tmp_path / "out").rglob("*.json"))
    assert "items/capitals-2.json" in names and "json/capitals-2.json" in names and "json/orphan-2.json" in names
    assert_same_rows(first, ingest(tmp_path / "wh2", tmp_path / "out"))


def test_names_never_collide():
    names = dl_export.Names()
    assert [names.claim(p) for p in (["a.json"], ["a.json"], ["a-2.json"], ["a.json", "b.json"], ["d", "x.json"], ["d.json"], ["d"])] == [
        "a.json", "a-2.json", "a-2-2.json", "a.json_b.json", "d/x.json", "d.json", "d-2"]
    assert dl_export.item_path({"item_filename": "/../x/./y"}) == ["x", "y.json"]
    assert dl_export.item_path({"item_filename": None, "source_path": "/d/ds/items/sub/q.json"}) == ["sub", "q.json"]
    assert dl_export.item_path({"item_filename": None, "source_path": "/d/prompt_files/q.json"}) == ["q.json"]


def test_an_existing_out_directory_is_refused(trip, tmp_path):
    first, *_ = trip
    (tmp_path / "out").mkdir()
    with pytest.raises(UsageError) as e:
        export(first, tmp_path / "out")
    assert str(e.value) == f"--out {tmp_path / 'out'}: exists; remove it, choose another path, or pass --overwrite"


def test_the_cli_exports_to_dataloop(trip, tmp_path, capsys):
    from warehouse.cli import main

    first, *_ = trip
    assert main(["export", "--root", str(first.root), "--where", "dltype = 'llm_trace'", "--format", "dataloop",
                 "--out", str(tmp_path / "out"), "--quiet"]) == 0
    assert capsys.readouterr().out == ""
    assert sorted(p.name for p in (tmp_path / "out" / "items").iterdir()) == ["order_status.json", "session_trace.json", "tool_trace.json"]


# --- the library loads the export ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def dl(tmp_path_factory):
    """dtlpy, imported with its cookie and log folder in a temporary directory (read once, at import)."""
    before = os.environ.get("DATALOOP_PATH")
    os.environ["DATALOOP_PATH"] = str(tmp_path_factory.mktemp("dataloop_home"))
    try:
        return pytest.importorskip("dtlpy")
    finally:
        if before is None:
            del os.environ["DATALOOP_PATH"]
        else:
            os.environ["DATALOOP_PATH"] = before


#: prompt files dtlpy 1.126's PromptItem._load_item_prompts cannot read, with its exact error: writing them
#: another way would lose data (image/jpeg is the mimetype as written; the legacy shape keeps its part keys)
DTLPY_REFUSES = {
    "image_jpeg_prompt.json": (ValueError, "Invalid mimetype: image/jpeg. Allowed values: [<PromptType.TEXT: 'application/text'>, "
                               "<PromptType.IMAGE: 'image/*'>, <PromptType.AUDIO: 'audio/*'>, <PromptType.VIDEO: 'video/*'>, "
                               "<PromptType.METADATA: 'metadata'>]"),
    "legacy_dict_of_dicts.json": (AttributeError, "'str' object has no attribute 'get'"),
}


def test_every_prompt_file_loads_as_a_dtlpy_prompt_item(dl, trip):
    _, second, _, out = trip  # the export ingested again: its rows name the exported files
    loaded = 0
    for path in sorted((out / "items").rglob("*.json")):
        doc = json.loads(path.read_text())
        if doc["metadata"]["dltype"] != "prompt":
            continue
        if path.name in DTLPY_REFUSES:
            kind, message = DTLPY_REFUSES[path.name]
            with pytest.raises(kind) as e:
                dl.PromptItem.from_local_file(str(path))
            assert str(e.value) == message
            continue
        item = dl.PromptItem.from_local_file(str(path))
        # the same prompts, roles and parts as the warehouse's turns
        expected = {}
        for p in second.rows("SELECT prompt_key, role, mimetype, content, content_ref, extra FROM turns "
                             "WHERE source_path = ? ORDER BY turn_index, part_index", [str(path)]):
            prompt = expected.setdefault(p["prompt_key"], {"role": p["role"], "elements": [], "metadata": {}})
            if p["mimetype"] is not None:
                prompt["elements"].append({"mimetype": p["mimetype"], "value": p["content"] if p["content"] is not None else p["content_ref"]})
            prompt["metadata"] = {k: v for k, v in (json.loads(p["extra"] or "{}").get("metadata") or {}).items()}
        got = {pr.key: {"role": pr.metadata["role"], "elements": pr.elements,
                        "metadata": {k: v for k, v in pr.metadata.items() if k != "role"}} for pr in item.prompts}
        assert got == expected, path.name
        loaded += 1
    assert loaded == 17


def test_every_item_json_loads_with_its_annotations_and_answers_become_assistant_messages(dl, trip):
    from dtlpy.services.api_client import client as client_api

    *_, out = trip
    answers = 0
    for path in sorted((out / "json").rglob("*.json")):
        data = json.loads(path.read_text())
        item = dl.Item.from_json(_json=data, client_api=client_api, is_fetched=False)
        assert (item.id, item.filename, item.system["shebang"]) == (data.get("id"), data["filename"], {"dltype": "prompt"})
        annotations = dl.AnnotationCollection.from_json(_json=data["annotations"], item=item)
        assert [a.id for a in annotations] == [a["id"] for a in data["annotations"]]
        # what PromptItem.fetch() does with an item's annotations: its text and ref_image answers as assistant prompts
        # (other types, such as the spec's binary stream or a class label, raise "Unsupported annotation type")
        kept = [a for a in annotations if a.type in ("text", "ref_image")]
        for prompt, a in zip(dl.PromptItem._load_annotations_prompts(kept), kept):
            assert (prompt.key, prompt.metadata["role"], prompt.metadata["model_info"]) == (
                a.metadata["system"]["promptId"], "assistant", a.metadata["user"].get("model", {}))
            answers += 1
    assert answers == 22


def test_a_text_item_becomes_dtlpy_messages(dl, trip):
    from dtlpy.services.api_client import client as client_api

    *_, out = trip
    item = dl.PromptItem.from_local_file(str(out / "items" / "capitals.json"))
    data = json.loads((out / "json" / "capitals.json").read_text())
    annotations = dl.AnnotationCollection.from_json(
        _json=data["annotations"], item=dl.Item.from_json(_json=data, client_api=client_api, is_fetched=False))
    item.assistant_prompts = dl.PromptItem._load_annotations_prompts(annotations)
    assert item.to_messages(model_name="llama-3-8b-instruct") == [
        {"role": "user", "content": [{"type": "text", "text": "What is the capital of Australia?"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Canberra is the capital of Australia."}]}]


def test_every_trace_loads_as_a_dtlpy_llm_trace(dl, trip):
    _, second, _, out = trip
    for name in ("order_status.json", "session_trace.json", "tool_trace.json"):
        trace = dl.LLMTrace.from_local_file(str(out / "items" / name))
        roles = [r["role"] for r in second.rows(
            "SELECT role FROM turns WHERE source_path = ? ORDER BY turn_index", [str(out / "items" / name)])]
        assert roles and [m.role for m in trace.messages] == roles and trace.metadata == {"dltype": "llm_trace"}
        assert trace.to_json() == json.loads((out / "items" / name).read_text())


# --- responses of the other formats ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def others(tmp_path_factory, samples_wh):
    tmp = tmp_path_factory.mktemp("dl_others")
    w = samples_wh
    where = "source_format <> 'dataloop'"
    summary = export(w, tmp / "out", where)
    return w, where, summary, tmp / "out"


def test_other_formats_are_written_with_the_minimal_mapping(others, tmp_path):
    w, where, summary, out = others
    columns = "source_format, prompt, response, system_prompt, inference_model, capture_date"
    answered = w.rows(f"SELECT {columns} FROM responses WHERE {where} AND response IS NOT NULL")
    unanswered = w.one(f"SELECT count(*) FROM responses WHERE {where} AND response IS NULL")
    assert summary.written == len(answered) and summary.selected == len(answered) + unanswered
    counts = {r["source_format"]: r["n"] for r in w.rows(
        f"SELECT source_format, count(*) AS n FROM responses WHERE {where} AND response IS NOT NULL GROUP BY ALL ORDER BY ALL")}
    assert summary.notes[0] == (
        f"{len(answered)} responses of other formats ({', '.join(f'{n} {f}' for f, n in sorted(counts.items()))}) were written "
        "as prompt items with the minimal mapping (system prompt, prompt, response, model): see docs/formats/dataloop.md#export")
    assert summary.notes[1:-1] == ([f"{unanswered} selected responses of other formats have no answer text (response NULL) and were left out"]
                                  if unanswered else [])
    assert summary.notes[-1].endswith(" of the responses of other formats are not carried by their prompt items")
    back = ingest(tmp_path / "wh", out)
    got = back.rows("SELECT json_extract_string(a.metadata, '$.user.source.format') AS source_format, "
                    "r.prompt, r.response, r.system_prompt, r.inference_model, r.capture_date "
                    "FROM responses r JOIN annotations a USING (response_id)")
    key = lambda r: _canonical(r)  # noqa: E731
    assert sorted(map(key, got)) == sorted(map(key, answered))


def test_other_formats_load_in_dtlpy(dl, others):
    from dtlpy.services.api_client import client as client_api

    *_, out = others
    files = sorted((out / "items").rglob("*.json"))
    assert {p.relative_to(out / "items").parts[0] for p in files} == {"afterimage", "scale", "trait_interp"}
    for path in files:
        item = dl.PromptItem.from_local_file(str(path))
        assert {p.metadata["role"] for p in item.prompts} <= {"system", "user", "assistant"}  # earlier answers too
        data = json.loads((out / "json" / path.relative_to(out / "items")).read_text())
        annotations = dl.AnnotationCollection.from_json(
            _json=data["annotations"], item=dl.Item.from_json(_json=data, client_api=client_api, is_fetched=False))
        item.assistant_prompts = dl.PromptItem._load_annotations_prompts(annotations)
        messages = item.to_messages()
        # each answer right after its prompt (earlier answers of a conversation are assistant prompts)
        said = [(m["role"], m["content"][0]["text"]) for m in messages]
        answers = [("assistant", a["coordinates"]) for a in data["annotations"]]
        assert all(a in said for a in answers) and said[-1] in answers
        assert all(m["content"][0]["type"] == "text" for m in messages)


# --- property: generated items survive ingest -> export -> ingest ----------------------------------------------

ident = st.text(st.characters(codec="utf-8", categories=("L", "N")), min_size=1, max_size=6)
text = st.text(max_size=12)
maybe_text = st.one_of(st.none(), text)
json_scalar = st.one_of(st.none(), st.booleans(), st.integers(-1000, 1000), st.floats(0, 1), text)
json_value = st.recursive(json_scalar, lambda inner: st.one_of(st.lists(inner, max_size=2), st.dictionaries(ident, inner, max_size=2)), max_leaves=4)


def more(*reserved: str) -> st.SearchStrategy[dict]:
    """Fields no column takes: they must come back through extra."""
    return st.dictionaries(ident.filter(lambda k: k not in reserved and k != "shebang"), json_value, max_size=2)


PART = ("mimetype", "value", "metadata", "part_key")
part = st.one_of(
    st.builds(lambda m, v, x: {"mimetype": m, "value": v, **x}, st.sampled_from(["application/text", "text/plain"]), maybe_text, more(*PART)),
    st.builds(lambda m, v, x: {"mimetype": m, "value": v, **x}, st.sampled_from(["image/*", "image/jpeg", "audio/*", "video/*"]), maybe_text, more(*PART)),
    st.builds(lambda role, v, x: {"mimetype": "metadata", "value": ({"role": role} if role else {}) | v, **x},
              st.one_of(st.none(), st.sampled_from(["user", "assistant", "system"])), more("role", "element"), more(*PART)),
)


@st.composite
def prompts(draw) -> dict:
    out = {}
    for key in draw(st.lists(ident, unique=True, max_size=3)):
        elements = draw(st.lists(part, max_size=4))
        out[key] = {f"q{i}": e for i, e in enumerate(elements)} if draw(st.booleans()) else elements  # legacy dict of dicts
    return out


model = st.fixed_dictionaries({}, optional={"name": maybe_text, "confidence": st.floats(0, 1), "model_id": ident})


@st.composite
def annotation(draw, keys: list[str]) -> dict:
    kind = draw(st.sampled_from(["text", "ref_image", "binary", "class"]))
    coordinates = {"text": text, "binary": text, "class": st.one_of(st.none(), more()),
                   "ref_image": st.builds(lambda r, m: {"ref": r, "refType": "id", **m}, text, st.fixed_dictionaries({}, optional={"mimetype": text}))}[kind]
    system = draw(st.fixed_dictionaries({}, optional={"promptId": st.sampled_from(keys or ["none"]), "automated": st.booleans(),
                                                      "model": model}))
    user = draw(st.fixed_dictionaries({}, optional={"model": model, "stream": st.booleans()}))
    a = {"type": kind, "label": draw(text), "coordinates": draw(coordinates)}
    if draw(st.booleans()):
        a["metadata"] = {"system": system, "user": user}
    a |= draw(st.fixed_dictionaries({}, optional={"id": ident, "itemId": ident, "creator": text, "createdAt": text}))
    return a | draw(more("type", "label", "coordinates", "metadata", "id", "itemId", "creator", "createdAt"))


tags = st.dictionaries(st.sampled_from(["train", "validation", "test", "predict", "gold"]), st.one_of(st.just(True), st.booleans()), max_size=3)


@st.composite
def item_json(draw, dltype: str, keys: list[str]) -> dict:
    item = draw(st.fixed_dictionaries({}, optional={"id": ident, "datasetId": ident, "creator": text, "createdAt": text, "updatedAt": text}))
    if draw(st.booleans()):
        folder = draw(st.sampled_from(["", "/sub"]))
        name = draw(ident) + ".json"
        item["filename"] = f"{folder}/{name}"
        item |= draw(st.fixed_dictionaries({}, optional={"name": st.sampled_from([name, "other.json"]), "dir": st.sampled_from([folder or "/", "/x"])}))
    system = {"shebang": {"dltype": dltype}} | draw(st.fixed_dictionaries({}, optional={"tags": tags})) | draw(more("shebang", "tags"))
    item["metadata"] = {"system": system} | draw(st.fixed_dictionaries({}, optional={"tags": tags})) | draw(more("system", "tags"))
    item |= draw(more("id", "datasetId", "creator", "createdAt", "updatedAt", "filename", "name", "dir", "metadata",
                      "annotations", "annotationsCount", "annotated"))
    item["annotations"] = draw(st.lists(annotation(keys), max_size=3))
    if draw(st.booleans()):
        item["annotationsCount"] = draw(st.sampled_from([len(item["annotations"]), 9]))
        item["annotated"] = draw(st.booleans())
    return item


message_content = st.one_of(maybe_text, st.lists(st.one_of(
    st.builds(lambda t: {"type": "text", "text": t}, text), st.just({"type": "image_url", "image_url": {"url": "u"}})), max_size=2))
message = st.builds(
    lambda role, fields, x: {"role": role, **fields, **x},
    st.sampled_from(["system", "user", "assistant", "tool"]),
    st.fixed_dictionaries({}, optional={
        "content": message_content, "reasoning_content": text, "tool_call_id": text, "name": text,
        "tool_calls": st.lists(st.builds(lambda n: {"id": "c", "type": "function", "function": {"name": n, "arguments": "{}"}}, ident), max_size=2),
        "model_info": st.fixed_dictionaries({}, optional={"name": text, "model_id": ident, "provider": text})}),
    more("role", "content", "reasoning_content", "tool_call_id", "name", "tool_calls", "model_info"),
)


@st.composite
def dataloop_item(draw) -> tuple[dict | None, dict | None]:
    """(document, item JSON): a prompt file or llm_trace, either alone, with its item JSON, or an item JSON alone."""
    kind = draw(st.sampled_from(["prompt", "llm_trace", "item"]))
    metadata = draw(st.one_of(st.none(), more("dltype")))
    if kind == "item":
        return None, draw(item_json(draw(st.sampled_from(["prompt", "llm_trace"])), ["1"]))
    if kind == "prompt":
        body = {"prompts": draw(prompts())}
        keys = list(body["prompts"])
        extra = draw(more("metadata", "prompts", "item"))
    else:
        body = {"messages": draw(st.lists(message, max_size=4))}
        keys = []
        extra = draw(more("metadata", "prompts", "messages", "item"))
    doc = {"shebang": "dataloop"}
    if metadata is not None or kind == "prompt" and draw(st.booleans()):
        doc["metadata"] = {"dltype": kind} | (metadata or {})
    doc |= body | extra
    return doc, (draw(item_json(kind, keys)) if draw(st.booleans()) else None)


def _mapped(document: dict | None, item: dict | None) -> dict:
    """The rows of one item, without NULL values (a column the mapping leaves out is NULL in the table too)."""
    value, envelope = (document, {"item_json": item}) if document is not None else (item, None)
    rows = Dataloop().map(Record("", json.loads(json.dumps(value)), envelope=envelope), RecordContext("/d/items/a.json", "", None, "dataloop"))
    return {table: [{k: v for k, v in r.items() if v is not None} for r in rs] for table, rs in rows.items()}


@settings(max_examples=200, deadline=None)
@given(dataloop_item())
def test_the_reverse_mapping_gives_the_same_rows(pair):
    """The mapping, its reverse, and the mapping again: the same rows, ids included (same path)."""
    rows = _mapped(*pair)
    files = unmap.record_files(rows["responses"], rows.get("turns", []), rows.get("annotations", []))
    assert _mapped(files.document, files.item_json) == rows


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.lists(dataloop_item(), min_size=1, max_size=4))
def test_generated_items_round_trip_through_files(tmp_path_factory, items):
    """Generated items written as a dataset download, ingested, exported and ingested again: the same rows."""
    tmp = tmp_path_factory.mktemp("gen")
    for n, (document, item) in enumerate(items):
        for folder, obj in (("items", document), ("json", item)):
            if obj is not None:
                (tmp / "ds" / folder).mkdir(parents=True, exist_ok=True)
                (tmp / "ds" / folder / f"i{n}.json").write_text(json.dumps(obj))
    first = ingest(tmp / "wh1", tmp / "ds")
    export(first, tmp / "out")
    assert_same_rows(first, ingest(tmp / "wh2", tmp / "out"))


# --- the real files ------------------------------------------------------------------------------------------------


@pytest.mark.realdata
def test_real_dataloop_files_round_trip_and_load_where_dtlpy_loads_them(realdata, dl, tmp_path):
    first = ingest(tmp_path / "wh1", realdata / "dataloop-prompt")
    s = export(first, tmp_path / "out")
    assert s.written == s.selected == first.one("SELECT count(*) FROM responses")
    second = ingest(tmp_path / "wh2", tmp_path / "out")
    assert_same_rows(first, second)
    refused = 0
    for path in sorted((tmp_path / "out" / "items").glob("*.json")):
        doc = json.loads(path.read_text())
        if doc["metadata"]["dltype"] == "llm_trace":
            assert dl.LLMTrace.from_local_file(str(path)).to_json() == doc
            continue
        mimetypes = {r["mimetype"] for r in second.rows("SELECT mimetype FROM turns WHERE source_path = ?", [str(path)])}
        legacy = any(isinstance(v, dict) for v in doc["prompts"].values())
        if "image/jpeg" in mimetypes or legacy:  # as the original file: see DTLPY_REFUSES
            with pytest.raises((ValueError, AttributeError)) as e:
                dl.PromptItem.from_local_file(str(path))
            assert str(e.value) == DTLPY_REFUSES["legacy_dict_of_dicts.json" if legacy else "image_jpeg_prompt.json"][1]
            refused += 1
        else:
            assert [p.key for p in dl.PromptItem.from_local_file(str(path)).prompts] == list(doc["prompts"])
    assert refused == 5


def test_a_documents_own_item_field_is_kept_beside_the_item_jsons_and_goes_back_to_the_document():
    """``extra.item`` holds the item JSON's leftovers; a document's own top-level ``item`` (and
    ``item~``) are kept as ``item~`` (``item~~``): nothing overwritten, each written back where it was
    (found by hypothesis: a document field ``item`` was lost)."""
    document = {"shebang": "dataloop", "metadata": {"dltype": "prompt"},
                "prompts": {"1": [{"mimetype": "application/text", "value": "hi"}]}, "item": None, "item~": [1]}
    item = {"id": "i1", "filename": "/a.json", "name": "a.json", "dir": "/", "url": "u"}
    rows = _mapped(document, item)
    assert rows["responses"][0]["extra"] == {"item~": None, "item~~": [1], "item": {"url": "u", "name": "a.json", "dir": "/"}}
    files = unmap.record_files(rows["responses"], rows.get("turns", []), rows.get("annotations", []))
    assert files.document["item"] is None and files.document["item~"] == [1]
    assert files.item_json["url"] == "u" and "item" not in files.item_json
    assert _mapped(files.document, files.item_json) == rows
