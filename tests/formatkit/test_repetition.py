"""What a locator or a message repeats is bounded: a long key is cut (with a hash), a long message is cut.

A locator is written on every row of a record and a message may quote a source key: without a bound, a
1 MB prompt key on 300 parts is 300 MB of source_locator, a 50 MB key a 50 MB quarantine.error
(bench/hostile.py measures both). The values themselves are never cut: they are data.
"""

from __future__ import annotations

import json

import pytest

from warehouse.errors import StrictModeError
from warehouse.formatkit.records import KEY_LIMIT, LOCATOR_LIMIT, MESSAGE_LIMIT, key_step, short_locator, short_message

from ..conftest import write_json


def prompt_file(prompts: dict) -> dict:
    return {"shebang": "dataloop", "metadata": {"dltype": "prompt"}, "prompts": prompts}


def test_a_long_key_is_cut_with_a_hash_and_never_mistaken_for_another():
    assert key_step("1") == '["1"]'
    exact = "k" * KEY_LIMIT
    assert key_step(exact) == json.dumps([exact])  # written whole up to the limit
    a, b = key_step("k" * KEY_LIMIT + "a"), key_step("k" * KEY_LIMIT + "b")
    assert a != b and a.startswith('["' + exact + "\u2026#") and len(a) < KEY_LIMIT + 30
    # the cut form is longer than any key written whole, so no real key reads like it
    assert len(json.loads(a)[0]) > KEY_LIMIT


def test_long_locators_and_messages_are_bounded():
    assert short_locator("[3].x") == "[3].x" and short_message("bad") == "bad"
    long_locator = ".a" * LOCATOR_LIMIT
    cut = short_locator(long_locator)
    assert len(cut) == LOCATOR_LIMIT and cut != short_locator(long_locator + "b")
    message = short_message("m" * (MESSAGE_LIMIT * 10))
    assert len(message) < MESSAGE_LIMIT + 60 and message.endswith(f"(message cut: {MESSAGE_LIMIT * 10:,} characters)")


def test_a_long_prompt_key_is_written_once_per_row_as_data_not_in_every_locator(wh, tmp_path):
    key = "k" * 100_000
    parts = [{"mimetype": "application/text", "value": f"part {i}"} for i in range(20)]
    path = write_json(tmp_path / "src" / "prompt.json", prompt_file({key: parts, "k" * 100_000 + "2": parts[:1]}))
    wh.ingest(path)
    turns = wh.rows("SELECT turn_index, prompt_key, source_locator FROM turns ORDER BY turn_index, part_index")
    assert len(turns) == 21 and all(len(t["source_locator"]) < 200 for t in turns)
    assert len({t["source_locator"] for t in turns}) == 21  # still one place each
    assert {t["prompt_key"] for t in turns if t["turn_index"] == 0} == {key}  # the value itself is kept whole
    assert turns[0]["source_locator"] == ".prompts" + key_step(key) + "[0]"


def test_a_huge_key_in_a_bad_record_gives_a_bounded_message_and_locator(wh, tmp_path):
    from ..conftest import Warehouse

    key = "k" * 1_000_000
    path = tmp_path / "src" / "prompt.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(prompt_file({key: "not a list"})))
    wh.ingest(path)
    [q] = wh.rows("SELECT locator, error FROM quarantine")
    assert len(q["locator"]) < 200 and len(q["error"]) < MESSAGE_LIMIT + 60
    assert q["error"].startswith("prompt 'kkk") and q["error"].endswith("characters)")
    with pytest.raises(StrictModeError) as e:
        Warehouse(tmp_path / "strict").ingest(path, strict=True)
    assert len(str(e.value)) < MESSAGE_LIMIT + LOCATOR_LIMIT
