"""``path_fields`` materialised when a run commits: one row per source path, so the views read the
path-derived fields instead of running the regular expressions of its statement over every path
(``formatkit.declared_views.path_fields_statement``), evaluated while the batches run when it can be
(``PathFieldsAhead``).
"""

from __future__ import annotations

import os

from warehouse.formatkit.declared_views import path_fields_statement
from warehouse.reading.statements import quote as _quote

#: how path_fields is written. Row groups of their own let every core of a query read it: as one row group,
#: the join every read of ``responses`` makes decoded its paths on one thread.
COPY_OPTIONS = "(FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 16384)"


def materialize_path_fields(sources_file: str, out_path: str):
    """Write path_fields for the catalog file ``sources_file`` to ``out_path`` (Parquet); its Arrow schema."""
    import duckdb
    import pyarrow.parquet as pq

    con = duckdb.connect(":memory:")
    try:
        con.execute("CREATE SCHEMA raw")
        con.execute(f"CREATE VIEW raw.sources AS SELECT source_path FROM read_parquet({_quote(sources_file)})")
        con.execute(path_fields_statement())
        os.makedirs(os.path.dirname(out_path), exist_ok=True)
        con.execute(f"COPY (SELECT * FROM path_fields ORDER BY source_path) TO {_quote(out_path)} {COPY_OPTIONS}")
    finally:
        con.close()
    return pq.read_schema(out_path)


class PathFieldsAhead:
    """``path_fields`` of the source paths a run knows before its batches end (the catalog's and the
    walk's), evaluated in a thread while the batches run (DuckDB releases the GIL): the commit then
    only keeps the rows of the paths it catalogues (``write``) instead of running the regular
    expressions after the batches (~0.3 s of a 20,000-file run's wall time, on its critical path)."""

    def __init__(self, paths: set[str] | None = None):
        import threading

        import duckdb

        # its own connection, made here: the thread is the only one using it until write/close. (Made by the
        # thread instead, to spare the first batch the import, a full test run once died of a segmentation
        # fault inside that connect while the main thread started the pool's processes.)
        self._con = duckdb.connect(":memory:")
        self._error: BaseException | None = None
        self._closing = threading.Event()
        # the statement resolved here: the formats are loaded by this thread, not beside the batches
        self._statement = path_fields_statement()
        self._thread: threading.Thread | None = None
        if paths is not None:
            self.start(paths)

    def start(self, paths: set[str]) -> None:
        """Evaluate path_fields of ``paths`` (once; a walk going on beside the batches knows them at its end)."""
        import threading

        if self._thread is not None or self._closing.is_set():
            return
        self._thread = threading.Thread(target=self._evaluate, args=(sorted(paths), self._statement),
                                        daemon=True, name="path-fields")
        self._thread.start()

    def _evaluate(self, paths: list[str], statement: str) -> None:
        import pyarrow as pa

        try:
            con = self._con
            con.execute("SET threads = 1")  # beside the batches: one core at most
            con.execute("CREATE SCHEMA raw")
            con.register("known_paths", pa.table({"source_path": pa.array(paths, pa.string())}))
            con.execute("CREATE VIEW raw.sources AS SELECT source_path FROM known_paths")
            con.execute(statement)
            if self._closing.is_set():
                raise InterruptedError("closed before the evaluation")
            # kept as Arrow: a DuckDB table would be written with NOT NULL columns, unlike the direct COPY
            self._rows = con.sql("SELECT * FROM path_fields").to_arrow_table()
        except BaseException as e:  # the commit then materialises path_fields itself
            self._error = e

    def write(self, sources_file: str, out_path: str):
        """Write what ``materialize_path_fields(sources_file, out_path)`` would; its Arrow schema, or None
        (nothing written) when a catalogued path was not known ahead or the evaluation failed."""
        import pyarrow.parquet as pq

        if self._thread is None:  # never started: nothing known ahead
            return None
        self._thread.join()
        if self._error is not None:
            return None
        con = self._con
        con.register("ahead", self._rows)
        con.execute(f"CREATE OR REPLACE VIEW wanted AS SELECT source_path FROM read_parquet({_quote(sources_file)})")
        if con.execute("SELECT count(*) FROM wanted ANTI JOIN ahead USING (source_path)").fetchone()[0]:
            return None
        os.makedirs(os.path.dirname(out_path), exist_ok=True)
        # source_path from the catalog file, as the direct COPY has it (declared NOT NULL there)
        con.execute(f"COPY (SELECT wanted.source_path, ahead.* EXCLUDE (source_path) FROM wanted "
                    f"JOIN ahead ON wanted.source_path = ahead.source_path ORDER BY wanted.source_path) "
                    f"TO {_quote(out_path)} {COPY_OPTIONS}")
        return pq.read_schema(out_path)

    def close(self) -> None:
        """Stop the evaluation if it still runs and close its connection. The runner calls it however the
        run ends: a run stopped by Ctrl-C, --strict or an error does not wait for rows nobody will read."""
        self._closing.set()
        while self._thread is not None and self._thread.is_alive():
            self._con.interrupt()  # DuckDB's way to stop a query from another thread; again until it has
            self._thread.join(0.05)  # (an interrupt before the query starts is forgotten when it starts)
        self._con.close()
