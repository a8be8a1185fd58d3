"""The views read a table's files as one relation when the snapshot pins the schema they share, and match
their columns by name when it does not (a file written before a column was declared)."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys

import pyarrow as pa

import warehouse
from warehouse.store import delta
from warehouse.store.storage import Store

from ..conftest import REPO, Warehouse

SAMPLES = REPO / "samples"


def _raw_sql(root, table: str) -> str:
    con = warehouse.connect(root)
    try:
        return con.execute("SELECT sql FROM duckdb_views() WHERE schema_name = 'raw' AND view_name = ?",
                           [table]).fetchone()[0]
    finally:
        con.close()


def _pinned(root, table: str) -> dict:
    return Store(root).read_snapshot().tables[table]


def test_files_of_one_schema_are_read_as_one_relation_and_others_by_name(tmp_path, monkeypatch):
    from warehouse import tables
    from warehouse.formatkit import declared

    w = Warehouse(tmp_path / "wh")
    src = tmp_path / "src"
    src.mkdir()
    first, second = sorted((SAMPLES / "afterimage").glob("*.jsonl"))  # the larger first: the log lists it last
    third = SAMPLES / "scale" / "sft" / "sft_batch_01.jsonl"
    for f in (first, second):  # two runs of one package: the same columns in every file
        (src / f.name).write_bytes(f.read_bytes())
        w.ingest(src)
    pinned = _pinned(w.root, "responses")
    files = delta.live_files(str(w.root / "responses"), pinned["version"])
    assert len(files) == 2 and pinned["file_schema"] == delta.files_schema(files, Store(w.root).filesystems)
    sql = _raw_sql(w.root, "responses")
    assert "union_by_name" not in sql
    # the largest first: DuckDB estimates the table's rows from the first file (raw.largest_first)
    listed = sql[sql.index("read_parquet("):]
    assert listed.index(max(files, key=os.path.getsize)) < listed.index(min(files, key=os.path.getsize))
    want = w.rows("SELECT count(*) AS n FROM responses")[0]["n"]

    # a newer package declares a column: its file has it, the older two do not
    old = declared.TABLES["responses"]
    grown = dataclasses.replace(old, columns=(*old.columns, tables.C("later_note", pa.string(), "declared later")))
    monkeypatch.setitem(declared.TABLES._get(), "responses", grown)
    (src / third.name).write_bytes(third.read_bytes())
    w.ingest(src)
    assert "file_schema" not in _pinned(w.root, "responses")
    assert "union_by_name = true" in _raw_sql(w.root, "responses")
    rows = w.rows("SELECT source_path, later_note FROM raw.responses")
    assert {r["source_path"].rsplit("/", 1)[-1] for r in rows} == {first.name, second.name, third.name}
    assert all(r["later_note"] is None for r in rows) and len(rows) > want

    # a compact that merges them pins the schema of what it wrote
    subprocess.run([sys.executable, "-m", "warehouse.cli", "compact", "--root", str(w.root), "--retention-hours", "0",
                    "--quiet"], check=True)
    pinned = _pinned(w.root, "responses")
    files = delta.live_files(str(w.root / "responses"), pinned["version"])
    assert pinned.get("file_schema") == delta.files_schema(files, Store(w.root).filesystems)
    assert ("union_by_name" in _raw_sql(w.root, "responses")) == (len(files) > 1 and "file_schema" not in pinned)
    assert w.rows("SELECT count(*) AS n FROM raw.responses")[0]["n"] == len(rows)


def test_a_file_replaced_by_one_of_other_columns_is_read_by_name(tmp_path):
    """A file not the size its table's log recorded may have other columns (replaced by hand): its table is read
    by name, as before the pin (its rows as they are, the column it lacks NULL), the others as one relation."""
    import pyarrow.parquet as pq

    w = Warehouse(tmp_path / "wh")
    src = tmp_path / "src"
    src.mkdir()
    for f in sorted((SAMPLES / "afterimage").glob("*.jsonl")):
        (src / f.name).write_bytes(f.read_bytes())
        w.ingest(src)
    files = delta.live_files(str(w.root / "responses"), _pinned(w.root, "responses")["version"])
    want = w.rows("SELECT count(*) AS n, count(persona) AS p FROM responses")[0]
    replaced = max(files, key=os.path.getsize)  # (listed first: DuckDB would bind the view to its columns)
    lacking = pq.read_table(replaced)
    pq.write_table(lacking.drop_columns(["persona"]), replaced)
    assert "union_by_name = true" in _raw_sql(w.root, "responses")
    assert "union_by_name" not in _raw_sql(w.root, "turns")
    got = w.rows("SELECT count(*) AS n, count(persona) AS p FROM responses")[0]
    assert got == {"n": want["n"], "p": want["p"] - lacking.num_rows}


def test_the_columns_hint_passes_over_a_view_that_cannot_be_bound(tmp_path):
    """What a query's unknown column is answered with names the columns of the views it reads; a view that
    cannot be bound itself (a file under it unreadable) is left out, not raised from the hint."""
    import duckdb

    from warehouse.reading.query import missing_column_hint
    from warehouse.reading.statements import create_view

    con = duckdb.connect()
    con.execute("CREATE VIEW good AS SELECT 1 AS a")
    create_view(con, f"CREATE VIEW bad AS SELECT * FROM read_parquet('{tmp_path / 'gone.parquet'}')")
    query = "SELECT x FROM good, bad"
    try:
        con.execute(query)
    except duckdb.Error as e:
        error = e
    assert missing_column_hint(con, query, duckdb.BinderException('Referenced column "x" not found')) == (
        "\n\ncolumns of good: a")
    assert isinstance(error, duckdb.Error)


def test_a_connection_keeps_the_footers_it_read(samples_wh):
    """Each query of a notebook or of the viewer would read every footer of the tables it names again."""
    con = warehouse.connect(samples_wh.root)
    try:
        for c in (con, con.cursor()):
            assert c.execute("SELECT value FROM duckdb_settings() WHERE name = 'parquet_metadata_cache'").fetchone() == ("true",)
    finally:
        con.close()
