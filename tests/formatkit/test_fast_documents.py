"""The document path (many whole .json files mapped at once) gives exactly the record path's rows.

trait-interp maps inference files of its common flat shape together (``trait_interp/fast.py``)
and leaves every other file to ``map_response``. Each case says whether the document path
takes the file, so a comparison can never quietly become the record path against itself.
Rows are compared as sets: a group's rows are written together, the files it leaves after
them (as with ``fast_lines``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from warehouse.formats.trait_interp import TraitInterp, fast
from warehouse.formats.trait_interp.responses import _tokens_suspect

from ..conftest import FIXTURES, batch_rows

TABLES = ("responses", "turns", "sentence_boundaries", "evaluations", "quarantine")
TOKENS = ["<bos>", "Hi", ",", " there"]
FULL = {"prompt": "p", "response": "r", "system_prompt": None, "tokens": TOKENS, "token_ids": [2, 3, 4, 5],
        "prompt_end": 2, "prefill_end": None, "inference_model": "m", "prompt_note": "roleplay",
        "capture_date": "2026-01-17T00:58:35", "tags": ["a", "b"]}

#: (file name, bytes, taken by the document path)
CASES = [
    ("full.json", json.dumps(FULL, indent=2).encode(), True),
    ("minimal.json", b'{"prompt": "p", "response": "r"}', True),
    ("response-only.json", b'{"response": "r"}', True),
    ("nulls.json", b'{"prompt": null, "response": "r", "tokens": null, "token_ids": null, "tags": null, "prompt_end": null}', True),
    ("comma-tokens.json", json.dumps({**FULL, "tokens": ["a, b", "c"], "token_ids": [1, 2]}).encode(), True),
    ("comma-only-token.json", json.dumps({**FULL, "tokens": ["a", ", "], "token_ids": [1, 2]}).encode(), True),
    # "," ending one file's last token, " " starting the next file's: side by side in Arrow's buffer, no hit
    ("comma-then-space-1.json", json.dumps({**FULL, "tokens": ["a", "b,"], "token_ids": [1, 2]}).encode(), True),
    ("comma-then-space-2.json", json.dumps({**FULL, "tokens": [" c", "d", ""], "token_ids": [1, 2, 3]}).encode(), True),
    ("lengths-differ.json", json.dumps({**FULL, "token_ids": [1]}).encode(), True),
    ("unicode.json", json.dumps({**FULL, "response": "caf\u00e9 \U0001f600"}, ensure_ascii=False).encode(), True),
    ("escaped-key-text.json", b'{"prompt": "\\"response_source\\": x", "response": "r"}', True),
    ("big-int.json", b'{"prompt": "p", "response": "r", "prompt_end": 9223372036854775807}', True),
    # left to the record path: it converts, refuses or keeps in extra what the document path would not
    ("float-int.json", b'{"prompt": "p", "response": "r", "prompt_end": 5.0}', False),
    ("bool-int.json", b'{"prompt": "p", "response": "r", "prompt_end": true}', False),
    ("too-big-int.json", b'{"prompt": "p", "response": "r", "prompt_end": 9223372036854775808}', False),
    ("float-ids.json", b'{"prompt": "p", "response": "r", "token_ids": [1.0, 2]}', False),
    ("number-token.json", b'{"prompt": "p", "response": "r", "tokens": ["a", 1]}', False),
    ("string-tags.json", b'{"prompt": "p", "response": "r", "tags": "a"}', False),
    ("other-key.json", b'{"prompt": "p", "response": "r", "seed": 3}', False),
    ("question.json", b'{"question": "q", "response": "r"}', False),
    ("scores.json", b'{"prompt": "p", "response": "r", "trait_score": 0.5}', False),
    ("nested.json", b'{"prompt": {"text": "p"}, "response": {"text": "r"}}', False),
    ("text-number.json", b'{"prompt": 3, "response": "r"}', False),
    ("array.json", b'[{"prompt": "p", "response": "r"}]', False),
    ("no-keys.json", b'{"tags": []}', False),
    ("bom.json", b'\xef\xbb\xbf{"prompt": "p", "response": "r"}', False),
    ("invalid.json", b'{"prompt": "p", "response": ', False),
    ("nan.json", b'{"prompt": "p", "response": "r", "trait_score": NaN}', False),
    ("latin1.json", b'{"prompt": "caf\xe9", "response": "r"}', False),
]


def write_cases(tmp_path: Path, cases) -> list[Path]:
    folder = tmp_path / "src" / "experiments" / "x" / "inference" / "instruct" / "responses" / "set"
    folder.mkdir(parents=True)
    paths = []
    for name, data, _taken in cases:
        (folder / name).write_bytes(data)
        paths.append(folder / name)
    return paths


def ingest_batch(paths: list[Path], root: Path, fast_paths: bool) -> dict:
    """Every table's rows (sorted), the catalog rows and the record counts of one batch of ``paths``."""
    out, result = batch_rows(paths, root, fast_paths, TABLES)
    out["records"] = (result.records_ingested, result.records_quarantined)
    return out


def test_the_document_path_takes_what_it_should():
    ingestor = TraitInterp()
    path = "/x/experiments/e/inference/instruct/responses/set/{}"
    docs = [(path.format(name), data) for name, data, _ in CASES]
    gathered = [ingestor.fast_document(p, data.removeprefix(b"\xef\xbb\xbf"), data) for p, data in docs]
    result = ingestor.fast_documents([doc for doc, took in zip(docs, gathered) if took])
    left = {i for i, took in enumerate(gathered) if not took}
    gathered_at = [i for i, took in enumerate(gathered) if took]
    left |= {gathered_at[i] for i in result.rest}
    assert {name: i not in left for i, (name, *_) in enumerate(CASES)} == {name: taken for name, _, taken in CASES}


@pytest.mark.parametrize("name, data, taken", CASES, ids=[c[0] for c in CASES])
def test_each_file_gives_the_same_rows_either_way(tmp_path, name, data, taken):
    paths = write_cases(tmp_path, [(name, data, taken)])
    assert ingest_batch(paths, tmp_path / "fast", True) == ingest_batch(paths, tmp_path / "slow", False)


def test_a_batch_of_taken_and_left_files_gives_the_same_rows(tmp_path):
    paths = write_cases(tmp_path, CASES)
    fast, slow = ingest_batch(paths, tmp_path / "fast", True), ingest_batch(paths, tmp_path / "slow", False)
    assert fast == slow
    assert len(fast["responses"]) > sum(taken for *_, taken in CASES)  # the left files' rows are there too


def test_a_value_arrow_refuses_sends_the_group_through_map(tmp_path):
    """A boolean token id passes the record path's check (array("q")) but not Arrow: the document
    path hands its whole group back, and each record is mapped (or quarantined) on its own."""
    cases = [("ok.json", b'{"prompt": "p", "response": "r"}', True),
             ("bool-id.json", b'{"prompt": "p", "response": "r", "token_ids": [true, 2]}', True),
             ("ok2.json", b'{"prompt": "q", "response": "s"}', True)]
    paths = write_cases(tmp_path, cases)
    fast = ingest_batch(paths, tmp_path / "fast", True)
    assert fast == ingest_batch(paths, tmp_path / "slow", False)
    assert fast["records"] == (2, 1)


def test_the_trait_interp_fixtures_give_the_same_rows_either_way(tmp_path):
    paths = sorted((FIXTURES / "trait_interp").rglob("*.json"))
    assert paths
    assert ingest_batch(paths, tmp_path / "fast", True) == ingest_batch(paths, tmp_path / "slow", False)


def test_tokens_suspect_of_a_whole_group_is_the_record_paths():
    """``fast._suspect`` finds ", " in the tokens' bytes all at once: a comma ending one token and
    a space starting the next (in a row, or across rows) is no hit; a sliced array keeps its place."""
    rows = [(["a,", " b"], None), (["x, y"], [1]), ([",", " "], [1, 2]), None, ([], []), (["", ", "], [1]),
            (["c,"], [1]), ([" d", "e"], [1, 2]), (["f", "g"], None), ([", "], [1, 2])]
    tokens = pa.array([r and r[0] for r in rows], pa.list_(pa.string()))
    ids = pa.array([r and r[1] for r in rows], pa.list_(pa.int64()))
    expected = [_tokens_suspect(*r) if r else None for r in rows]
    assert fast._suspect(tokens, ids).to_pylist() == expected
    for start in range(1, len(rows)):
        assert fast._suspect(tokens[start:], ids[start:]).to_pylist() == expected[start:]
        assert fast._suspect(tokens[:start], ids[:start]).to_pylist() == expected[:start]
