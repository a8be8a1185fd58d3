"""Storage: idempotent re-ingest, replacement of changed files, pruning, atomic commits, the lock."""

from __future__ import annotations

import os
import shutil
import threading
import time

import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

import warehouse
from warehouse.errors import LockedError, StrictModeError
from warehouse.store.readable import snapshot_files
from warehouse.store.snapshots import RUN_ID
from warehouse.store.storage import Store

from ..conftest import FIXTURES, Warehouse, normalize_rows, write_json


def steering_file(root, name="L25_c-10.0_2026-01-23_05-39-08.json", rows=None):
    rows = rows if rows is not None else [
        {"prompt": f"q{i}", "response": f"a{i}", "system_prompt": None, "trait_score": float(i), "coherence_score": 50.0}
        for i in range(3)
    ]
    return write_json(root / "experiments/x/steering/c/t/instruct/response__5/steering/responses/residual/probe" / name, rows)


def counts(w: Warehouse) -> dict:
    return {t: w.one(f"SELECT count(*) FROM {t}") for t in ("responses", "evaluations", "sources", "quarantine")}


def test_every_table_exists_and_is_typed_on_an_empty_warehouse(wh, tmp_path):
    (tmp_path / "nothing").mkdir()
    wh.ingest(tmp_path / "nothing")  # an ingest that finds nothing still makes the (empty) warehouse
    con = warehouse.connect(wh.root)
    for name, table in warehouse.TABLES.items():
        # the stored table (raw.*): the view of the same name may reshape it (token_values: a row per token)
        cols = [r[0] for r in con.execute(f"DESCRIBE raw.{name}").fetchall()]
        assert cols[: len(table.columns)] == table.column_names or set(table.column_names) <= set(cols), name
        assert con.execute(f"SELECT count(*) FROM {name}").fetchone() == (0,)


def test_reingest_of_unchanged_files_writes_nothing(wh, tmp_path):
    src = tmp_path / "src"
    steering_file(src)
    first = wh.ingest(src)
    files = everything_under(wh.root)
    second = wh.ingest(src)
    assert (first.files_ingested, second.files_ingested, second.files_unchanged) == (1, 0, 1)
    assert not second.committed
    assert everything_under(wh.root) == files and Store(wh.root).snapshot_numbers() == [1]
    assert counts(wh)["responses"] == 3


def test_touched_but_identical_file_is_not_parsed_again(wh, tmp_path):
    src = tmp_path / "src"
    f = steering_file(src)
    wh.ingest(src)
    ids = wh.rows("SELECT response_id FROM responses ORDER BY 1")
    os.utime(f, ns=(time.time_ns(), time.time_ns() + 10**9))
    again = wh.ingest(src)
    assert again.files_unchanged == 1 and again.files_ingested == 0 and again.records_ingested == 0
    assert wh.rows("SELECT response_id FROM responses ORDER BY 1") == ids
    # the new mtime is recorded, so the next run skips the file without reading it
    assert wh.ingest(src).bytes_read == 0


def test_changed_file_replaces_exactly_its_rows(wh, tmp_path):
    src = tmp_path / "src"
    f = steering_file(src)
    other = steering_file(src, "L20_c2.0_2026-01-23_05-39-08.json")
    wh.ingest(src)
    before_other = wh.rows("SELECT response_id, response FROM responses WHERE source_path = ? ORDER BY 1", [str(other)])
    steering_file(src, rows=[{"prompt": "new", "response": "changed", "trait_score": 1.0}])
    summary = wh.ingest(src)
    assert summary.files_ingested == 1 and summary.files_unchanged == 1
    rows = wh.rows("SELECT prompt, response FROM responses WHERE source_path = ?", [str(f)])
    assert rows == [{"prompt": "new", "response": "changed"}]
    assert wh.one("SELECT count(*) FROM evaluations WHERE source_path = ?", [str(f)]) == 1
    assert wh.rows("SELECT response_id, response FROM responses WHERE source_path = ? ORDER BY 1", [str(other)]) == before_other
    assert counts(wh) == {"responses": 4, "evaluations": 7, "sources": 2, "quarantine": 0}


def test_a_fixed_file_leaves_no_stale_quarantine_rows(wh, tmp_path):
    src = tmp_path / "src"
    f = steering_file(src, rows=[{"prompt": "q", "response": "a"}, "not a record"])
    wh.ingest(src)
    assert counts(wh)["quarantine"] == 1
    steering_file(src, rows=[{"prompt": "q", "response": "a"}])
    wh.ingest(src)
    assert counts(wh)["quarantine"] == 0
    assert wh.one("SELECT records_quarantined FROM sources WHERE source_path = ?", [str(f)]) == 0


def test_deleted_files_are_kept_until_prune(wh, tmp_path):
    src = tmp_path / "src"
    keep = steering_file(src)
    gone = steering_file(src, "L20_c2.0_2026-01-23_05-39-08.json")
    wh.ingest(src)
    gone.unlink()
    summary = wh.ingest(src)
    assert summary.files_gone == 1 and counts(wh)["responses"] == 6
    assert "--prune" in summary.text()
    pruned = wh.ingest(src, prune=True)
    assert pruned.files_removed == 1
    assert wh.rows("SELECT DISTINCT source_path FROM responses") == [{"source_path": str(keep)}]
    assert counts(wh)["sources"] == 1


def test_prune_only_touches_the_given_paths(wh, tmp_path):
    a = steering_file(tmp_path / "a")
    b = steering_file(tmp_path / "b")
    wh.ingest(tmp_path / "a", tmp_path / "b")
    b.unlink()
    wh.ingest(tmp_path / "a", prune=True)  # b's tree was not walked: its rows stay
    assert {r["source_path"] for r in wh.rows("SELECT source_path FROM sources")} == {str(a), str(b)}
    wh.ingest(tmp_path / "b", prune=True)
    assert {r["source_path"] for r in wh.rows("SELECT source_path FROM sources")} == {str(a)}


def test_strict_mode_stops_at_the_first_bad_record_and_changes_nothing(wh, tmp_path):
    src = tmp_path / "src"
    steering_file(src)
    wh.ingest(src)
    files_before = everything_under(wh.root)
    bad = steering_file(src, "L20_c2.0_2026-01-23_05-39-08.json", rows=[{"prompt": "q", "response": "a"}, 17])
    with pytest.raises(StrictModeError) as e:
        wh.ingest(src, strict=True)
    assert str(e.value) == f"{bad}[1]: map: expected a JSON object for the response record, got number 17"
    assert everything_under(wh.root) == files_before  # no snapshot, no Delta version, no file of the run


def everything_under(root) -> dict[str, bytes]:
    """Every file under the root with its bytes (but the lock's, which says who holds it)."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and p.name != "lock"}


def files_of_unfinished_runs(root) -> list[str]:
    """Data files whose run (the start of every file name of a run) has no snapshot."""
    known = {r.run_id for r in Store(root).snapshots()}
    return sorted(str(p.relative_to(root)) for p in root.rglob("*.parquet")
                  if RUN_ID.match(p.name) and RUN_ID.match(p.name).group() not in known)


def test_an_interrupt_before_the_commit_leaves_the_old_state_and_no_file_of_the_run(wh, tmp_path, monkeypatch):
    src = tmp_path / "src"
    steering_file(src)
    wh.ingest(src)
    before = wh.rows("SELECT response FROM responses ORDER BY 1")
    steering_file(src, rows=[{"prompt": "q", "response": "new"}])

    def boom(self, record):
        raise KeyboardInterrupt  # as a Ctrl-C between the table commits and the snapshot

    monkeypatch.setattr(Store, "write_snapshot", boom)
    with pytest.raises(KeyboardInterrupt, match="as it was before this run"):
        wh.ingest(src)
    monkeypatch.undo()
    assert wh.rows("SELECT response FROM responses ORDER BY 1") == before
    assert DeltaTable(str(wh.root / "responses")).to_pyarrow_table()["response"].to_pylist() == [
        r["response"] for r in before]  # the tables were restored: outside readers see the old rows too
    assert files_of_unfinished_runs(wh.root) == []  # the run's parts, rewrites and catalog were deleted at once
    wh.ingest(src)
    assert wh.rows("SELECT response FROM responses") == [{"response": "new"}]


def test_files_of_a_killed_run_are_collected_by_the_next_one(wh, tmp_path):
    src = tmp_path / "src"
    steering_file(src)
    wh.ingest(src)
    orphan = wh.root / "responses" / "20000101T000000000Z-dead-b00001.parquet"  # as a SIGKILL leaves it
    shutil.copy(snapshot_files(wh.root)["responses"][0], orphan)
    steering_file(src, rows=[{"prompt": "q", "response": "new"}])
    wh.ingest(src)
    assert not orphan.exists()
    assert files_of_unfinished_runs(wh.root) == []


def test_changing_one_file_per_ingest_never_makes_file_names_grow(wh, tmp_path):
    """Each rewrite of a Parquet file without a changed source's rows gets a name of its own run,
    not one built from the old name (which grew by ~28 characters per rewrite until ENAMETOOLONG)."""
    src = tmp_path / "src"
    names = [f"L{i}_c1.0_2026-01-01_00-00-00.json" for i in range(12)]
    for name in names:
        steering_file(src, name)
    wh.ingest(src)
    for n, name in enumerate(names):
        path = steering_file(src, name, rows=[{"prompt": "q", "response": f"changed {n}"}])
        os.utime(path, ns=(time.time_ns(), time.time_ns() + (n + 1) * 10**9))
        s = wh.ingest(src)
        assert s.files_ingested == 1 and s.committed
    assert counts(wh)["responses"] == 12
    assert max(len(p.name) for p in wh.root.rglob("*.parquet")) <= len("20260101T000000000Z-abcd-rw00001.parquet")


def test_parquet_files_are_zstd_with_declared_schema(wh, tmp_path):
    steering_file(tmp_path / "src")
    wh.ingest(tmp_path / "src")
    path = snapshot_files(wh.root)["responses"][0]
    meta = pq.ParquetFile(path).metadata
    assert meta.row_group(0).column(0).compression == "ZSTD"
    assert pq.read_schema(path).names == warehouse.TABLES["responses"].column_names


def test_a_second_ingest_waits_for_the_lock_or_fails_with_no_wait(wh, tmp_path):
    store = Store(wh.root)
    steering_file(tmp_path / "src")
    with store.lock():
        with pytest.raises(LockedError, match="is being written by pid"):
            wh.ingest(tmp_path / "src", wait=False)
        done = threading.Event()
        t = threading.Thread(target=lambda: (wh.ingest(tmp_path / "src"), done.set()))
        t.start()
        time.sleep(0.3)
        assert not done.is_set()  # waiting
    t.join(10)
    assert done.is_set() and counts(wh)["responses"] == 3


def test_parallel_ingest_gives_the_same_rows_as_inline(tmp_path, monkeypatch):
    from warehouse.run import batches
    inline, parallel = Warehouse(tmp_path / "a"), Warehouse(tmp_path / "b")
    src = FIXTURES / "trait_interp"
    inline.ingest(src, jobs=1)
    # force the process pool and several batches even for a small tree
    monkeypatch.setattr(batches, "INLINE_MAX_FILES", 0)
    monkeypatch.setattr(batches, "MIN_BATCH_BYTES", 1)
    monkeypatch.setattr(batches, "MIN_BATCH_FILES", 1)
    parallel.ingest(src, jobs=2)
    q = "SELECT * FROM {} ORDER BY source_path, source_locator"
    for table in ("responses", "turns", "evaluations", "prompts"):
        assert normalize_rows(inline.rows(q.format(table))) == normalize_rows(parallel.rows(q.format(table))), table
    assert len(snapshot_files(parallel.root)["responses"]) >= 2  # several batches really ran


def test_connection_sees_a_consistent_snapshot_while_an_ingest_commits(wh, tmp_path):
    src = tmp_path / "src"
    steering_file(src)
    wh.ingest(src)
    con = warehouse.connect(wh.root)
    steering_file(src, rows=[{"prompt": "q", "response": "v2"}])
    wh.ingest(src)
    # the old connection still reads its snapshot (replaced files stay until `warehouse compact`)
    assert con.execute("SELECT count(*) FROM responses").fetchone() == (3,)
    assert warehouse.connect(wh.root).execute("SELECT count(*) FROM responses").fetchone() == (1,)
