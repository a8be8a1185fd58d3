"""The Python API: polars (lazy and eager), Arrow and SQL over the same views, with doctested examples."""

from __future__ import annotations

import doctest
import importlib
import importlib.resources
import inspect
import subprocess
import sys
import threading

import duckdb
import polars as pl
import pyarrow as pa
import pytest

import warehouse
from warehouse import api
from warehouse.cli import main
from warehouse.errors import QueryError, StorageError, UsageError, WarehouseError
from warehouse.reading import views

from ..conftest import REPO, Warehouse, write_json


@pytest.fixture(scope="module")
def root(samples_wh):
    return samples_wh.root


@pytest.mark.parametrize("module", [api, views], ids=lambda m: m.__name__)
def test_the_documented_examples_run(root, module):
    result = doctest.testmod(module, extraglobs={"SAMPLE_ROOT": str(root)}, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 1 and result.failed == 0


def test_scan_is_lazy_and_agrees_with_sql(root):
    wh = warehouse.open(root)
    lf = wh.scan("responses")
    assert isinstance(lf, pl.LazyFrame)
    got = (lf.filter(pl.col("run_kind") == "steered").group_by("layers").agg(pl.col("trait_score").mean())
             .sort("layers").collect())
    want = wh.sql("SELECT layers, avg(trait_score) FROM responses WHERE run_kind = 'steered' GROUP BY 1 ORDER BY 1").fetchall()
    assert [r[0] for r in got.iter_rows()] == [r[0] for r in want]
    assert [r[1] for r in got.iter_rows()] == pytest.approx([r[1] for r in want])  # float sums in another order


def test_read_and_arrow_filter_and_project(root):
    df = warehouse.read(root, "turns", where="role = 'assistant'", columns=["response_id", "content"])
    assert isinstance(df, pl.DataFrame) and df.columns == ["response_id", "content"] and df.height > 0
    t = warehouse.read_arrow(root, "annotated_spans", where="category = 'voting'")
    assert isinstance(t, pa.Table) and set(t.column("category").to_pylist()) == {"voting"}
    assert warehouse.scan(root, "prompts").collect().height == warehouse.read(root, "prompts").height


def test_names_are_checked_with_the_choices(root):
    wh = warehouse.open(root)
    with pytest.raises(UsageError, match=r"no view 'respones'; choose one of: activations, annotated_spans"):
        wh.read("respones")
    with pytest.raises(UsageError, match=r"responses has no column 'promt'; its columns: response_id, record_id"):
        wh.read("responses", columns=["promt"])
    with pytest.raises(UsageError, match="is not a view name; use Warehouse.sql"):
        wh.scan("responses; DROP VIEW turns")


def test_a_connection_is_a_snapshot_until_refreshed(tmp_path):
    w = Warehouse(tmp_path / "wh")
    write_json(tmp_path / "a" / "responses.json", [{"prompt": "p", "response": "r"}])
    w.ingest(tmp_path / "a")
    wh = warehouse.open(w.root)
    write_json(tmp_path / "b" / "responses.json", [{"prompt": "q", "response": "s"}])
    w.ingest(tmp_path / "b")
    assert wh.read("responses").height == 1
    assert wh.refresh().read("responses").height == 2
    wh.close()


# --- opening: reading never creates a warehouse ---------------------------------------------------


@pytest.mark.parametrize("opener", [warehouse.open, warehouse.connect], ids=["open", "connect"])
def test_a_root_without_a_warehouse_is_a_clear_error(opener, tmp_path):
    missing = tmp_path / "typo"
    with pytest.raises(StorageError, match=r"typo: no such directory, so no warehouse here; create one with "
                                           r"`warehouse ingest PATH --root .*typo`"):
        opener(missing)
    assert not missing.exists()  # nothing was created
    (tmp_path / "a_file").write_text("x")
    with pytest.raises(StorageError, match="a_file: is a file, not a warehouse directory"):
        opener(tmp_path / "a_file")
    (tmp_path / "empty").mkdir()
    with pytest.raises(StorageError, match=r"empty: no warehouse here \(no snapshot in .warehouse/snapshots\); create one with"):
        opener(tmp_path / "empty")


# --- threads ------------------------------------------------------------------------------------


def test_one_warehouse_is_shared_by_threads(root):
    """Every call runs on a cursor of its own: threads never see 'connection is busy'."""
    wh = warehouse.open(root)
    steering = wh.scan("responses").filter(pl.col("pipeline") == "steering").select("response_id")
    want = {
        "read": wh.read("turns", where="role = 'assistant'").height,
        "sql": wh.sql("SELECT count(*) FROM evaluations").fetchall(),
        "params": wh.sql("SELECT count(*) FROM responses WHERE source_format = ?", ["scale"]).fetchall(),
        "scan": steering.collect().height,
        "arrow": wh.read_arrow("annotated_spans").num_rows,
        "views": wh.views,
    }
    calls = {
        "read": lambda: wh.read("turns", where="role = 'assistant'").height,
        "sql": lambda: wh.sql("SELECT count(*) FROM evaluations").fetchall(),
        "params": lambda: wh.sql("SELECT count(*) FROM responses WHERE source_format = ?", ["scale"]).fetchall(),
        "scan": lambda: steering.collect().height,  # one LazyFrame, collected by every thread at once
        "arrow": lambda: wh.read_arrow("annotated_spans").num_rows,
        "views": lambda: wh.views,
    }
    start = threading.Barrier(6)
    got, errors = [], []

    def work(i: int) -> None:
        start.wait()  # all six threads call at the same moment
        for k in range(10):
            name = list(calls)[(i + k) % len(calls)]
            try:
                got.append((name, calls[name]()))
            except Exception as e:  # noqa: BLE001 - every failure is reported below
                errors.append(f"{name}: {e}")

    threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(got) == 60 and all(value == want[name] for name, value in got)


# --- snapshots: refresh and the retention of replaced files ------------------------------------------


def _two_versions(tmp_path):
    w = Warehouse(tmp_path / "wh")
    src = tmp_path / "src" / "responses.json"
    write_json(src, [{"prompt": "p", "response": "old"}])
    w.ingest(src.parent)
    return w, src


def test_objects_made_before_a_refresh_keep_reading_their_snapshot(tmp_path):
    w, src = _two_versions(tmp_path)
    wh = warehouse.open(w.root)
    lf, rel = wh.scan("responses").select("response"), wh.sql("SELECT response FROM responses")
    write_json(src, [{"prompt": "p", "response": "new"}, {"prompt": "q", "response": "new"}])
    w.ingest(src.parent)
    wh.refresh()
    assert lf.collect()["response"].to_list() == ["old"]
    assert rel.fetchall() == [("old",)]
    assert wh.read("responses")["response"].to_list() == ["new", "new"]


def test_a_snapshot_whose_files_were_deleted_says_to_refresh(tmp_path):
    w, src = _two_versions(tmp_path)
    wh = warehouse.open(w.root)
    lf = wh.scan("responses")
    write_json(src, [{"prompt": "p", "response": "new"}])
    w.ingest(src.parent)  # replaces the file wh reads; it is kept until a compact past its retention
    warehouse.compact(w.root, retention_hours=0, progress=False)
    assert wh.snapshot.missing()  # the files of wh's snapshot are gone
    advice = r"`warehouse compact` has since deleted \d+ of its files .* Call wh.refresh\(\)"
    calls = {"read": lambda: wh.read("responses"), "sql": lambda: wh.sql("SELECT * FROM responses").fetchall(),
             "old LazyFrame": lf.collect, "new LazyFrame": lambda: wh.scan("responses").collect(),
             "arrow": lambda: wh.read_arrow("sources")}
    for name, call in calls.items():
        with pytest.raises(StorageError, match=advice):
            call()
            pytest.fail(f"{name} did not raise")
    assert wh.refresh().read("responses")["response"].to_list() == ["new"]


def test_a_closed_warehouse_says_so(root):
    wh = warehouse.open(root)
    wh.close()
    with pytest.raises(UsageError, match=r"Warehouse\('.*'\) is closed; open it again with warehouse.open\(\)"):
        wh.read("responses")
    assert repr(wh).endswith(" closed")


#: a query DuckDB binds but fails while computing its rows (a string that is no integer)
FAILS_ON_ROWS = "CAST(source_path AS INTEGER) = 1"


@pytest.mark.parametrize("call", [
    lambda wh: wh.sql("SELECT nope FROM responses"),
    lambda wh: wh.read("responses", where="nope = 1"),
    lambda wh: wh.read_arrow("responses", where="nope = 1"),
    lambda wh: wh.scan("responses", where="nope = 1"),
    lambda wh: wh.read("responses", where=FAILS_ON_ROWS),
    lambda wh: wh.read_arrow("responses", where=FAILS_ON_ROWS),
    lambda wh: wh.scan("responses", where=FAILS_ON_ROWS).collect(),
    lambda wh: warehouse.read(wh.root, "responses", where="nope = 1"),
    lambda wh: warehouse.read_arrow(wh.root, "responses", where=FAILS_ON_ROWS),
], ids=["sql", "read", "read_arrow", "scan", "read rows", "read_arrow rows", "scan collect", "read()", "read_arrow()"])
def test_a_query_duckdb_rejects_is_a_query_error(root, call):
    """README: errors are WarehouseError subclasses; a bad column or a failed cast was a raw duckdb exception."""
    with warehouse.open(root) as wh, pytest.raises(QueryError) as e:
        call(wh)
    assert isinstance(e.value, WarehouseError) and not isinstance(e.value, duckdb.Error)
    assert "nope" in str(e.value) or "Could not convert string" in str(e.value)


def test_a_one_line_querys_error_points_at_line_1(root, capsys):
    """A failed cast in a one-line query said LINE 3 (the output's own SQL wraps the query), the caret under it."""
    query = "SELECT response_id, CAST(source_path AS INTEGER) FROM responses"
    caret = " " * len("LINE 1: SELECT response_id, ") + "^"
    for fmt in ("table", "csv", "json", "jsonl"):
        with pytest.raises(QueryError) as e:
            warehouse.sql(root, query, output_format=fmt)
        lines = str(e.value).splitlines()
        assert lines[-2] == f"LINE 1: {query}" and lines[-1].startswith(caret) and lines[-1][len(caret) - 1] == "^", (fmt, lines)
    # on the second of three lines, the command line says so: line 2, the caret under CAST
    assert main(["sql", "SELECT 1 AS x,\n  CAST(source_path AS INTEGER)\nFROM responses", "--root", str(root)]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.splitlines()[-2:] == ["LINE 2:   CAST(source_path AS INTEGER)", " " * len("LINE 2:   ") + "^" * 28]
    # on line 8 of 9 (DuckDB's LINE 10: one digit fewer, the caret one column left)
    assert main(["sql", "SELECT\n" + "1 AS x,\n" * 6 + "CAST(source_path AS INTEGER)\nFROM responses", "--root", str(root)]) == 1
    assert capsys.readouterr().err.splitlines()[-2:] == ["LINE 8: CAST(source_path AS INTEGER)", " " * len("LINE 8: ") + "^" * 28]


# --- the API's types --------------------------------------------------------------------------------


def test_sql_returns_a_relation_with_or_without_parameters(root):
    wh = warehouse.open(root)
    for rel in (wh.sql("SELECT count(*) AS n FROM turns"),
                wh.sql("SELECT count(*) AS n FROM turns WHERE role = ?", ["user"]),
                wh.sql("SELECT count(*) AS n FROM turns WHERE role = $role", {"role": "user"})):
        assert isinstance(rel, duckdb.DuckDBPyRelation) and rel.columns == ["n"]
    assert (wh.sql("SELECT count(*) AS n FROM turns WHERE role = ?", ["user"]).pl()["n"][0]
            == wh.read("turns", where="role = 'user'").height)


@pytest.mark.parametrize("name, target", [("ingest", "warehouse.run.runner:ingest"), ("export", "warehouse.exports:export"),
                                          ("tokenize", "warehouse.run.runner:ingest"), ("sql", "warehouse.reading.query:sql"),
                                          ("stats", "warehouse.reading.query:stats")])
def test_the_top_level_functions_take_typed_keywords(name, target):
    """No **options: every parameter is named and annotated, and is a parameter of what it calls, with its default."""
    module, attr = target.split(":")
    called = inspect.signature(getattr(importlib.import_module(module), attr)).parameters
    # named for the user, passed on under another name (or, for max_record_mb, in other units)
    aliases = {"tokenizer": "options", "max_record_mb": "max_record_bytes"}
    for p in inspect.signature(getattr(warehouse, name)).parameters.values():
        assert p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL), p
        assert p.annotation is not p.empty, p
        if p.kind == p.KEYWORD_ONLY:
            inner = called.get(p.name) or called[aliases[p.name]]
            if inner.name == p.name:
                assert p.default == inner.default, (p, inner)


def test_the_package_is_typed():
    assert (importlib.resources.files("warehouse") / "py.typed").is_file()


def test_warehouse_imports_and_reads_without_fcntl(root):
    """fcntl does not exist on Windows: only taking the ingest lock needs it."""
    code = ("import sys; sys.modules['fcntl'] = None\n"  # `import fcntl` now raises ImportError
            "import warehouse\n"
            f"print(warehouse.open({str(root)!r}).sql('SELECT count(*) FROM responses').fetchall())\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(warehouse.open(root).sql("SELECT count(*) FROM responses").fetchall())


@pytest.mark.parametrize("call, old, new", [
    (lambda root, **kw: warehouse.sql(root, "SELECT 1 AS one", **kw), "format", "output_format"),
    (lambda root, **kw: warehouse.stats(root, **kw), "format", "output_format"),
    (lambda root, **kw: warehouse.history(root, **kw), "format", "output_format"),
])
def test_the_old_format_keyword_still_works_with_a_warning_naming_the_new_one(root, capsys, call, old, new):
    """``format=`` meant three things; its old spelling keeps working for a release, saying which name it is now."""
    with pytest.warns(DeprecationWarning, match=rf"\({old}=\.\.\.\) is now \w+\({new}=\.\.\.\)"):
        assert call(root, **{old: "json"}) is None
    printed = capsys.readouterr().out
    assert call(root, **{new: "json"}) is None and capsys.readouterr().out == printed
    with pytest.raises(TypeError, match=f"{old}= and {new}="):
        call(root, **{old: "json", new: "json"})


def test_the_old_names_of_the_export_and_record_formats_still_read_with_a_warning(root, tmp_path):
    from warehouse.formatkit.records import RecordContext

    with pytest.warns(DeprecationWarning, match=r"export\(format=\.\.\.\) is now export\(export_format=\.\.\.\)"):
        summary = warehouse.export(root, None, format="jsonl", out=tmp_path / "all.jsonl", progress=False)
    with pytest.warns(DeprecationWarning, match="ExportSummary.format is now ExportSummary.export_format"):
        assert summary.format == summary.export_format == "jsonl"
    ctx = RecordContext("/d/f.json", "[0]", 0, "afterimage")
    with pytest.warns(DeprecationWarning, match="RecordContext.format is now RecordContext.source_format"):
        assert ctx.format == ctx.source_format == "afterimage"
