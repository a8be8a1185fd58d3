"""Bad input: every record lands in quarantine whole, with where, what and what to do (exact messages)."""

from __future__ import annotations

import os

import pytest

import warehouse
from warehouse.formatkit.registry import Registry
from warehouse.formats.trait_interp import TraitInterp

from ..conftest import FIXTURES, write_text

INGESTORS = Registry.installed().ingestors()  # every installed format, in detection order

RESP = "experiments/x/inference/instruct/responses/set"


def quarantine(wh):
    return wh.rows("SELECT source_path, source_format, locator, stage, error, raw, raw_bytes FROM quarantine ORDER BY source_path, locator")


def one_file(wh, tmp_path, name: str, content: str | bytes, **options):
    path = write_text(tmp_path / "in" / name, content)
    summary = wh.ingest(path, **options)
    return path, summary


def test_invalid_json(wh, tmp_path):
    path, s = one_file(wh, tmp_path, f"{RESP}/1.json", '{"prompt": "a", "response": }')
    assert s.records_quarantined == 1 and s.records_ingested == 0
    [q] = quarantine(wh)
    assert (q["locator"], q["stage"], q["source_format"]) == ("", "decode", "trait_interp")
    assert q["error"] == "invalid JSON: unexpected character, expected a JSON value: line 1 column 29 (char 28)"
    assert q["raw"] == '{"prompt": "a", "response": }'


def test_invalid_utf8_is_quarantined_never_replaced(wh, tmp_path):
    one_file(wh, tmp_path, f"{RESP}/1.json", b'{"prompt": "caf\xe9", "response": "r"}')
    [q] = quarantine(wh)
    assert q["error"] == "invalid UTF-8 at byte 15: the source must be UTF-8 (re-encode it, e.g. `iconv -f latin1 -t utf-8`)"
    assert q["raw"] == '{"prompt": "caf\\xe9", "response": "r"}'  # raw bytes shown, not replaced
    assert wh.one("SELECT count(*) FROM responses") == 0


def test_a_utf8_bom_is_accepted(wh, tmp_path):
    one_file(wh, tmp_path, f"{RESP}/1.json", b'\xef\xbb\xbf{"prompt": "p", "response": "r"}')
    assert quarantine(wh) == []
    assert wh.one("SELECT response FROM responses") == "r"


def test_nan_and_infinity_written_by_python_are_read(wh, tmp_path):
    one_file(wh, tmp_path, "experiments/x/steering/c/t/response__5/responses/L1_c1.0.json",
             '[{"prompt": "p", "response": "r", "trait_score": NaN, "coherence_score": Infinity}]')
    row = wh.rows("SELECT trait_score, coherence_score FROM responses")[0]
    assert row["trait_score"] != row["trait_score"] and row["coherence_score"] == float("inf")


def test_lone_surrogate_escape_is_quarantined(wh, tmp_path):
    one_file(wh, tmp_path, f"{RESP}/1.json", '{"prompt": "\\ud83d", "response": "r"}')
    [q] = quarantine(wh)
    assert q["stage"] == "decode" and q["error"].startswith("invalid JSON: ")


def test_empty_file(wh, tmp_path):
    one_file(wh, tmp_path, f"{RESP}/1.json", "")
    [q] = quarantine(wh)
    assert (q["stage"], q["error"], q["raw_bytes"]) == ("decode", "empty file: expected a JSON document", 0)


def test_array_with_mixed_element_types_keeps_the_good_ones(wh, tmp_path):
    path, s = one_file(wh, tmp_path, "responses.json",
                       '[{"prompt": "p", "response": "r"}, 5, "text", null, [1], {"prompt": "q", "response": "s"}]')
    assert (s.records_ingested, s.records_quarantined) == (2, 4)
    assert [(q["locator"], q["error"]) for q in quarantine(wh)] == [
        ("[1]", "expected a JSON object for the response record, got number 5"),
        ("[2]", "expected a JSON object for the response record, got string 'text'"),
        ("[3]", "expected a JSON object for the response record, got null None"),
        ("[4]", "expected a JSON object for the response record, got array [1]"),
    ]
    assert wh.one("SELECT records || '=' || records_ingested || '+' || records_quarantined FROM sources") == "6=2+4"


def test_wrong_field_types_name_the_field_and_its_place(wh, tmp_path):
    one_file(wh, tmp_path, "responses.json", """[
      {"prompt": "p", "response": "r", "prompt_end": "45"},
      {"prompt": "p", "response": "r", "tokens": "abc"},
      {"prompt": "p", "response": "r", "turn_boundaries": [{"role": "user", "token_start": 0}, {"role": 3}]},
      {"prompt": "p", "response": "r", "token_ids": [1, 2.5]},
      {"prompt": "p", "response": "r", "tags": [true]},
      {"prompt": "p", "response": "r", "trait_score": "high"},
      {"foo": "bar"}
    ]""")
    assert [(q["locator"], q["stage"], q["error"]) for q in quarantine(wh)] == [
        ("[0].prompt_end", "map", "prompt_end: expected an integer, got string '45'"),
        ("[1].tokens", "map", "tokens: expected a list of strings, got string 'abc'"),
        ("[2].turn_boundaries[1].role", "map", "role: expected a string, got number 3"),
        ("[3].token_ids", "map", "token_ids: expected a list of integers, got array [1, 2.5]"),
        ("[4].tags", "map", "tags: expected a list of strings, got array [True]"),
        ("[5].trait_score", "map", "trait_score: expected a number, got string 'high'"),
        ("[6]", "map", "not a trait-interp response: no prompt, question or response key (keys: foo); pass --format to read it as another format"),
    ]
    assert wh.one("SELECT count(*) FROM turns") == 0  # a quarantined record keeps none of its rows


def test_integer_out_of_range_fails_validation(wh, tmp_path):
    one_file(wh, tmp_path, "responses.json", '[{"prompt": "p", "response": "r", "prompt_end": 10000000000000000000}]')
    [q] = quarantine(wh)
    assert (q["stage"], q["error"]) == (
        "validate", "responses.prompt_end: expected an integer in [-9223372036854775808, 9223372036854775807], got int 10000000000000000000")


def test_unrecognised_file(wh, tmp_path):
    one_file(wh, tmp_path, "notes.json", '{"hello": "world"}')
    [q] = quarantine(wh)
    assert (q["source_format"], q["stage"], q["locator"]) == (None, "detect", "")
    tried = ", ".join(i.name for i in INGESTORS if i.reads_content)  # path-only catalogs are not tried on content
    assert q["error"] == f"no format recognised this file (tried: {tried}); pass --format NAME to read it as one of them"
    assert wh.rows("SELECT status, records, records_quarantined FROM sources") == [
        {"status": "unrecognised", "records": 1, "records_quarantined": 1}]


def test_near_misses_of_the_formats_are_left_unrecognised(wh):
    """Files of the formats' tools that hold no responses: a trait-interp layer-profiling result (a
    ``prompt`` and a ``response`` object of statistics under each layer) and a Dataloop LiDAR scene
    (``dltype`` PCDFrames, its document and its item JSON). No format claims them, so none counts them
    as its own (``stats``) or quarantines them as a bad record of its own."""
    wh.ingest(FIXTURES / "near_misses")
    tried = ", ".join(i.name for i in INGESTORS if i.reads_content)
    rows = quarantine(wh)
    assert len(rows) == 3
    for q in rows:
        assert (q["source_format"], q["stage"], q["locator"]) == (None, "detect", ""), q["source_path"]
        assert q["error"] == f"no format recognised this file (tried: {tried}); pass --format NAME to read it as one of them"
    assert {r["status"] for r in wh.rows("SELECT status FROM sources")} == {"unrecognised"}
    assert [f["format"] for f in warehouse.stats(wh.root)["formats"]] == ["(none)"]


ROW = '{"conversations": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}], "metadata": {}}\n'


def test_a_folder_of_compressed_json_says_how_many_files_it_skipped_and_what_to_do(tmp_path, capsys):
    import bz2
    import gzip

    from warehouse.cli import main

    folder = tmp_path / "exports"
    for i in range(3):
        write_text(folder / f"part-{i}.jsonl.gz", gzip.compress(ROW.encode()))
    write_text(folder / "old" / "rows.json.bz2", bz2.compress(ROW.encode()))
    write_text(folder / "notes.txt.gz", gzip.compress(b"not JSON"))  # not of a kind the walk looks for
    assert main(["ingest", str(folder), "--root", str(tmp_path / "wh"), "--jobs", "1"]) == 0
    err = capsys.readouterr().err
    assert (f"skipped 4 compressed JSON files (e.g. {folder / 'old' / 'rows.json.bz2'}): the warehouse reads .json "
            "and .jsonl text; decompress them first (gunzip -k FILE, bunzip2 -k FILE) and ingest the result\n") in err


@pytest.mark.parametrize("name, content, error", [
    ("rows.jsonl", "gzip", "gzip-compressed, not JSON text (its first bytes are gzip's): decompress it (gunzip -k FILE) "
                           "and ingest the result"),
    (f"{RESP}/1.json", "gzip", "gzip-compressed, not JSON text (its first bytes are gzip's): decompress it (gunzip -k FILE) "
                               "and ingest the result"),  # a place trait-interp claims by its path alone
    ("rows.jsonl", "zstd", "zstd-compressed, not JSON text (its first bytes are zstd's): decompress it (zstd -d FILE) "
                           "and ingest the result"),
    ("rows.jsonl", "utf-16", "UTF-16 (little-endian) text (with a byte-order mark), not UTF-8: re-encode it as UTF-8 "
                             "(iconv -f UTF-16 -t UTF-8 FILE > NEW) and ingest the result"),
    ("rows.json", "utf-16-le", "UTF-16 (little-endian) text (no byte-order mark), not UTF-8: re-encode it as UTF-8 "
                               "(iconv -f UTF-16LE -t UTF-8 FILE > NEW) and ingest the result"),
    ("rows.json", "utf-32-be", "UTF-32 (big-endian) text (no byte-order mark), not UTF-8: re-encode it as UTF-8 "
                               "(iconv -f UTF-32BE -t UTF-8 FILE > NEW) and ingest the result"),
])
def test_a_compressed_or_utf16_json_file_is_quarantined_saying_what_it_is(wh, tmp_path, name, content, error):
    import gzip

    data = {"gzip": lambda: gzip.compress(ROW.encode()),
            "zstd": lambda: b"\x28\xb5\x2f\xfd" + b"\x00" * 12}.get(content, lambda: ROW.encode(content))()
    one_file(wh, tmp_path, name, data)
    [q] = quarantine(wh)
    assert (q["source_format"], q["stage"], q["locator"], q["error"]) == (None, "decode", "", error)
    assert q["raw_bytes"] == len(data)


def test_forcing_a_format_reads_a_file_it_would_not_detect(wh, tmp_path):
    path = write_text(tmp_path / "odd.json", '[{"question": "q", "response": "r", "shebang": "not dataloop"}]')
    wh.ingest(path, source_format="trait_interp")
    assert wh.rows("SELECT prompt, extra FROM responses") == [{"prompt": "q", "extra": '{"shebang":"not dataloop"}'}]


def test_unreadable_file(wh, tmp_path, monkeypatch):
    path = write_text(tmp_path / "in" / "responses.json", '[{"prompt": "p", "response": "r"}]')
    import warehouse.filesystems as opening  # where a local source is opened

    real_open = open

    def guarded(p, *a, **k):
        if str(p) == str(path):
            raise PermissionError(13, "Permission denied")
        return real_open(p, *a, **k)

    monkeypatch.setattr(opening, "open", guarded, raising=False)
    s = wh.ingest(tmp_path / "in")
    assert s.files_unreadable == 1
    [q] = quarantine(wh)
    assert (q["stage"], q["error"]) == ("read", "cannot read: permission denied (check the file's permissions)")
    assert wh.rows("SELECT status, sha256 FROM sources") == [{"status": "unreadable", "sha256": None}]
    monkeypatch.undo()
    s = wh.ingest(tmp_path / "in")  # readable again: an unreadable file is always retried
    assert s.files_ingested == 1 and quarantine(wh) == []


def test_broken_symlink_and_symlink_loop_in_a_tree(wh, tmp_path):
    tree = tmp_path / "tree"
    write_text(tree / "a" / "responses.json", '[{"prompt": "p", "response": "r"}]')
    os.symlink(tree / "missing.json", tree / "a" / "dangling.json")
    os.symlink(tree, tree / "a" / "loop")
    s = wh.ingest(tree)
    assert s.files_ingested == 1 and s.files_unreadable == 1
    assert any("already walked" in n for n in s.notes)
    [q] = quarantine(wh)
    assert q["source_path"].endswith("dangling.json")
    assert q["error"] == "cannot read: broken symlink (No such file or directory)"


def test_a_single_object_over_the_record_limit_is_not_loaded(wh, tmp_path):
    body = '{"prompt": "p", "response": "' + "x" * 5000 + '"}'
    one_file(wh, tmp_path, f"{RESP}/1.json", body, max_record_mb=1024 / 2**20)
    [q] = quarantine(wh)
    assert (q["stage"], q["raw_bytes"]) == ("read", len(body))
    assert q["error"] == (
        f"file is {len(body)} bytes, over the 1024-byte record limit, and is a single JSON object "
        "(only arrays are streamed); raise --max-record-mb to read it"
    )


def test_large_arrays_are_streamed_element_by_element(wh, tmp_path):
    elements = ",".join(f'{{"prompt": "p{i}", "response": "{"y" * 300}"}}' for i in range(20))
    path, s = one_file(wh, tmp_path, "responses.json", "[" + elements + ', 7, {"prompt": "last", "response": "r"}]',
                       max_record_mb=1024 / 2**20)
    assert (s.records_ingested, s.records_quarantined) == (21, 1)
    assert wh.one("SELECT sha256 FROM sources") == __import__("hashlib").sha256(path.read_bytes()).hexdigest()
    assert quarantine(wh)[0]["locator"] == "[20]"


def test_a_streamed_array_with_a_syntax_error_keeps_what_came_before(wh, tmp_path):
    elements = ",".join(f'{{"prompt": "p{i}", "response": "{"z" * 300}"}}' for i in range(5))
    path, s = one_file(wh, tmp_path, "responses.json", "[" + elements + ", {oops}]", max_record_mb=512 / 2**20)
    assert s.records_ingested == 5 and s.records_quarantined == 1
    [q] = quarantine(wh)
    assert q["stage"] == "decode" and q["locator"] == "[5:]"
    assert q["error"].startswith("invalid JSON in a streamed array after element 4: ")


def test_a_bug_in_a_mapping_quarantines_the_record_and_the_run_goes_on(wh, tmp_path, monkeypatch):
    def broken(self, record, ctx):
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(TraitInterp, "map", broken)
    path, s = one_file(wh, tmp_path, "responses.json", '[{"prompt": "p", "response": "r"}]')
    [q] = quarantine(wh)
    assert q["error"] == "internal error in the trait_interp mapping (ZeroDivisionError: division by zero); please report it"


@pytest.mark.parametrize("name", ["prompt set", "generation metadata"])
def test_sidecar_files_with_the_wrong_shape(wh, tmp_path, name):
    if name == "prompt set":
        path = write_text(tmp_path / "datasets/inference/s.json", '{"name": "x", "items": []}')
        error = ("prompt set: expected a 'prompts' or 'questions' list (keys: items, name); a steering question set is "
                 '{"questions": [...]}, an inference prompt set {"prompts": [{"id", "text"}, ...]}')
    else:
        path = write_text(tmp_path / "experiments/x/extraction/c/t/responses/metadata.json", '{"temperature": "hot"}')
        error = "temperature: expected a number, got string 'hot'"
    wh.ingest(path)
    [q] = quarantine(wh)
    assert q["error"] == error


def test_empty_files_whatever_their_place(wh, tmp_path):
    write_text(tmp_path / "in" / "rows.jsonl", "")
    write_text(tmp_path / "in" / "blank.json", " \n\t")
    s = wh.ingest(tmp_path / "in")
    assert (s.files_ingested, s.records_ingested, s.records_quarantined) == (2, 0, 1)
    rows = wh.rows("SELECT regexp_extract(source_path, '[^/]+$') AS name, source_format, status, records, records_quarantined "
                   "FROM sources ORDER BY 1")
    assert rows == [
        {"name": "blank.json", "source_format": None, "status": "ingested", "records": 1, "records_quarantined": 1},
        {"name": "rows.jsonl", "source_format": None, "status": "empty", "records": 0, "records_quarantined": 0},
    ]
    assert [(q["stage"], q["error"]) for q in quarantine(wh)] == [("decode", "empty file: expected a JSON document")]
