"""A run for a pool starts its batches while its walk goes on (``warehouse/run/walk_ahead.py``): the
batches are cut from what the walk finds as it finds it, and the run ends as the one that walked first.

The walk is held, part-way, until the run's first batch has started: a run that waited for the walk's end
before its first batch would never start it, and the test says so (the wait is a guard, not a measure).
"""

from __future__ import annotations

import os
import threading

import pytest

import warehouse
from warehouse.run.batches import cut_batches, plan_batches
from warehouse.run.worker import WorkItem

from ..conftest import write_json

FILES = 30
HELD_AT = 10  # the walk waits for the first batch after this many files


def _tree(src) -> None:
    tree = src / "experiments" / "e" / "inference" / "instruct" / "responses" / "set"
    for i in range(FILES):
        write_json(tree / f"{i:03d}.json", {"prompt": f"p{i}", "response": f"r{i}"})
    # found late in the walk (names are walked in order), on the walk's thread: quarantined all the same
    with open(os.path.join(os.fsencode(tree), b"zz\xe9.json"), "w") as out:
        out.write('{"prompt": "p", "response": "r"}')


@pytest.fixture
def small_batches(monkeypatch):
    """A pool from five files on, and a batch of a few files (its bytes never cut one)."""
    from warehouse.run import batches

    monkeypatch.setattr(batches, "INLINE_MAX_FILES", 4)
    monkeypatch.setattr(batches, "MIN_BATCH_FILES", 3)
    monkeypatch.setattr(batches, "MIN_BATCH_BYTES", 1 << 40)


def _held_walk(monkeypatch, after: int, then):
    """The run's walk, calling ``then()`` once it has found ``after`` entries."""
    from warehouse.run import work

    real = work.walk

    def walk(*args, **kwargs):
        for n, found in enumerate(real(*args, **kwargs), start=1):
            yield found
            if n == after:
                then()

    monkeypatch.setattr(work, "walk", walk)


def _tables(root) -> dict[str, list[tuple]]:
    con = warehouse.connect(str(root))
    return {
        "responses": con.execute("SELECT source_path, response_id, prompt, response FROM responses ORDER BY ALL").fetchall(),
        "sources": con.execute("SELECT source_path, sha256, size_bytes FROM sources ORDER BY ALL").fetchall(),
        "quarantine": con.execute("SELECT source_path, stage, error FROM quarantine ORDER BY ALL").fetchall(),
        "path_fields": con.execute("SELECT * FROM path_fields ORDER BY ALL").fetchall(),
    }


def test_a_run_for_a_pool_starts_its_batches_while_its_walk_goes_on_and_ends_as_one_that_walked_first(
        tmp_path, monkeypatch, small_batches):
    from warehouse.run import pool

    src = tmp_path / "src"
    _tree(src)
    walked = warehouse.ingest(str(src), str(tmp_path / "walked"), jobs=1, progress=False)
    started = threading.Event()
    real_here = pool._here
    monkeypatch.setattr(pool, "_here", lambda *a, **k: started.set() or real_here(*a, **k))
    waited = []
    _held_walk(monkeypatch, HELD_AT, lambda: waited.append(started.wait(120)))
    streamed = warehouse.ingest(str(src), str(tmp_path / "streamed"), jobs=2, progress=False)
    assert waited == [True], "the first batch started only once the walk was over"
    assert (streamed.files_seen, streamed.files_ingested, streamed.files_unreadable, streamed.records_ingested) == (
        walked.files_seen, walked.files_ingested, walked.files_unreadable, walked.records_ingested) == (
        FILES + 1, FILES, 1, FILES)
    assert _tables(tmp_path / "streamed") == _tables(tmp_path / "walked")
    assert len(list((tmp_path / "streamed" / "responses").glob("*.parquet"))) > 1  # batches, cut as it walked


def test_the_walk_s_error_is_the_run_s_and_the_run_leaves_nothing(tmp_path, monkeypatch, small_batches):
    src = tmp_path / "src"
    _tree(src)

    def fail():
        raise OSError("the disk went away")

    _held_walk(monkeypatch, HELD_AT, fail)
    with pytest.raises(warehouse.WarehouseError, match="the disk went away"):
        warehouse.ingest(str(src), str(tmp_path / "wh"), jobs=2, progress=False)
    assert not (tmp_path / "wh").exists()
    assert not [t for t in threading.enumerate() if t.name == "walk"]


def test_strict_stops_the_walk_going_on_beside_the_batches(tmp_path, monkeypatch, small_batches):
    src = tmp_path / "src"
    _tree(src)
    tree = src / "experiments" / "e" / "inference" / "instruct" / "responses" / "set"
    (tree / "000.json").write_text('{"prompt": "p", "response": ')  # the first batch's: --strict stops there
    with pytest.raises(warehouse.StrictModeError):
        warehouse.ingest(str(src), str(tmp_path / "wh"), jobs=2, strict=True, progress=False)
    assert not (tmp_path / "wh").exists()
    assert not [t for t in threading.enumerate() if t.name in ("walk", "path-fields")]


def test_batches_cut_as_the_walk_finds_files_grow_with_what_it_has_found(monkeypatch):
    from warehouse.run import batches

    monkeypatch.setattr(batches, "MIN_BATCH_FILES", 2)
    monkeypatch.setattr(batches, "MIN_BATCH_BYTES", 1 << 40)
    items = [WorkItem(f"/src/{i:03d}.json") for i in range(200)]
    found = 0

    def walking():
        nonlocal found
        for item in items:
            found += 1
            yield item, 10

    cut = list(cut_batches(walking(), 2, lambda: (found, found * 10)))
    assert [i for b in cut for i in b] == items  # every file once, in the walk's order
    sizes = [len(b) for b in cut]
    assert sizes[0] == 2 and sizes[:-1] == sorted(sizes[:-1]) and sizes[-2] > 2  # (the last: what was left)
    # what is known from the start cuts as plan_batches does
    assert list(cut_batches(((i, 10) for i in items), 2, lambda: (200, 2000))) == plan_batches(items, [10] * 200, 2)
    assert [len(b) for b in plan_batches(items, [10] * 200, 2)] == [26] * 7 + [18]


def test_what_depends_on_a_changed_file_is_read_again_when_the_walk_goes_on_beside_the_batches(
        tmp_path, monkeypatch, small_batches):
    """The files built from a changed one that the walk does not reach are found at its end (``Walk.finish``),
    here on the walk's thread: they reach the batches all the same."""
    from warehouse.run import batches

    monkeypatch.setattr(batches, "INLINE_MAX_FILES", 0)  # a pool from the first changed file on
    responses = tmp_path / "experiments/e/inference/instruct/responses/set"
    for i in range(FILES):
        write_json(responses / f"{i}.json", {"prompt": f"p{i}", "response": f"inside text {i}"})
    write_json(tmp_path / "experiments/e/analysis/detailed_annotations.json", {
        "metadata": {"response_source": str(responses)},
        "detailed_annotations": {"1": {"exploitations": [{"bias": 1, "tokens": [0, 1], "text": "inside"}]}}})
    root = str(tmp_path / "wh")
    first = warehouse.ingest(str(tmp_path / "experiments"), root, jobs=2, progress=False)
    assert first.files_ingested == FILES + 1
    write_json(responses / "1.json", {"prompt": "p1", "response": "outside, inside text"})
    # the responses alone: their annotations are not walked, but built from a file that changed
    again = warehouse.ingest(str(responses), root, jobs=2, progress=False)
    assert (again.files_ingested, again.files_unchanged) == (2, FILES - 1)  # the changed file, and its annotations
    con = warehouse.connect(root)
    assert con.execute("SELECT char_start FROM annotations WHERE span = 'inside'").fetchall() == [(9,)]
