"""What a run's own process imports: an unchanged re-ingest is the process and little else.

An unchanged run of 20,000 files takes well under a second, so what the process imports is
a good part of it (bench/README.md, issue 20 part E). These tests look at ``sys.modules`` in
a fresh process, not at the time: what is not imported costs nothing on any machine.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest

import warehouse

from ..conftest import FIXTURES

SOURCES = [str(FIXTURES / "afterimage"), str(FIXTURES / "trait_interp")]


def _modules_after(code: str, names: tuple[str, ...]) -> dict[str, bool]:
    """Run ``code`` in a fresh interpreter; which of ``names`` it left imported."""
    code += f"\nimport json, sys; print(json.dumps({{m: m in sys.modules for m in {names!r}}}))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(importlib.util.find_spec("pandas") is None,
                    reason="pandas is not installed here: pyarrow cannot import it, there is nothing to check")
def test_an_unchanged_run_does_not_import_pandas(tmp_path):
    """pyarrow imports pandas (when installed, ~0.15 s) on a process's first ``pa.array``, on
    ``pq.read_table`` and on a time-zoned timestamp's ``as_py``: the formats' fast paths did one at
    import, the catalog read the others. An unchanged run needs none of them."""
    root = tmp_path / "wh"
    first = warehouse.ingest(SOURCES, root=root, jobs=1, progress=False)
    assert first.files_ingested > 0
    code = ("import sys\nfrom warehouse.cli import main\n"
            f"assert main(['ingest', *{SOURCES!r}, '--root', {str(root)!r}, '--quiet']) == 0")
    assert _modules_after(code, ("pandas",)) == {"pandas": False}


def test_an_unchanged_run_does_not_import_duckdb_nor_the_exporters(tmp_path):
    """Queries, exports and the path_fields of new paths need DuckDB; an unchanged run none of them.
    The formats' exporters (each with the export kit) are imported when an export asks for them.
    Nor pyarrow's compute functions (26 ms): only writing and replacing rows use them."""
    root = tmp_path / "wh"
    warehouse.ingest(SOURCES, root=root, jobs=1, progress=False)
    code = ("from warehouse.cli import main\n"
            f"assert main(['ingest', *{SOURCES!r}, '--root', {str(root)!r}, '--quiet']) == 0")
    heavy = ("duckdb", "warehouse.exports", "warehouse.formats.afterimage.export", "pyarrow.compute")
    assert _modules_after(code, heavy) == dict.fromkeys(heavy, False)
    # and the exporters are there when asked for
    from warehouse.formatkit.registry import Registry

    assert {e.name for e in Registry.installed().exporters()} >= {"afterimage", "dataloop", "scale", "trait_interp"}


@pytest.mark.skipif(importlib.util.find_spec("pandas") is None,
                    reason="pandas is not installed here: pyarrow cannot import it, there is nothing to check")
def test_loading_the_formats_imports_neither_pandas_nor_their_fast_paths():
    """Detection needs every format loaded; their fast paths (and what those import) are loaded where
    a batch runs: a worker (the forkserver preloads them) or an in-process run."""
    code = "from warehouse.formatkit.registry import Registry\nRegistry.installed().ingestors()"
    fast = ("warehouse.formats.afterimage.fast", "warehouse.formats.trait_interp.fast")
    assert _modules_after(code, ("pandas", *fast)) == dict.fromkeys(("pandas", *fast), False)


def test_the_catalog_reads_the_rows_pyarrow_would(tmp_path):
    """``Catalog.load`` converts a column at a time (and ``ingested_at`` from its integers): the same
    rows, the same instants, as pyarrow's own ``to_pylist``."""
    import pyarrow.parquet as pq

    from warehouse.run.catalog import Catalog
    from warehouse.store import delta
    from warehouse.store.storage import Store

    root = tmp_path / "wh"
    warehouse.ingest(SOURCES, root=root, jobs=1, progress=False)
    store = Store(str(root))
    record = store.read_snapshot()
    files = delta.live_files(store.table_uri("sources"), record.version("sources"))
    expected = [row for f in files for row in pq.read_table(f).to_pylist()]
    rows = Catalog.load(store, record).rows
    assert len(rows) == len(expected) > 10
    assert rows == {row["source_path"]: row for row in expected}


def _bound_views(con) -> set[str]:
    return {f"{s}.{v}" for s, v in con.execute(
        "SELECT schema_name, view_name FROM duckdb_views() WHERE NOT internal AND is_bound").fetchall()}


def test_a_connection_binds_a_view_only_when_a_query_reads_it(samples_wh):
    """Binding a view works out its columns and reads the footers of the files under it: every view of the
    warehouse bound when a connection opened was most of a small query's time from a cold process. The
    footers are still read when it opens (a damaged file is found then: tests/store/test_damage.py), in one query."""
    from warehouse.reading import statements
    con = warehouse.connect(samples_wh.root)
    try:
        assert _bound_views(con) <= {"main.path_fields"}  # (over its materialised file: bound to find it damaged)
        assert con.execute("SELECT count(*) FROM turns").fetchone()[0] > 0
        assert {"main.turns", "raw.turns"} <= _bound_views(con)
        assert "main.annotated_spans" not in _bound_views(con)
    finally:
        con.close()
    assert statements._can_defer is True


def test_views_bound_when_made_return_the_same_rows(samples_wh, monkeypatch):
    """A DuckDB without ``WITH (DEFER_BINDING)`` binds each view as it is made: the same views, the same rows."""
    from warehouse.reading import statements
    def every_view(con) -> dict[str, list]:
        names = [r[0] for r in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal "
                                           "AND schema_name = 'main' ORDER BY 1").fetchall()]
        return {n: con.execute(f"SELECT * FROM {n} ORDER BY ALL").fetchall() for n in names}

    deferred = warehouse.connect(samples_wh.root)
    monkeypatch.setattr(statements, "_can_defer", False)
    bound = warehouse.connect(samples_wh.root)
    try:
        assert _bound_views(bound) >= {"main.responses", "raw.responses", "main.annotated_spans"}
        assert every_view(deferred) == every_view(bound)
    finally:
        deferred.close()
        bound.close()
