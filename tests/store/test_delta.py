"""Delta Lake storage: outside readers agree with the views; one state across tables; repair; history, as-of, compact."""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb
import polars as pl
import pyarrow as pa
import pytest
from deltalake import DeltaTable

import warehouse
from warehouse.errors import StorageError
from warehouse.store import delta
from warehouse.store.storage import Store

from ..conftest import FIXTURES, REPO, Warehouse, write_json, write_text

JSON_COLUMNS = {c.name for t in warehouse.TABLES.values() for c in t.columns if c.json}


def steering(src: Path, name: str, version: str, n: int = 3) -> Path:
    rows = [{"prompt": f"q{k}", "response": f"{version}:{k}", "trait_score": float(k), "coherence_score": 50.0}
            for k in range(n)]
    return write_json(src / "experiments/x/steering/c/t/instruct/response__5/steering/responses/residual/probe" / name, rows)


def conversations(src: Path, version: str) -> Path:
    """Two AfterImage lines (from the fixture) whose first message says ``hi <version>``."""
    first = (FIXTURES / "afterimage" / "conversations_20250304_101500.jsonl").read_text().splitlines()[0]
    line = json.loads(first)
    line["conversations"][0]["content"] = f"hi {version}"
    return write_text(src / "chat.jsonl", json.dumps(line) + "\n" + json.dumps(line) + "\n")


def _norm(v):
    if isinstance(v, float) and math.isnan(v):
        return "NaN"
    if isinstance(v, dt.datetime):
        return v.astimezone(dt.timezone.utc).isoformat()
    if isinstance(v, list):
        return [_norm(x) for x in v]
    if isinstance(v, dict):
        return {k: _norm(x) for k, x in v.items()}
    return v


def canonical(rows: list[dict], columns: list[str]) -> list[str]:
    """Rows as sorted JSON texts over ``columns`` (JSON columns parsed, times in UTC): a multiset to compare."""
    out = []
    for r in rows:
        values = {}
        for c in columns:
            v = r.get(c)
            if c in JSON_COLUMNS and isinstance(v, str):
                v = json.loads(v)
            values[c] = _norm(v)
        out.append(json.dumps(values, sort_keys=True, default=str))
    return sorted(out)


def assert_outside_readers_agree(root: Path) -> dict[str, int]:
    """Every table read by deltalake, polars, DuckDB over the Delta dataset and DuckDB over the file list
    holds exactly the rows of the warehouse's own views. Returns rows per table."""
    con = warehouse.connect(root)
    counts = {}
    try:
        for name in [*warehouse.TABLES, "path_fields"]:
            uri = str(root / name)
            table = DeltaTable(uri)
            columns = [f.name for f in table.schema().fields]
            view = f"raw.{name}" if name in warehouse.TABLES else name
            ours = canonical(con.sql(f"SELECT {', '.join(columns)} FROM {view}").to_arrow_table().to_pylist(), columns)
            readers = {
                "deltalake": table.to_pyarrow_table().to_pylist(),
                "polars.scan_delta": pl.scan_delta(uri).collect().to_dicts(),
            }
            d = duckdb.connect()
            dataset = table.to_pyarrow_dataset()
            d.register("delta_dataset", dataset)
            readers["duckdb dataset"] = d.sql("SELECT * FROM delta_dataset").to_arrow_table().to_pylist()
            files = table.file_uris()
            readers["duckdb read_parquet"] = d.sql(
                "SELECT * FROM read_parquet($files, union_by_name = true)", params={"files": files}
            ).to_arrow_table().to_pylist() if files else []
            d.close()
            for reader, rows in readers.items():
                assert canonical(rows, columns) == ours, f"{name}: {reader} reads other rows than the views"
            counts[name] = len(ours)
    finally:
        con.close()
    return counts


KILL_IN_COMMIT = """
import os, signal, sys
import warehouse
from warehouse.store import delta
real, n = delta.commit_table, [0]
def dying(*a, **k):
    n[0] += 1
    if n[0] == int(sys.argv[3]):
        os.kill(os.getpid(), signal.SIGKILL)  # as a kill -9 between two table commits
    return real(*a, **k)
delta.commit_table = dying
warehouse.ingest([sys.argv[1]], sys.argv[2], progress=False, jobs=1)
"""


def kill_during_commit(src: Path, root: Path, after_tables: int) -> None:
    proc = subprocess.run([sys.executable, "-c", KILL_IN_COMMIT, str(src), str(root), str(after_tables + 1)],
                          cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == -signal.SIGKILL, proc.stderr


def test_outside_readers_agree_with_the_views_after_every_step(wh, tmp_path, monkeypatch):
    src = tmp_path / "src"
    a = steering(src, "L1_c1.0_2026-01-01_00-00-00.json", "v1")
    steering(src, "L2_c1.0_2026-01-01_00-00-00.json", "v1")
    conversations(src, "v1")
    wh.ingest(src)
    first = assert_outside_readers_agree(wh.root)
    assert first["responses"] == 8 and first["sources"] == 3

    steering(src, "L1_c1.0_2026-01-01_00-00-00.json", "v2", n=2)  # a changed file: its rows replaced
    os.utime(a, ns=(a.stat().st_atime_ns, a.stat().st_mtime_ns + 10**9))
    wh.ingest(src)
    assert assert_outside_readers_agree(wh.root)["responses"] == 7

    a.unlink()  # --prune
    wh.ingest(src, prune=True)
    assert assert_outside_readers_agree(wh.root)["responses"] == 5

    conversations(src, "v3")  # Ctrl-C while the batches run: nothing of the run kept
    from warehouse.run import worker
    def interrupted(self):
        raise KeyboardInterrupt
    monkeypatch.setattr(worker.BatchIngest, "run", interrupted)
    with pytest.raises(KeyboardInterrupt, match="as it was before this run"):
        wh.ingest(src)
    monkeypatch.undo()
    assert assert_outside_readers_agree(wh.root)["responses"] == 5
    assert dead_files(wh.root) == []

    kill_during_commit(src, wh.root, after_tables=3)  # SIGKILL between table commits
    assert wh.one("SELECT count(*) FROM responses WHERE response LIKE 'hi v3%'") == 0  # invisible to connect
    summary = wh.ingest(src)  # the next run repairs, then ingests
    assert summary.files_ingested == 1
    counts = assert_outside_readers_agree(wh.root)
    assert counts["responses"] == 5 and wh.one("SELECT count(*) FROM turns WHERE content = 'hi v3'") == 2


def dead_files(root: Path) -> list[str]:
    """Data files of runs that have no snapshot (every file of a run starts with its id)."""
    from warehouse.store.snapshots import RUN_ID

    known = {r.run_id for r in Store(root).snapshots()}
    return sorted(p.name for p in root.rglob("*.parquet") if RUN_ID.match(p.name)
                  and RUN_ID.match(p.name).group() not in known)


def test_a_run_killed_between_table_commits_is_invisible_then_repaired(wh, tmp_path):
    src = tmp_path / "src"
    steering(src, "L1_c1.0_2026-01-01_00-00-00.json", "v1")
    wh.ingest(src)
    before = wh.rows("SELECT response FROM responses ORDER BY 1")
    steering(src, "L1_c1.0_2026-01-01_00-00-00.json", "v2")
    kill_during_commit(src, wh.root, after_tables=2)
    store = Store(wh.root)
    pinned = store.read_snapshot()
    moved = [t for t in pinned.tables if DeltaTable(str(wh.root / t)).version() > pinned.version(t)]
    assert moved, "the killed run committed some tables"
    assert wh.rows("SELECT response FROM responses ORDER BY 1") == before  # readers of the snapshot never see it
    assert dead_files(wh.root)  # the dead run's files are there...
    wh.ingest(src)
    assert dead_files(wh.root) == []  # ... and deleted by the next run
    assert [r["response"] for r in wh.rows("SELECT response FROM responses ORDER BY 1")] == ["v2:0", "v2:1", "v2:2"]
    assert_outside_readers_agree(wh.root)


def test_repair_leaves_a_table_of_the_users_beside_the_warehouse_alone(wh, tmp_path):
    from deltalake import write_deltalake

    src = tmp_path / "src"
    steering(src, "L1_c1.0_2026-01-01_00-00-00.json", "v1")
    wh.ingest(src)
    write_deltalake(str(wh.root / "mine"), pa.table({"a": [1, 2]}))  # not a warehouse table: no snapshot pins it
    steering(src, "L2_c1.0_2026-01-01_00-00-00.json", "v1")
    wh.ingest(src)
    assert DeltaTable(str(wh.root / "mine")).to_pyarrow_table().num_rows == 2


def test_a_failure_between_table_commits_restores_every_table(wh, tmp_path, monkeypatch):
    src = tmp_path / "src"
    steering(src, "L1_c1.0_2026-01-01_00-00-00.json", "v1")
    wh.ingest(src)
    versions = {t: DeltaTable(str(wh.root / t)).version() for t in Store(wh.root).read_snapshot().tables}
    steering(src, "L1_c1.0_2026-01-01_00-00-00.json", "v2")
    real, n = delta.commit_table, [0]

    def failing(*a, **k):
        n[0] += 1
        if n[0] == 3:  # responses and evaluations committed, then sources fails (path_fields is unchanged)
            raise OSError(28, "No space left on device")
        return real(*a, **k)

    monkeypatch.setattr(delta, "commit_table", failing)
    with pytest.raises(StorageError, match="No space left on device.*as it was before this run"):
        wh.ingest(src)
    monkeypatch.undo()
    # every table's latest version holds its snapshot's rows again (restored), for outside readers too
    assert all(DeltaTable(str(wh.root / t)).version() >= v for t, v in versions.items())
    assert assert_outside_readers_agree(wh.root)["responses"] == 3
    assert [r["response"] for r in wh.rows("SELECT response FROM responses ORDER BY 1")] == ["v1:0", "v1:1", "v1:2"]


def test_ctrl_c_during_the_commit_waits_for_the_snapshot(wh, tmp_path, monkeypatch):
    src = tmp_path / "src"
    steering(src, "L1_c1.0_2026-01-01_00-00-00.json", "v1")
    wh.ingest(src)
    steering(src, "L1_c1.0_2026-01-01_00-00-00.json", "v2")
    real, n = delta.commit_table, [0]

    def ctrl_c(*a, **k):
        n[0] += 1
        if n[0] == 2:
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C between two table commits
        return real(*a, **k)

    monkeypatch.setattr(delta, "commit_table", ctrl_c)
    with pytest.raises(KeyboardInterrupt, match="after the run was committed"):
        wh.ingest(src)
    monkeypatch.undo()
    assert n[0] > 2  # the commit went on after the Ctrl-C
    assert [r["response"] for r in wh.rows("SELECT response FROM responses ORDER BY 1")] == ["v2:0", "v2:1", "v2:2"]
    assert_outside_readers_agree(wh.root)


# --- history and time travel ----------------------------------------------------------------------


def test_history_lists_each_snapshot_and_as_of_reads_it(wh, tmp_path):
    src = tmp_path / "src"
    a = steering(src, "L1_c1.0_2026-01-01_00-00-00.json", "v1")
    b = steering(src, "L2_c1.0_2026-01-01_00-00-00.json", "v1")
    wh.ingest(src)
    steering(src, "L1_c1.0_2026-01-01_00-00-00.json", "v2", n=1)
    os.utime(a, ns=(a.stat().st_atime_ns, a.stat().st_mtime_ns + 10**9))
    wh.ingest(src)
    b.unlink()
    wh.ingest(src, prune=True)
    out = subprocess.run([sys.executable, "-m", "warehouse.cli", "history", "--root", str(wh.root), "--format", "json"],
                         capture_output=True, text=True, check=True).stdout
    hist = json.loads(out)
    assert hist == warehouse.history(wh.root)  # the command and the function are one thing
    assert [h["snapshot"] for h in hist] == [1, 2, 3]
    assert [(h["files_ingested"], h["files_replaced"], h["files_pruned"]) for h in hist] == [(2, 0, 0), (1, 1, 0), (0, 0, 1)]
    assert [h["rows_added"].get("responses", 0) for h in hist] == [6, 1, 0]
    assert [h["rows_removed"].get("responses", 0) for h in hist] == [0, 3, 3]
    q = "SELECT count(*) FROM responses"
    assert [warehouse.connect(wh.root, as_of=n).execute(q).fetchone()[0] for n in (1, 2, 3)] == [6, 4, 1]
    assert warehouse.open(wh.root, as_of=1).read("responses").height == 6
    sql = subprocess.run([sys.executable, "-m", "warehouse.cli", "sql", q, "--root", str(wh.root), "--as-of", "2",
                          "--format", "json"], capture_output=True, text=True, check=True).stdout
    assert json.loads(sql) == [{"count_star()": 4}]
    assert warehouse.export(wh.root, None, "jsonl", tmp_path / "old.jsonl", as_of=1, progress=False).written == 6
    assert len((tmp_path / "old.jsonl").read_text().splitlines()) == 6
    with pytest.raises(StorageError, match=r"no snapshot 9 \(snapshots: 1 to 3"):
        warehouse.connect(wh.root, as_of=9)
    table = subprocess.run([sys.executable, "-m", "warehouse.cli", "history", "--root", str(wh.root)],
                           capture_output=True, text=True, check=True).stdout
    assert table.splitlines()[0].split()[:3] == ["snapshot", "time", "operation"] and "(3 rows)" in table
    # outside users read the same history in the Delta log
    meta = [h for h in DeltaTable(str(wh.root / "responses")).history() if h.get("warehouse_snapshot") == "2"]
    assert meta and meta[0]["warehouse_run_id"] == hist[1]["run_id"]


# --- compact --------------------------------------------------------------------------------------


def test_compact_merges_small_files_and_vacuums_what_no_recent_snapshot_needs(wh, tmp_path):
    src = tmp_path / "src"
    for i in range(4):
        steering(src / f"p{i}", f"L{i}_c1.0_2026-01-01_00-00-00.json", "v1")
        wh.ingest(src / f"p{i}")  # one file per table per run
    f = steering(src / "p0", "L0_c1.0_2026-01-01_00-00-00.json", "v2")
    os.utime(f, ns=(f.stat().st_atime_ns, f.stat().st_mtime_ns + 10**9))
    wh.ingest(src / "p0")
    before = assert_outside_readers_agree(wh.root)
    old = warehouse.open(wh.root, as_of=1)
    assert len(DeltaTable(str(wh.root / "responses")).file_uris()) >= 4
    out = subprocess.run([sys.executable, "-m", "warehouse.cli", "compact", "--root", str(wh.root),
                          "--retention-hours", "0"], capture_output=True, text=True, check=True)
    assert "compacted into snapshot 6" in out.stderr
    assert len(DeltaTable(str(wh.root / "responses")).file_uris()) == 1
    assert assert_outside_readers_agree(wh.root) == before  # the rows did not change
    assert warehouse.history(wh.root)[-1]["operation"] == "compact"
    # snapshot 1's files were vacuumed: reading it says what to do, never a raw IO error
    with pytest.raises(StorageError, match=r"snapshot 1 cannot be read any more.*Snapshots 5 to 6 are readable"):
        warehouse.connect(wh.root, as_of=1)
    with pytest.raises(StorageError, match=r"opened on warehouse snapshot 1.*refresh.*Snapshots 5 to 6"):
        old.read("responses")
    assert old.refresh().read("responses").height == 12
    # the next ingest commits on top of the compacted tables
    steering(src / "p1", "L1_c1.0_2026-01-01_00-00-00.json", "v3", n=1)
    g = next((src / "p1").rglob("*.json"))
    os.utime(g, ns=(g.stat().st_atime_ns, g.stat().st_mtime_ns + 10**9))
    wh.ingest(src / "p1")
    assert assert_outside_readers_agree(wh.root)["responses"] == 10


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "warehouse.cli", *args], capture_output=True, text=True)


def test_compact_with_nothing_to_do_commits_nothing_and_history_marks_what_compact_made_unreadable(wh, tmp_path):
    src = tmp_path / "src"
    f = steering(src, "L1_c1.0_2026-01-01_00-00-00.json", "v1")
    wh.ingest(src)  # one file per table: nothing to merge, nothing replaced
    versions = warehouse.history(wh.root)[-1]["versions"]
    out = _cli("compact", "--root", str(wh.root), "--retention-hours", "0")
    assert out.returncode == 0 and out.stderr.startswith("nothing to compact"), out.stderr
    assert [h["snapshot"] for h in warehouse.history(wh.root)] == [1]
    assert {t: DeltaTable(str(wh.root / t)).version() for t in versions} == versions
    summary = warehouse.compact(wh.root, retention_hours=0, progress=False)
    assert not summary.committed and summary.snapshot is None

    steering(src, f.name, "v2")
    os.utime(f, ns=(f.stat().st_atime_ns, f.stat().st_mtime_ns + 10**9))
    wh.ingest(src)  # snapshot 2 replaces snapshot 1's files
    assert "compacted into snapshot 3" in _cli("compact", "--root", str(wh.root), "--retention-hours", "0").stderr
    assert _cli("compact", "--root", str(wh.root), "--retention-hours", "0").stderr.startswith("nothing to compact")
    hist = json.loads(_cli("history", "--root", str(wh.root), "--format", "json").stdout)
    assert [(h["snapshot"], h["readable"]) for h in hist] == [(1, False), (2, True), (3, True)]
    assert hist == warehouse.history(wh.root)
    table = _cli("history", "--root", str(wh.root)).stdout.splitlines()
    assert table[0].split()[-1] == "readable"
    assert [line.split()[-1] for line in table[2:5]] == ["no", "yes", "yes"]
    old = _cli("sql", "SELECT count(*) FROM responses", "--root", str(wh.root), "--as-of", "1")
    assert old.returncode == 1 and old.stdout == "" and len(old.stderr.splitlines()) == 1, old.stderr
    assert "snapshot 1 cannot be read any more" in old.stderr and "Snapshots 2 to 3 are readable" in old.stderr


# --- upgrade from the manifest layout -------------------------------------------------------------

#: the last commit of the manifest layout (format_version 1)
MANIFEST_LAYOUT_COMMIT = "d705fa7"


def test_a_root_of_the_manifest_layout_is_converted_by_the_next_ingest(tmp_path):
    old_code = tmp_path / "old"
    old_code.mkdir()
    archive = subprocess.run(["git", "-C", str(REPO), "archive", MANIFEST_LAYOUT_COMMIT], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(old_code)], input=archive.stdout, check=True)
    (old_code / "warehouse" / "formats").symlink_to("../ingest")  # as the installed package maps it
    old_root, new_root = tmp_path / "old_wh", tmp_path / "new_wh"
    samples = REPO / "samples"
    # the installed entry points name today's formats; the old code knows only those its folder holds
    run_old = textwrap.dedent(f"""
        import importlib.metadata as md, os, sys
        everything = md.entry_points
        def entry_points(**kw):
            eps = everything(**kw)
            if kw.get("group") != "warehouse.formats":
                return eps
            held = os.listdir({str(old_code / "ingest")!r})
            return md.EntryPoints(e for e in eps if e.name in held or e.name + ".py" in held)
        md.entry_points = entry_points
        from warehouse.cli import main
        sys.exit(main(sys.argv[1:]))
    """)
    subprocess.run([sys.executable, "-c", run_old, "ingest", str(samples), "--root", str(old_root), "--quiet"],
                   env={**os.environ, "PYTHONPATH": str(old_code)}, cwd=tmp_path, check=True)
    assert (old_root / "manifest.json").is_file() and (old_root / "data" / "responses").is_dir()
    with pytest.raises(StorageError, match="layout before Delta tables.*converts it"):
        warehouse.connect(old_root)
    proc = subprocess.run([sys.executable, "-m", "warehouse.cli", "ingest", str(samples), "--root", str(old_root)],
                          capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "converting" in proc.stderr and "79 unchanged" in proc.stderr
    assert not (old_root / "manifest.json").exists() and not (old_root / "data").exists()
    assert not (old_root / ".lock").exists()
    Warehouse(new_root).ingest(samples)
    converted, fresh = warehouse.connect(old_root), warehouse.connect(new_root)
    # columns declared since the manifest layout are NULL in the converted rows (the files were not read again)
    pinned = Store(old_root).read_snapshot().tables
    for name in [*warehouse.TABLES, "path_fields"]:
        view = f"raw.{name}" if name in warehouse.TABLES else name
        known = (set(pinned[name].get("columns", ())) or None) if name in warehouse.TABLES else None
        cols = [r[0] for r in fresh.execute(f"DESCRIBE {view}").fetchall()
                # unresolved_reason: a message, worded as the code that read the file wrote it
                if r[0] not in ("ingest_run", "ingested_at", "mtime_ns", "unresolved_reason")
                and (known is None or r[0] in known)]
        q = f"SELECT {', '.join(cols)} FROM {view}"
        got, want = converted.sql(q).to_arrow_table().to_pylist(), fresh.sql(q).to_arrow_table().to_pylist()
        differ = [c for c in cols if canonical([{c: r[c]} for r in got], [c]) != canonical([{c: r[c]} for r in want], [c])]
        assert canonical(got, cols) == canonical(want, cols), f"{name}: columns that differ: {differ}"
    assert warehouse.history(old_root)[0]["operation"] == "upgrade"
    assert_outside_readers_agree(old_root)


# --- readers and the layout -----------------------------------------------------------------------


def test_every_declared_table_is_a_delta_table_and_the_state_is_in_one_hidden_folder(samples_wh):
    root = samples_wh.root
    for name in [*warehouse.TABLES, "path_fields"]:
        assert DeltaTable.is_deltatable(str(root / name)), name
    hidden = [p.name for p in root.iterdir() if p.name.startswith(".")]
    assert hidden == [".warehouse"]
    assert sorted(p.name for p in (root / ".warehouse").iterdir()) == ["lock", "snapshots"]


def test_snapshot_files_lists_each_tables_files_of_a_snapshot(samples_wh):
    files = warehouse.store.readable.snapshot_files(samples_wh.root)
    assert set(files) == {*warehouse.TABLES, "path_fields"}
    assert files["responses"] == DeltaTable(str(samples_wh.root / "responses")).file_uris()
    assert all(os.path.isabs(f) and os.path.exists(f) for fs in files.values() for f in fs)


def test_part_statistics_let_readers_skip_files(samples_wh):
    actions = pa.table(DeltaTable(str(samples_wh.root / "responses")).get_add_actions(flatten=True)).to_pylist()
    for a in actions:
        assert a["num_records"] > 0
        assert a["min.source_path"] <= a["max.source_path"]
    con = duckdb.connect()
    n = con.execute("SELECT count(*) FROM read_parquet(?)", [[str(samples_wh.root / "responses" / a["path"]) for a in actions]]).fetchone()[0]
    assert n == sum(a["num_records"] for a in actions) == samples_wh.one("SELECT count(*) FROM responses")


def test_file_statistics_bound_only_what_readers_compare_exactly(tmp_path):
    """min / max for plain integers and short strings only: a timestamp is an INT64 in Parquet
    but Delta keeps milliseconds (a truncated max would skip a matching file), a float's NaN
    falls outside Parquet's min / max, a nested column has no single value, and a string over
    the limit would need cutting."""

    import pyarrow.parquet as pq

    from warehouse.store.delta import STATS_STRING_MAX, file_stats

    t = pa.table({
        "n": pa.array([3, 1], pa.int64()),
        "s": ["b", "a"],
        "ts": pa.array([dt.datetime(2026, 1, 1, 0, 0, 0, 123456, tzinfo=dt.timezone.utc)] * 2, pa.timestamp("us", tz="UTC")),
        "f": [0.5, float("nan")],
        "nested": [{"x": 1}, {"x": 2}],
        "long": ["x" * (STATS_STRING_MAX + 1), "y"],
    })
    pq.write_table(t, tmp_path / "p.parquet")
    stats = json.loads(file_stats(pq.ParquetFile(tmp_path / "p.parquet").metadata))
    assert stats["numRecords"] == 2
    assert stats["minValues"] == {"n": 1, "s": "a"} and stats["maxValues"] == {"n": 3, "s": "b"}
    assert stats["nullCount"]["ts"] == 0


def test_path_fields_is_rewritten_only_when_the_source_paths_change(tmp_path):
    """path_fields depends on the paths alone: a run that re-reads a changed file keeps its version
    (it was rewritten on every run: ~0.5 s per 20,000 files); a new path gives a new one."""
    src, root = tmp_path / "src", tmp_path / "wh"
    wh = Warehouse(root)
    a = steering(src, "a.json", "v1")
    wh.ingest(src)
    first = Store(root).read_snapshot().tables["path_fields"]["version"]
    steering(src, "a.json", "v2")  # same path, other bytes
    os.utime(a, ns=(1, 1))
    wh.ingest(src)
    assert Store(root).read_snapshot().tables["path_fields"]["version"] == first
    assert wh.one("SELECT count(*) FROM responses WHERE response LIKE 'v2:%'") == 3
    steering(src, "b.json", "v1")
    wh.ingest(src)
    assert Store(root).read_snapshot().tables["path_fields"]["version"] == first + 1
    pipelines = wh.rows("SELECT DISTINCT source_path, pipeline FROM responses ORDER BY source_path")
    assert [(os.path.basename(r["source_path"]), r["pipeline"]) for r in pipelines] == [("a.json", "steering"),
                                                                                        ("b.json", "steering")]


def test_every_file_a_run_commits_is_fsynced_once_its_batches_files_as_they_arrive(tmp_path, monkeypatch):
    """The batches' files are synced by the commit's helper thread while the batches run (``CommitAhead``);
    the commit syncs only what it writes itself (``sources``, ``path_fields``): each file once."""
    import threading
    from collections import Counter

    from warehouse.run import commit as commit_mod
    root = tmp_path / "wh"
    synced = []
    real = commit_mod.fsync

    def recording(path):
        synced.append((os.path.relpath(path, root), threading.current_thread().name))
        real(path)

    monkeypatch.setattr(commit_mod, "fsync", recording)
    src = tmp_path / "src"
    for i in range(3):
        steering(src, f"{i}.json", f"v{i}")
        conversations(src / f"c{i}", f"v{i}")
    warehouse.ingest([str(src)], str(root), jobs=1, progress=False)
    store = Store(str(root))
    live = {os.path.relpath(f, root) for name, pin in store.read_snapshot().tables.items()
            for f in delta.live_files(store.table_uri(name), pin["version"])}
    assert Counter(p for p, _ in synced) == Counter(live)  # every live file, once
    by_thread = {p: t for p, t in synced}
    mine = {p for p in live if p.split("/")[0] in ("sources", "path_fields")}
    assert mine and all(by_thread[p] == "MainThread" for p in mine)
    assert all(by_thread[p].startswith("commit-ahead") for p in live - mine), by_thread


def test_readers_list_every_version_of_every_table_as_deltalake_does(tmp_path):
    """Readers take a local table's files from its log without deltalake (``delta.local_files``): at every
    version of every table, the files deltalake lists, in its order, through runs that add, replace and
    prune files, a checkpoint, a compact (optimize and vacuum) and a root whose path needs quoting."""
    root, src = tmp_path / "a root with spaces" / "wh", tmp_path / "src"
    for i in range(3):
        steering(src / f"p{i}", f"L{i}_c1.0_2026-01-01_00-00-00.json", "v1")
        warehouse.ingest([str(src / f"p{i}")], root, progress=False, jobs=1)
    f = steering(src / "p0", "L0_c1.0_2026-01-01_00-00-00.json", "v2")
    os.utime(f, ns=(f.stat().st_atime_ns, f.stat().st_mtime_ns + 10**9))
    warehouse.ingest([str(src / "p0")], root, progress=False, jobs=1)  # replaces a file's rows
    DeltaTable(str(root / "responses")).create_checkpoint()
    for p in (src / "p2").rglob("*.json"):
        p.unlink()
    warehouse.ingest([str(src / "p2")], root, progress=False, jobs=1, prune=True)  # after the checkpoint
    subprocess.run([sys.executable, "-m", "warehouse.cli", "compact", "--root", str(root), "--retention-hours", "0"],
                   capture_output=True, text=True, check=True)
    conversations(src / "chat", "v1")
    warehouse.ingest([str(src / "chat")], root, progress=False, jobs=1)
    assert list((root / "responses" / "_delta_log").glob("*.checkpoint.parquet"))
    checked = 0
    for table in Store(str(root)).read_snapshot().tables:
        uri = str(root / table)
        for version in range(DeltaTable(uri).version() + 1):
            try:
                expected = delta.live_files(uri, version)
            except Exception:  # noqa: BLE001 - a version compact's vacuum left unreadable
                continue
            assert delta.local_files(uri, version) == expected, (table, version)
            checked += bool(expected)
    assert checked > 20
    # what the log's reader does not take is left to deltalake: a damaged commit, a missing one
    uri = str(root / "responses")
    last = DeltaTable(uri).version()
    commit = Path(uri) / "_delta_log" / f"{last:020d}.json"
    commit.write_bytes(commit.read_bytes()[:-20])
    assert delta.local_files(uri, last) is None
    commit.unlink()
    assert delta.local_files(uri, last) is None


def test_a_connection_to_a_local_root_does_not_import_deltalake(samples_wh):
    """The file lists of a local root's plain Delta logs are read without deltalake (~40 ms to import and
    load every table with it); deltalake still reads what that does not take, and says what is damaged."""
    code = (f"import warehouse\ncon = warehouse.connect({str(samples_wh.root)!r})\n"
            "assert con.execute('SELECT count(*) FROM responses').fetchone()[0] > 0\n"
            "import sys; print(sorted(m for m in ('deltalake',) if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "[]"
